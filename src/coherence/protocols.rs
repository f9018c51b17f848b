//! The protocol tables, loaded from the text files of `protocols/` (compiled into the
//! binary so an installed `moped` needs no source tree) and bound to the Rust actions.

use std::sync::Arc;

use crate::design::{Design, UnknownDesign};
use crate::protocol::{self, Machine, ProtocolError};

use super::{cache, dir};

/// A shipped protocol file: its text (compiled in) and its path in the source tree.
type Shipped = (&'static str, &'static str);

macro_rules! shipped {
    ($path:literal) => {
        (include_str!(concat!("../../", $path)), $path)
    };
}

/// Baseline L2 controller table.
pub const BASELINE_L2: Shipped = shipped!("protocols/baseline/L2Cache.sm");
/// Baseline directory table.
pub const BASELINE_DIR: Shipped = shipped!("protocols/baseline/Directory.sm");
const BASEMOPED_L2: Shipped = shipped!("protocols/basemoped/L2Cache.sm");
const OPTCOPY_L2: Shipped = shipped!("protocols/optcopy/L2Cache.sm");
const OPTCOPY_DIR: Shipped = shipped!("protocols/optcopy/Directory.sm");
const OPTCACHE_L2: Shipped = shipped!("protocols/optcache/L2Cache.sm");
const OPTCACHE_DIR: Shipped = shipped!("protocols/optcache/Directory.sm");

/// The overlays `design` applies, in order, to the baseline L2 and directory machines.
fn overlays(design: Design) -> (&'static [Shipped], &'static [Shipped]) {
    match design {
        Design::Baseline => (&[], &[]),
        Design::BaseMoped => (&[BASEMOPED_L2], &[]),
        Design::OptCopy => (&[BASEMOPED_L2, OPTCOPY_L2], &[OPTCOPY_DIR]),
        Design::OptCache => (
            &[BASEMOPED_L2, OPTCOPY_L2, OPTCACHE_L2],
            &[OPTCOPY_DIR, OPTCACHE_DIR],
        ),
    }
}

/// The two machines of one protocol, shared by every controller of a system.
#[derive(Clone, Debug)]
pub struct Protocol {
    pub name: String,
    pub l2: Arc<Machine>,
    pub dir: Arc<Machine>,
}

impl Protocol {
    /// Loads a protocol from the texts of its two machine files.
    pub fn from_sources(
        name: &str,
        l2: (&str, &str),
        dir: (&str, &str),
    ) -> Result<Protocol, ProtocolError> {
        Self::layered(name, l2, &[], dir, &[])
    }

    /// Loads a protocol from its two machine files and the overlays applied to each, in
    /// order; every pair is `(text, file name)`.
    pub fn layered(
        name: &str,
        l2: (&str, &str),
        l2_overlays: &[(&str, &str)],
        dir: (&str, &str),
        dir_overlays: &[(&str, &str)],
    ) -> Result<Protocol, ProtocolError> {
        let l2_actions = cache::action_names();
        let dir_actions = dir::action_names();
        let mut l2m = protocol::parse_machine(l2.0, l2.1, &l2_actions)?;
        for (src, file) in l2_overlays {
            l2m = protocol::apply_overlay(&l2m, src, file, &l2_actions)?;
        }
        let mut dirm = protocol::parse_machine(dir.0, dir.1, &dir_actions)?;
        for (src, file) in dir_overlays {
            dirm = protocol::apply_overlay(&dirm, src, file, &dir_actions)?;
        }
        cache::CacheIds::resolve(&l2m)?;
        dir::DirIds::resolve(&dirm)?;
        Ok(Protocol {
            name: name.to_string(),
            l2: Arc::new(l2m),
            dir: Arc::new(dirm),
        })
    }

    /// The shipped protocol of `design`.
    pub fn of(design: Design) -> Protocol {
        let (l2o, diro) = overlays(design);
        Self::layered(design.name(), BASELINE_L2, l2o, BASELINE_DIR, diro)
            .expect("the shipped protocol files load (tests load every design)")
    }

    /// A shipped protocol by design name (see [`Design`]).
    pub fn by_name(name: &str) -> Result<Protocol, ProtocolError> {
        let design: Design = name.parse().map_err(|e: UnknownDesign| ProtocolError {
            file: "<protocol name>".into(),
            line: 1,
            col: 1,
            msg: e.to_string(),
        })?;
        Ok(Self::of(design))
    }

    pub fn baseline() -> Protocol {
        Self::of(Design::Baseline)
    }

