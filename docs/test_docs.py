"""Every code block of the documentation runs, so the pages cannot drift from the code.

* ``python`` blocks run in order, one namespace per page (a later block may
  use what an earlier one defined), in a fresh temporary folder. A block of
  ``>>>`` lines runs as a doctest: its printed output must match.
* ``bash`` blocks run from the repository root, one ``bash -e`` process per
  block, and must exit 0. A block preceded by ``<!-- not run: REASON -->``
  is skipped with that reason (installing packages, starting nox itself).

Blocks in other languages (``toml``, ``text``) are not code and are not run.
Run with ``nox -s docs`` or ``pytest docs`` in an environment that has Lamina
and the example plugin installed.
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).parent
ROOT = DOCS.parent
FENCE = re.compile(
    r"(?:<!--\s*not run:\s*(?P<skip>.*?)\s*-->\s*\n)?"
    r"^(?P<indent>[ \t]*)```(?P<lang>\w+)[^\n]*\n(?P<body>.*?)^(?P=indent)```",
    re.DOTALL | re.MULTILINE)


def blocks(page: Path, lang: str) -> list[tuple[int, str, str | None]]:
    """(line number, code, skip reason) of each ``lang`` block of ``page``."""
    text = page.read_text(encoding="utf-8")
    found = []
    for m in FENCE.finditer(text):
        if m.group("lang") == lang:
            indent = len(m.group("indent"))
            code = "\n".join(line[indent:] for line in m.group("body").splitlines())
            found.append((text.count("\n", 0, m.start("body")) + 1, code, m.group("skip")))
    return found


PAGES = sorted(p for p in DOCS.rglob("*.md"))
PY_PAGES = [p for p in PAGES if blocks(p, "python")]
# Commands find this interpreter's environment first (python, lamina-train).
ENV = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                              os.environ.get("PATH", "")])}
SH_BLOCKS = [(p, line, code, skip) for p in PAGES for line, code, skip in blocks(p, "bash")]


def _id(page: Path) -> str:
    return str(page.relative_to(DOCS))


@pytest.mark.parametrize("page", PY_PAGES, ids=_id)
def test_python_blocks(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for line, code, skip in blocks(page, "python"):
        if skip:
            continue
        where = f"{_id(page)}:{line}"
        if code.lstrip().startswith(">>>"):
            test = doctest.DocTestParser().get_doctest(code, namespace, where, where, line)
            result = runner.run(test, clear_globs=False)
            namespace.update(test.globs)  # DocTest ran on a copy; later blocks see its names
            assert not result.failed, f"doctest in {where} failed (output above)"
        else:
            exec(compile(code, where, "exec"), namespace)  # noqa: S102


@pytest.mark.parametrize("page,line,code,skip", SH_BLOCKS,
                         ids=[f"{_id(p)}:{n}" for p, n, _, _ in SH_BLOCKS])
def test_bash_blocks(page: Path, line: int, code: str, skip: str | None) -> None:
    if skip:
        pytest.skip(skip)
    before = set(os.listdir(ROOT))
    try:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=ROOT, env=ENV,
                              capture_output=True, text=True, timeout=300)
    finally:
        for new in set(os.listdir(ROOT)) - before:
            if new not in code:  # only what the documented command wrote, by name
                continue
            path = ROOT / new
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert proc.returncode == 0, (f"{_id(page)}:{line} exited {proc.returncode}\n"
                                  f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")


def test_every_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [_id(p) for p in PAGES if _id(p) not in nav]
    assert not missing, f"pages missing from mkdocs.yml's nav: {missing}"
