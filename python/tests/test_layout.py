"""The house's layout: no import cycle between the crate's Rust modules or between the
package's Python modules (``scripts/check_imports.py``), checked on the repository and
shown to catch a cycle in a tree made for the purpose."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def checker():
    spec = importlib.util.spec_from_file_location(
        "check_imports", REPO / "scripts" / "check_imports.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_repository_has_no_import_cycles() -> None:
    c = checker()
    assert c.rust_cycles(REPO / "src") == []
    assert c.find_cycles(c.python_edges(REPO / "python" / "moped")) == []


def test_cycles_are_found(tmp_path: Path) -> None:
    c = checker()
    src = tmp_path / "src"
    (src / "mpi").mkdir(parents=True)
    (src / "lib.rs").write_text("pub mod mpi;\npub mod os;\n")
    (src / "mpi" / "mod.rs").write_text("mod layout;\nmod runtime;\n")
    # A sibling cycle through `super::` and one between top modules through `crate::`,
    # with decoys in a comment and a string.
    (src / "mpi" / "layout.rs").write_text("use super::runtime::N; // crate::os\n")
    (src / "mpi" / "runtime.rs").write_text(
        "pub const N: u64 = 1;\n"
        "fn f() -> u64 { super::layout::g() }\n"
        'const S: &str = "crate::os";\n'
    )
    (src / "os.rs").write_text("use crate::mpi::runtime::N;\n")
    assert c.rust_cycles(src) == [["mpi::layout", "mpi::runtime", "mpi::layout"]]
    (src / "os.rs").write_text("pub fn h() { crate::mpi::f() }\n")
    (src / "mpi" / "mod.rs").write_text("mod layout;\nmod runtime;\nuse crate::os::h;\n")
    assert ["mpi", "os", "mpi"] in c.rust_cycles(src)
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import x\n")
    (pkg / "a.py").write_text("def x():\n    from pkg import b\n")
    (pkg / "b.py").write_text("from pkg import helper\n")
    assert c.find_cycles(c.python_edges(pkg)) == [["pkg", "pkg.a", "pkg.b", "pkg"]]