    /// True if the protocol's L2 takes MOPED requests.
    pub fn has_moped(&self) -> bool {
        self.l2.event_id("M_GETS").is_some()
    }
}

/// The header keyword (`machine` or `overlay`) and machine name a file starts with, found
/// by a plain text scan; the parser reports anything malformed.
fn header_of(src: &str) -> (bool, Option<String>) {
    let first = |kw: &str| src.find(kw);
    let (overlay, at) = match (first("machine("), first("overlay(")) {
        (Some(m), Some(o)) if o < m => (true, Some(o + 8)),
        (Some(m), _) => (false, Some(m + 8)),
        (None, Some(o)) => (true, Some(o + 8)),
        (None, None) => (false, None),
    };
    let name = at.map(|i| {
        src[i..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    });
    (overlay, name)
}

fn actions_for(machine: Option<&str>) -> Vec<&'static str> {
    match machine {
        Some("Directory") => dir::action_names(),
        _ => cache::action_names(),
    }
}

fn resolve(m: &Machine, file: &str) -> Result<(), ProtocolError> {
    match m.name() {
        "L2Cache" => cache::CacheIds::resolve(m).map(|_| ()),
        "Directory" => dir::DirIds::resolve(m).map(|_| ()),
        other => Err(ProtocolError {
            file: file.into(),
            line: 1,
            col: 1,
            msg: format!("unknown machine `{other}`, expected L2Cache or Directory"),
        }),
    }
}

/// The shipped files `design`'s `machine` is built from, the baseline machine first, as
/// `(text, path)` with paths under `protocols/`.
pub fn design_files(design: Design, machine: &str) -> Option<Vec<(&'static str, &'static str)>> {
    let (l2o, diro) = overlays(design);
    let (base, layers) = match machine {
        "L2Cache" => (BASELINE_L2, l2o),
        "Directory" => (BASELINE_DIR, diro),
        _ => return None,
    };
    Some(
        std::iter::once(base)
            .chain(layers.iter().copied())
            .collect(),
    )
}

/// Builds a machine from a machine file and overlays, `(text, file)` each.
fn build(layers: &[(&str, &str)], actions: &[&str]) -> Result<Machine, ProtocolError> {
    let (first, rest) = layers.split_first().expect("at least the machine file");
    let mut m = protocol::parse_machine(first.0, first.1, actions)?;
    for (src, file) in rest {
        m = protocol::apply_overlay(&m, src, file, actions)?;
    }
    Ok(m)
}

/// One file for [`lint_chain`]: its text, its name, and for an overlay the layers to apply
/// it to (a machine file, then overlays), if the caller knows them.
pub type LintInput<'a> = (&'a str, &'a str, Option<Vec<(&'a str, &'a str)>>);

/// Checks machine and overlay files, in order. An overlay is applied to the base layers
/// given with it; without them, to the last file before it that built the same machine;
/// failing that, to the shipped baseline machine. Each result is the merged machine.
pub fn lint_chain(files: &[LintInput]) -> Vec<Result<Machine, ProtocolError>> {
    let mut built: Vec<Machine> = Vec::new();
    let mut results = Vec::new();
    for (src, file, base_layers) in files {
        let (overlay, name) = header_of(src);
        let actions = actions_for(name.as_deref());
        let r = if overlay {
            let name = name.unwrap_or_default();
            let base = match base_layers {
                Some(layers) if !layers.is_empty() => build(layers, &actions).map(Some),
                _ => Ok(built
                    .iter()
                    .rev()
                    .find(|m| m.name() == name)
                    .cloned()
                    .or_else(|| {
                        design_files(Design::Baseline, &name).and_then(|l| build(&l, &actions).ok())
                    })),
            };
            match base {
                Ok(Some(base)) => protocol::apply_overlay(&base, src, file, &actions),
                // No machine of that name: the parser's own error says so.
                Ok(None) => protocol::parse_machine(src, file, &actions),
                Err(e) => Err(e),
            }
        } else {
            protocol::parse_machine(src, file, &actions)
        };
        let r = r.and_then(|m| resolve(&m, file).map(|_| m));
        if let Ok(m) = &r {
            built.push(m.clone());
        }
        results.push(r);
    }
    results
}

/// Checks one machine file, or one overlay on the shipped baseline.
pub fn lint(src: &str, file: &str) -> Result<Machine, ProtocolError> {
    lint_chain(&[(src, file, None)]).remove(0)
}
