"""The README is a front door and the docs hold together: its size, its two commands, every relative link of
README.md and docs/*.md, and the tables a script prints (issue 30 item 3, issue 28 item 8).

A table a script prints lives between ``<!-- bench:NAME -->`` markers; the benchmarks write theirs with
``--write-docs`` (``scripts/docs_tables.py``, tests/test_docs_tables.py), and the two tables whose commands are
cheap and deterministic (the demo run, the memory planner) are compared here with what they print now, so they
cannot drift.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import docs_tables  # noqa: E402

README_MAX_LINES = 250
#: pages another branch of this round adds (the lead merges them); each must still be missing here, so the list
#: can only shrink: drop an entry once its page has landed
PENDING_PAGES: set[str] = set()

_LINK = re.compile(r"""\]\(([^)\s]+)\)|<img\s[^>]*src="([^"]+)\"""")


def _pages() -> list[Path]:
    return docs_tables.pages(ROOT)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (hyphens kept), spaces -> hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.+?)\s*$", text, re.M)}


def _links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return [a or b for a, b in _LINK.findall(text)]


def test_the_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    # the two commands: the demo needs only the package; the tests install the test extra, build the test
    # environments and run the suite, the ten slowest tests listed at the end (issue 38)
    block = text.split("## Two commands", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    demo, tests = (line.split("  #", 1)[0].strip() for line in block.strip().splitlines())
    assert demo == "pip install -e . && python -m ego_adr.run"
    assert tests.startswith("pip install -e '.[test]' && bash scripts/test_envs.sh && python -m pytest -q")
    assert "--durations=10" in tests
    # .ci/run runs exactly the README's test command (with python3, as CI has no `python`)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    as_ci = tests.replace("pip install", "python3 -m pip install").replace("python -m pytest", "python3 -m pytest")
    assert as_ci in ci.splitlines()


def _out_folders(page: Path) -> set[str]:
    return {m.rstrip("/") for m in re.findall(r"(?:--out|--output-dir)[ =]([^\s`'\"]+)", page.read_text())}


def test_the_readmes_folders_do_not_hold_the_docs_runs():
    """Issue 46, item 11: the README's ``--out runs/om`` put a ``--monitor all`` folder around the docs'
    ``runs/om/<name>`` runs. No README output folder contains, or lies inside, a folder the docs write."""
    readme = _out_folders(ROOT / "README.md")
    docs = set().union(*(_out_folders(p) for p in _pages() if p.name != "README.md"))
    assert len(readme) >= 4 and len(docs) >= 20
    assert [(a, b) for a in readme for b in docs if b.startswith(a + "/") or a.startswith(b + "/")] == []


def test_every_relative_link_resolves():
    broken = []
    for page in _pages():
        for link in _links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", link):  # http:, https:, mailto:
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            rel = target.relative_to(ROOT).as_posix() if target.is_relative_to(ROOT) else str(target)
            if rel in PENDING_PAGES:
                continue
            if not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in _anchors(target):
                broken.append(f"{page.relative_to(ROOT)}: {link} (no heading with that anchor)")
    assert broken == []


def test_pending_pages_are_still_pending():
    # once the page has landed, its entry must go (and the link test then checks it like any other)
    assert [p for p in PENDING_PAGES if (ROOT / p).exists()] == []


def test_the_link_checker_sees_a_broken_link_and_a_wrong_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# A page\n\n## Two words\n\n[ok](b.md) [bad](c.md) [anchor](a.md#two-words) "
                                   "[wrong](#three)\n")
    (tmp_path / "b.md").write_text("b\n")
    links = _links(tmp_path / "a.md")
    assert links == ["b.md", "c.md", "a.md#two-words", "#three"]
    assert _anchors(tmp_path / "a.md") == {"a-page", "two-words"}
    assert _slug("Preflight: `--dry-run`") == "preflight---dry-run"


# ---- tables that must equal what their command prints now ----------------------------------------------------


def _block(page: Path, name: str) -> list[str]:
    text = page.read_text(encoding="utf-8")
    start, end = docs_tables.markers(name)
    return [line for line in text.split(start)[1].split(end)[0].splitlines() if line.strip()]


def test_the_memory_plan_in_the_docs_is_what_the_planner_prints():
    cmd = [sys.executable, "-m", "ego_adr.models.memory_planner", "--model", "qwen2.5-vl", "--gpu-memory", "24GB",
           "--frames", "8", "16", "24", "32"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-1000:]
    assert _block(ROOT / "docs" / "getting_started.md", "planner") == [x for x in r.stdout.splitlines() if x.strip()]


@pytest.mark.slow  # the whole demo run (see tests/README.md)
def test_the_demo_table_in_the_readme_is_what_the_demo_prints(tmp_path, tiny_model_dir, demo_root, capsys,
                                                              monkeypatch):
    from ego_adr.run.cli import main  # `python -m ego_adr.run` in this process: a torch start less (issue 46)

    monkeypatch.chdir(ROOT)
    capsys.readouterr()
    assert main(["--output-dir", str(tmp_path / "demo")]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert _block(ROOT / "README.md", "demo") == printed
