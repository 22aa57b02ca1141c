"""MkDocs hooks: the pages that are assembled from the repository at build time.

* API reference: one page per public module of every package (a module whose
  dotted name has no ``_``-prefixed part), found by walking ``packages/*/src``,
  so a new public module or a new name in an ``__all__`` appears without
  editing the docs. Each page is one mkdocstrings directive.
* Results: ``results/index.md`` gets every ``benchmarks/results/*.md`` appended
  (training runs first), with the plots beside them, so results recorded
  later appear on the next build.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
API_DIR = "reference/api"

# Distribution folder -> the label of its section in the navigation.
PACKAGES = {
    "ndarray": "lamina-ndarray",
    "autograd": "lamina-autograd",
    "nn": "lamina-nn",
    "backends-cpu": "lamina-backend-cpu",
    "backends-cuda": "lamina-backend-cuda",
}


def public_modules(src: Path) -> list[str]:
    """Dotted names of the public modules under ``src`` (tests of the kit excluded)."""
    names = []
    for path in sorted(src.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        if not parts or any(p.startswith(("_", "test_")) for p in parts):
            continue
        names.append(".".join(parts))
    return names


def api_pages() -> dict[str, list[str]]:
    """Navigation label -> public modules of that distribution."""
    return {label: public_modules(ROOT / "packages" / folder / "src")
            for folder, label in PACKAGES.items()
            if (ROOT / "packages" / folder / "src").is_dir()}


def on_config(config: Any) -> Any:
    reference = next(item for item in config.nav if "Reference" in item)["Reference"]
    for label, modules in api_pages().items():
        if modules:
            reference.append({label: [{m: f"{API_DIR}/{m}.md"} for m in modules]})
    return config


def on_files(files: Files, config: Any) -> Files:
    for modules in api_pages().values():
        for module in modules:
            files.append(File.generated(config, f"{API_DIR}/{module}.md",
                                        content=f"# `{module}`\n\n::: {module}\n"
                                                "    options:\n      show_root_heading: false\n"))
    for plot in sorted(RESULTS.glob("*.png")):
        files.append(File.generated(config, f"results/{plot.name}", abs_src_path=str(plot)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri != "results/index.md":
        return markdown
    reports = sorted(RESULTS.glob("*.md"), key=lambda p: (not p.name.startswith("train_"),
                                                           p.name))
    if not reports:
        return markdown + "\n*No results are recorded yet.*\n"
    plots = {p.name for p in RESULTS.glob("*.png")}
    sections = [embed_report(p, plots) for p in reports]
    return markdown.rstrip() + "\n\n" + "\n\n".join(sections) + "\n"


_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def embed_report(path: Path, plots: set[str]) -> str:
    """One results file as a section: headings one level down, links made safe.

    A relative link that does not name a plot of the results folder points at
    a repository file the site does not contain, so it becomes plain text.
    """
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            line = "#" + line
        out.append(line)
    text = "\n".join(out)
    if not text.lstrip().startswith("## "):
        text = f"## {path.stem}\n\n{text}"

    def fix(m: re.Match[str]) -> str:
        bang, label, target = m.groups()
        if "://" in target or target.startswith("#") or target in plots:
            return m.group(0)
        return f"{label} (`{target}`)"

    text = _LINK.sub(fix, text)
    return f"{text}\n\n<small>Source: `benchmarks/results/{path.name}`</small>"
