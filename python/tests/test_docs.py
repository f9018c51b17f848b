"""The documentation: a short README that leads into the site, and a site (mkdocs.yml,
docs/) that builds without a warning and reaches every page from its navigation."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import ROOT

README_LINES = 250


def test_the_readme_is_short_and_its_links_resolve() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= README_LINES, "README.md: the manual belongs in docs/"
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if "://" not in t]
    assert local, "README.md links into the documentation site"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def nav_pages() -> set[str]:
    """The Markdown files mkdocs.yml's navigation names."""
    return set(re.findall(r":\s*([\w./-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M))


def test_every_page_of_docs_is_in_the_navigation() -> None:
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    nav = nav_pages()
    assert pages - nav == set(), "pages left out of mkdocs.yml's nav"
    assert nav - pages == set(), "mkdocs.yml's nav names pages that do not exist"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


def test_the_site_builds_strictly_and_its_navigation_reaches_every_page(
    tmp_path: Path,
) -> None:
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("mkdocs is not installed (pip install '.[docs]')")
    site = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)},
    )
    assert build.returncode == 0, build.stderr
    built = {p.relative_to(site).as_posix() for p in site.rglob("*.html")} - {"404.html"}
    links = _Links()
    links.feed((site / "index.html").read_text())
    reached = {h.split("#")[0].removeprefix("./") for h in links.hrefs}
    unreached = sorted(built - reached)
    assert not unreached, f"pages the home page's navigation does not reach: {unreached}"
    # Offline: pages are files (no directory URLs), and no page asks for web fonts.
    assert "index.html" in built and "getting-started.html" in built
    assert "fonts.googleapis.com" not in (site / "index.html").read_text()
