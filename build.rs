//! Fingerprints the simulator's sources (`src/`, `protocols/`) for the results store's
//! run keys (`api::store`): a run computed by different code is never taken for this
//! code's, even where the crate's version is the same.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let mut all = Vec::new();
    for dir in ["src", "protocols"] {
        println!("cargo:rerun-if-changed={dir}");
        files(Path::new(dir), &mut all);
    }
    // Sorted, so the hash does not depend on the order the file system lists them in.
    all.sort();
    let mut hash = Sha256::new();
    for path in &all {
        hash.update(path.to_string_lossy().as_bytes());
        hash.update([0]);
        hash.update(std::fs::read(path).unwrap_or_default());
        hash.update([0]);
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=MOPED_SOURCE_SHA256={hex}");
}
