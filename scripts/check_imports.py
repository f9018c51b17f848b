#!/usr/bin/env python3
"""Finds import cycles between the crate's Rust modules and between the Python package's
modules; exits 1 and prints each cycle found.

    python3 scripts/check_imports.py [REPO]

Rust: every file under src/ is a module (``src/mpi/shm.rs`` is ``mpi::shm``, a folder's
``mod.rs`` the folder). A reference ``crate::a::b``, ``super::x`` or ``self::x`` anywhere
in a file (a ``use`` or a path in code; comments and strings aside) is an edge to the
deepest module it names. An edge is read at the level where the two modules part: from
``mpi::shm`` to ``mpi::layout`` it is ``shm -> layout`` among the files of ``mpi``; from
``workload::goal`` to ``moped::ports`` it is ``workload -> moped`` among the crate's top
modules. A module and the modules inside it count as one (a folder's ``mod.rs`` declares
and re-exports its files, and they use what it holds). Every group of siblings must form
a DAG.

Python: each file of ``python/moped`` is a module; ``import moped.x``, ``from moped.x
import y`` and ``from moped import x`` (``moped.x`` when it is a module, else the package
``moped`` itself) are edges, wherever they stand (inside functions and ``TYPE_CHECKING``
blocks too). The graph must be a DAG.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable
from pathlib import Path

Module = tuple[str, ...]

_RUST_PATH = re.compile(r"\b(crate|super|self)((?:\s*::\s*(?:\w+|\{))+)")


def rust_modules(src: Path) -> dict[Module, Path]:
    """Every module of the crate rooted at ``src`` and its file."""
    mods: dict[Module, Path] = {}
    for f in sorted(src.rglob("*.rs")):
        parts = f.relative_to(src).with_suffix("").parts
        if parts in (("lib",), ("main",)):
            mods[()] = f if parts == ("lib",) else mods.get((), f)
            continue
        if parts[-1] == "mod":
            parts = parts[:-1]
        mods[parts] = f
    return mods


def _strip_rust(text: str) -> str:
    """The code of a Rust file without comments and string literals."""
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def _paths(code: str) -> Iterable[tuple[str, list[str]]]:
    """Each path that starts at ``crate``, ``super`` or ``self``: its anchor and the
    segments after it (a ``{`` group ends it; the group's own paths are read again below
    as they start with names the module resolves)."""
    for m in _RUST_PATH.finditer(code):
        segs = [s.strip() for s in m.group(2).split("::") if s.strip()]
        out = []
        for s in segs:
            if s == "{":
                break
            if s == "super" and not out:
                out.append(s)
                continue
            out.append(s)
        yield m.group(1), out


def _resolve(module: Module, anchor: str, segs: list[str]) -> list[str]:
    """The absolute path of a reference made in ``module`` (``self`` is the module,
    ``super`` its parent, whether it is a file or a folder's ``mod.rs``)."""
    base = list(module)
    if anchor == "crate":
        base = []
    elif anchor == "super":
        base = base[:-1]
    for s in segs:
        if s == "super":
            base = base[:-1]
        else:
            base.append(s)
    return base


def rust_edges(src: Path) -> set[tuple[Module, Module]]:
    """Module-to-module references of the crate, to the deepest module named."""
    mods = rust_modules(src)
    edges = set()
    for mod, f in mods.items():
        for anchor, segs in _paths(_strip_rust(f.read_text(encoding="utf-8"))):
            path = _resolve(mod, anchor, segs)
            target: Module = ()
            for i in range(len(path), 0, -1):
                if tuple(path[:i]) in mods:
                    target = tuple(path[:i])
                    break
            edges.add((mod, target))
    return edges


def sibling_edges(edges: Iterable[tuple[Module, Module]]) -> set[tuple[Module, Module]]:
    """Each edge read where its ends part: between the two children of their common
    ancestor that hold them. Edges within one module's subtree drop out."""
    out = set()
    for a, b in edges:
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        if n == len(a) or n == len(b):
            continue
        out.add((a[: n + 1], b[: n + 1]))
    return out


def find_cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of two or more nodes."""
    graph: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, set(c)) for c in comps]


def _cycle_in(graph: dict[str, list[str]], comp: set[str]) -> list[str]:
    """A cycle inside one strongly connected component, from its first node."""
    start = min(comp)
    path, seen = [start], {start}
    while True:
        nxt = next(w for w in graph[path[-1]] if w in comp)
        if nxt in seen:
            return path[path.index(nxt) :] + [nxt]
        path.append(nxt)
        seen.add(nxt)


def rust_cycles(src: Path) -> list[list[str]]:
    named = {
        ("::".join(a) or "crate", "::".join(b) or "crate")
        for a, b in sibling_edges(rust_edges(src))
    }
    return find_cycles(named)


def python_edges(pkg: Path) -> set[tuple[str, str]]:
    """Module-to-module imports within the package folder ``pkg``."""
    name = pkg.name
    mods = {
        (name if f.stem == "__init__" else f"{name}.{f.stem}"): f for f in sorted(pkg.glob("*.py"))
    }
    mods.update(
        {f"{name}.{f.stem}": f for f in pkg.glob("*.pyi") if f"{name}.{f.stem}" not in mods}
    )
    edges = set()
    for mod, f in mods.items():
        if f.suffix == ".pyi":
            continue
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), str(f))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module == name:
                    targets = [
                        f"{name}.{a.name}" if f"{name}.{a.name}" in mods else name
                        for a in node.names
                    ]
                else:
                    targets = [node.module]
            for t in targets:
                if t in mods and t != mod:
                    edges.add((mod, t))
    return edges


def main(argv: list[str]) -> int:
    repo = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    found = False
    for kind, cycles in (
        ("Rust", rust_cycles(repo / "src")),
        ("Python", find_cycles(python_edges(repo / "python" / "moped"))),
    ):
        for c in cycles:
            found = True
            print(f"{kind} import cycle: {' -> '.join(c)}")
    if not found:
        print("no import cycles between Rust modules or between Python modules")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
