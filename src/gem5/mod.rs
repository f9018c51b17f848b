//! The gem5 face: the SLICC protocol generated from `protocols/` for gem5's Ruby, and
//! [`host::Gem5Host`], the system gem5 drives through the C ABI (`ffi`): the embedded
//! simulator's cores, OS and MOPEDs on a [`platform::G5Platform`] whose caches are gem5's.
//!
//! The extras directory gem5 builds with lives in `gem5-configs/moped_ext`; its protocol
//! folder holds the hand-written SLICC of each machine and the files generated here from
//! the same tables the embedded simulator runs.

pub mod host;
pub mod platform;
pub mod ruby_net;
pub mod slicc;

use std::path::{Path, PathBuf};

use crate::error::MopedError;

/// The hand-written SLICC of each machine, what its stall cells run, and which action
/// dequeues each event's message.
/// (hand-written file stem, stall action, (event, pop action) pairs)
type HostSpec = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
);

const HOSTS: [HostSpec; 2] = [
    (
        "MOPED_CMP_directory-L2cache",
        "zz_recycleMandatoryQueue",
        &[
            ("Load", "k_popMandatoryQueue"),
            ("Store", "k_popMandatoryQueue"),
            ("M_GETS", "k_popMandatoryQueue"),
            ("M_GETX", "k_popMandatoryQueue"),
            ("M_FILL", "k_popMandatoryQueue"),
            ("Fwd_GETS", "l_popForwardQueue"),
            ("Fwd_GETX", "l_popForwardQueue"),
            ("Own_GETX", "l_popForwardQueue"),
            ("Fwd_GET_COPY", "l_popForwardQueue"),
            ("Inv", "l_popForwardQueue"),
            ("Writeback_Ack", "l_popForwardQueue"),
            ("Writeback_Nack", "l_popForwardQueue"),
            ("Data", "n_popResponseQueue"),
            ("Exclusive_Data", "n_popResponseQueue"),
            ("Ack", "n_popResponseQueue"),
            ("Fill_Grant", "n_popResponseQueue"),
            ("All_Acks", "pt_popTriggerQueue"),
        ],
    ),
    (
        "MOPED_CMP_directory-dir",
        "zz_recycleRequestQueue",
        &[
            ("GETS", "j_popRequestQueue"),
            ("GETX", "j_popRequestQueue"),
            ("PUTX", "j_popRequestQueue"),
            ("PUTO", "j_popRequestQueue"),
            ("PUT_NotOwner", "j_popRequestQueue"),
            ("GET_COPY", "j_popRequestQueue"),
            ("GET_FILL", "j_popRequestQueue"),
            ("Unblock", "k_popResponseQueue"),
            ("Exclusive_Unblock", "k_popResponseQueue"),
            ("Dirty_Writeback", "k_popResponseQueue"),
            ("Clean_Writeback", "k_popResponseQueue"),
        ],
    ),
];

/// What [`write_slicc`] did to one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeneratedFile {
    pub path: PathBuf,
    /// The file on disk differed from the generated text (or was missing).
    pub changed: bool,
}

/// Generates the SLICC tables into `dir` (the extras' protocol folder, which holds the
/// hand-written machine files). With `check`, writes nothing and reports which files are
/// out of date.
pub fn write_slicc(dir: &Path, check: bool) -> Result<Vec<GeneratedFile>, MopedError> {
    let read = |name: &str| {
        let p = dir.join(format!("{name}.sm"));
        std::fs::read_to_string(&p).map_err(|e| {
            MopedError::Io(format!(
                "{}: {e} (the hand-written SLICC of the machine)",
                p.display()
            ))
        })
    };
    let (l2_text, dir_text) = (read(HOSTS[0].0)?, read(HOSTS[1].0)?);
    let l2_file = format!("{}.sm", HOSTS[0].0);
    let dir_file = format!("{}.sm", HOSTS[1].0);
    let (l2, dirm) = slicc::generate(
        slicc::Host {
            file: &l2_file,
            text: &l2_text,
            stall_action: HOSTS[0].1,
            pops: HOSTS[0].2,
        },
        slicc::Host {
            file: &dir_file,
            text: &dir_text,
            stall_action: HOSTS[1].1,
            pops: HOSTS[1].2,
        },
    )?;
    let outputs = [
        (format!("{}-decls.sm", HOSTS[0].0), l2.decls),
        (format!("{}-transitions.sm", HOSTS[0].0), l2.transitions),
        (format!("{}-decls.sm", HOSTS[1].0), dirm.decls),
        (format!("{}-transitions.sm", HOSTS[1].0), dirm.transitions),
    ];
    let mut out = Vec::new();
    for (name, text) in outputs {
        let path = dir.join(name);
        let changed = std::fs::read_to_string(&path).map_or(true, |old| old != text);
        if changed && !check {
            std::fs::write(&path, &text)
                .map_err(|e| MopedError::Io(format!("{}: {e}", path.display())))?;
        }
        out.push(GeneratedFile { path, changed });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_slicc_tables_are_up_to_date() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("gem5-configs/moped_ext/protocol");
        let stale: Vec<_> = write_slicc(&dir, true)
            .unwrap()
            .into_iter()
            .filter(|f| f.changed)
            .map(|f| f.path.display().to_string())
            .collect();
        assert!(
            stale.is_empty(),
            "regenerate with `moped gem5 slicc`: {stale:?} differ from the tables in protocols/"
        );
    }
}
