//! The results store's bindings, for experiments whose runs Python makes (`moped.sweep`
//! into a folder): the claim holding the store, each run taken from the earlier results
//! or named for its run, and the table written when the runs are done.

use pyo3::prelude::*;

use super::*;

/// Claims `out` for the experiment `experiment` (`name(args)` in run.json) holding its
/// results store: a folder holding this experiment's store is resumed (its runs with
/// unchanged keys reused) unless `fresh`, and replaced without `force`.
#[pyfunction]
#[pyo3(signature = (out, experiment, args, force=false, fresh=false))]
pub(super) fn store_claim(
    out: &str,
    experiment: &str,
    args: Vec<(String, String)>,
    force: bool,
    fresh: bool,
) -> PyResult<OutputClaim> {
    guard(|| {
        let (force, reuse) = api::store::claim_terms(Path::new(out), experiment, force, fresh);
        let call: Vec<(&str, String)> = args.iter().map(|(k, v)| (k.as_str(), v.clone())).collect();
        let mut dir = claim(out, force, experiment, &call)?;
        dir.hold_store(experiment, reuse).map_err(to_py)?;
        Ok(OutputClaim { out: Some(dir) })
    })
}

/// The run of `spec` under `design` with `seed` on the configuration `config_toml`, its
/// iterations scaled by `iteration_scale`, in the claim's store: `(name, record)`, its
/// folder's name under `runs/` and, when the earlier results held it, its record's JSON
/// (the run copied into the claim, marked reused), else None.
#[pyfunction]
#[pyo3(signature = (claim, spec, design, config_toml, seed, iteration_scale=None))]
pub(super) fn store_take(
    claim: PyRef<'_, OutputClaim>,
    spec: &str,
    design: &str,
    config_toml: &str,
    seed: u64,
    iteration_scale: Option<f64>,
) -> PyResult<(String, Option<String>)> {
    guard(|| {
        let out = claim.out.as_ref().ok_or_else(OutputClaim::finished)?;
        let cfg = parse_config(config_toml, "<config>")?;
        let parts = (Path::new(spec), self::design(design)?, seed);
        api::store::take_earlier(out.earlier(), out.path(), parts, &cfg, iteration_scale)
            .map_err(to_py)
    })
}

/// Writes the key and `record_json` of a program file's run (made by `run` into the
/// claim's `runs/<name>`), so the store finds it and its table reads it.
#[pyfunction]
pub(super) fn store_keep(
    claim: PyRef<'_, OutputClaim>,
    name: &str,
    spec: &str,
    design: &str,
    config_toml: &str,
    seed: u64,
    record_json: &str,
) -> PyResult<()> {
    guard(|| {
        let out = claim.out.as_ref().ok_or_else(OutputClaim::finished)?;
        let cfg = parse_config(config_toml, "<config>")?;
        let parts = (Path::new(spec), self::design(design)?, seed);
        let dir = out.path().join("runs").join(name);
        api::store::keep(&dir, parts, &cfg, record_json).map_err(to_py)
    })
}

/// Ends the claim once its runs are done: writes `runs.csv` from the run folders, with
/// run.json naming the `designs` and `seeds` and `workload` (what ran), and moves the
/// folder into place. Returns (runs, reused). config.toml is the defaults the runs'
/// own configurations (in their folders and the table's columns) were made from.
#[pyfunction]
pub(super) fn store_finish(
    mut claim: PyRefMut<'_, OutputClaim>,
    workload: &str,
    designs: &str,
    seeds: Vec<u64>,
) -> PyResult<(usize, usize)> {
    guard(|| {
        let dir = claim.take()?;
        let counted = api::runs_table::write_scanned(dir.path());
        let info = api::output::RunInfo {
            config: crate::config::SystemConfig::default(),
            seed: seeds.into(),
            workload: workload.to_string(),
            design: designs.to_string(),
        };
        dir.finish(counted, |_, _| Ok(info)).map_err(to_py)
    })
}
