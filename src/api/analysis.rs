//! Figure 10's analysis of run records: reductions against the baseline, per-design
//! summaries, the paper's claims with their measured causes, the report and the tables.

use std::collections::HashMap;
use std::path::Path;

use crate::analysis::{self, AnalysisError, Claim, Reduction, RunRecord, Summary};

/// The reductions of `records` against the baseline.
pub fn reductions(records: &[RunRecord]) -> Result<Vec<Reduction>, AnalysisError> {
    analysis::reductions(records)
}

/// Per (group, design, metric): the geometric mean of the ratios and the reductions' range.
pub fn summaries(records: &[RunRecord]) -> Result<Vec<Summary>, AnalysisError> {
    Ok(analysis::summaries(&analysis::reductions(records)?))
}

/// The paper's claims checked on `records`, each with the measured causes of a failure.
pub fn claims(records: &[RunRecord]) -> Result<Vec<Claim>, AnalysisError> {
    let reductions = analysis::reductions(records)?;
    let mut claims = analysis::check_claims(&reductions);
    analysis::explain(&mut claims, records);
    Ok(claims)
}

/// The Markdown report of `records` with `notes`; `explanations` (claim id -> text) are
/// added to the claims' own.
pub fn report(
    records: &[RunRecord],
    notes: &[String],
    explanations: &HashMap<String, String>,
) -> Result<String, AnalysisError> {
    let reductions = analysis::reductions(records)?;
    let mut claims = claims(records)?;
    for c in &mut claims {
        if let Some(text) = explanations.get(&c.id) {
            c.explanation = format!("{} {}", c.explanation, text.trim());
        }
    }
    Ok(analysis::report_markdown(
        records,
        &reductions,
        &claims,
        notes,
    ))
}

/// Writes reductions.csv and reductions.json of `records` into `dir`.
pub fn write_tables(dir: &Path, records: &[RunRecord]) -> Result<(), AnalysisError> {
    analysis::write_tables(dir, &analysis::reductions(records)?)
}

pub use crate::analysis::{records_from_json, PUBLISHED};
