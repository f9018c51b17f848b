//! The protocol tables, loaded from the text files of `protocols/` (compiled into the
//! binary so an installed `moped` needs no source tree) and bound to the Rust actions.

use std::sync::Arc;

use crate::protocol::{self, Machine, ProtocolError};

use super::{cache, dir};

/// Baseline L2 controller table, as shipped.
pub const BASELINE_L2: &str = include_str!("../../protocols/baseline/L2Cache.sm");
/// Baseline directory table, as shipped.
pub const BASELINE_DIR: &str = include_str!("../../protocols/baseline/Directory.sm");

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
        let l2m = protocol::parse_machine(l2.0, l2.1, &cache::action_names())?;
        let dirm = protocol::parse_machine(dir.0, dir.1, &dir::action_names())?;
        cache::CacheIds::resolve(&l2m)?;
        dir::DirIds::resolve(&dirm)?;
        Ok(Protocol {
            name: name.to_string(),
            l2: Arc::new(l2m),
            dir: Arc::new(dirm),
        })
    }

    /// A protocol by design name. Only `baseline` exists until the MOPED overlays land.
    pub fn by_name(name: &str) -> Result<Protocol, ProtocolError> {
        match name {
            "baseline" => Self::from_sources(
                name,
                (BASELINE_L2, "protocols/baseline/L2Cache.sm"),
                (BASELINE_DIR, "protocols/baseline/Directory.sm"),
            ),
            other => Err(ProtocolError {
                file: "<protocol name>".into(),
                line: 1,
                col: 1,
                msg: format!("unknown protocol `{other}`, expected one of: baseline"),
            }),
        }
    }

    pub fn baseline() -> Protocol {
        Self::by_name("baseline").expect("the shipped baseline protocol loads")
    }

    /// Names of the shipped protocols.
    pub fn names() -> &'static [&'static str] {
        &["baseline"]
    }
}

/// Checks one machine file against the action registry its `machine(...)` header names.
pub fn lint(src: &str, file: &str) -> Result<Machine, ProtocolError> {
    let machine_name = src.find("machine(").map(|i| {
        src[i + 8..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    });
    let actions = match machine_name.as_deref() {
        Some("Directory") => dir::action_names(),
        _ => cache::action_names(),
    };
    let m = protocol::parse_machine(src, file, &actions)?;
    match m.name() {
        "L2Cache" => cache::CacheIds::resolve(&m).map(|_| ())?,
        "Directory" => dir::DirIds::resolve(&m).map(|_| ())?,
        other => {
            return Err(ProtocolError {
                file: file.into(),
                line: 1,
                col: 1,
                msg: format!("unknown machine `{other}`, expected L2Cache or Directory"),
            })
        }
    }
    Ok(m)
}
