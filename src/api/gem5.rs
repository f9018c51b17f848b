//! The gem5 doors: the host gem5 drives through the C ABI, the generated SLICC, and the
//! comparison of a gem5 run with an embedded one.

use std::path::Path;

use crate::analysis::compare::Comparison;
use crate::error::MopedError;

pub use crate::gem5::host::{Gem5Host, HostOptions, Mark, RunState};
pub use crate::gem5::platform::{HitProbe, Op, Port, Request};
pub use crate::gem5::ruby_net::{RubyMsg, RubyNet};
pub use crate::gem5::{write_slicc, GeneratedFile};

/// A gem5 run (`gem5_dir`) beside an embedded run, metric by metric, against a tolerance
/// in percent; `dump` picks gem5's stats dump (negative: from the end).
pub fn compare(
    gem5_dir: &Path,
    embedded_dir: &Path,
    dump: i64,
    tolerance_pct: f64,
) -> Result<Comparison, MopedError> {
    check_tolerance(tolerance_pct)?;
    crate::analysis::compare::compare(gem5_dir, embedded_dir, dump, tolerance_pct)
        .map_err(|e| MopedError::Io(e.to_string()))
}

/// A tolerance that is not a percentage of at least 0.
pub fn check_tolerance(tolerance_pct: f64) -> Result<(), MopedError> {
    if tolerance_pct.is_finite() && tolerance_pct >= 0.0 {
        Ok(())
    } else {
        Err(MopedError::Io(format!(
            "--tolerance {tolerance_pct}: expected a percentage of at least 0"
        )))
    }
}

pub use crate::stats::gem5::{Dump, StatsFile};
