"""``scripts/docs_tables.py``: a benchmark writes the table it printed between its ``<!-- bench:NAME -->``
markers (``--write-docs``, issue 28 item 8) and nothing else; a page without the markers is refused before any
work, in one line, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import docs_tables  # noqa: E402

PAGE = """# Bench

Text before.

<!-- bench:frames -->
| old | table |
|---|---|
| 1 | 2 |
<!-- /bench:frames -->

Text between.

<!-- bench:other -->
keep me
<!-- /bench:other -->
"""


def test_a_block_is_replaced_and_nothing_else():
    out = docs_tables.replace_blocks(PAGE, "frames", "\n| new | table |\n|---|---|\n| 3 | 4 |\n")
    assert "| 3 | 4 |" in out and "| 1 | 2 |" not in out
    assert out.replace("| new | table |\n|---|---|\n| 3 | 4 |", "X") == PAGE.replace(
        "\n| old | table |\n|---|---|\n| 1 | 2 |\n", "\n\nX\n\n")
    assert "keep me" in out and out.startswith("# Bench\n\nText before.")
    # rewriting with the same text again changes nothing more
    assert docs_tables.replace_blocks(out, "frames", "| new | table |\n|---|---|\n| 3 | 4 |") == out


@pytest.mark.parametrize("text, why", [
    ("<!-- bench:frames -->\nno end\n", "has no"),
    ("<!-- bench:frames -->\n<!-- bench:frames -->\n<!-- /bench:frames -->\n", "has no"),
    ("<!-- /bench:frames -->\nx\n", "without its"),
])
def test_unbalanced_markers_are_one_clear_error(text, why):
    with pytest.raises(docs_tables.MarkerError, match=why):
        docs_tables.replace_blocks(text, "frames", "x", "docs/x.md")


def _checkout(tmp_path: Path, readme: str = "# R\n", page: str = PAGE) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(readme)
    (tmp_path / "docs" / "bench.md").write_text(page)
    return tmp_path


def test_blocks_are_written_into_every_page_that_holds_them(tmp_path):
    root = _checkout(tmp_path, readme="# R\n<!-- bench:other -->\nold\n<!-- /bench:other -->\ntail\n")
    done = docs_tables.write_blocks({"other": "fresh"}, root)
    assert sorted(done) == sorted([f"{root / 'README.md'}: other", f"{root / 'docs' / 'bench.md'}: other"])
    assert (root / "README.md").read_text() == "# R\n<!-- bench:other -->\n\nfresh\n\n<!-- /bench:other -->\ntail\n"
    assert "fresh" in (root / "docs" / "bench.md").read_text() and "| 1 | 2 |" in (root / "docs" / "bench.md").read_text()
    assert sorted(p.name for p in (root / "docs").iterdir()) == ["bench.md"]  # no temporary file left


def test_a_block_no_page_holds_is_refused_and_nothing_is_written(tmp_path):
    root = _checkout(tmp_path)
    before = (root / "docs" / "bench.md").read_text()
    with pytest.raises(docs_tables.MarkerError, match="holds missing.*bench:missing"):
        docs_tables.write_blocks({"frames": "new", "missing": "x"}, root)
    assert (root / "docs" / "bench.md").read_text() == before


def test_printed_keeps_what_was_printed_and_still_prints(capsys):
    with docs_tables.Printed() as p:
        print("| a |")
        print("| b |", flush=True)
    assert p.text == "| a |\n| b |\n" and capsys.readouterr().out == "| a |\n| b |\n"


def test_a_script_without_the_markers_stops_before_work(tmp_path):
    root = _checkout(tmp_path)  # holds bench:frames and bench:other, not bench:models
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_models.py"), "--write-docs", str(root)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == "", r.stdout[-500:]
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "bench:models" in r.stderr


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_a_benchmark_writes_the_table_it_printed(tmp_path):
    root = _checkout(tmp_path, page="# B\n\n<!-- bench:models -->\nold\n<!-- /bench:models -->\n\nafter\n")
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_models.py"), "--samples", "2",
                        "--new-tokens", "2", "--batch-sizes", "1", "--write-docs", str(root)],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    table = [line for line in r.stdout.splitlines() if line.startswith("| 1 |")]
    page = (root / "docs" / "bench.md").read_text()
    assert len(table) == 1 and table[0] in page and "old" not in page and page.endswith("\n\nafter\n")
    assert page.split("<!-- bench:models -->")[1].split("<!-- /bench:models -->")[0].strip() == r.stdout.strip()


def test_bench_real_prego_counts_where_the_alarms_fall_by_hand():
    """``bench_real_prego.alarm_shares``: the correct steps before a recording's first mistake, after it, and the
    mistakes, each the share alarmed on at the macro-F1 point, counted on hand-made rows."""
    import bench_real_prego

    def row(ep, i, label, alarm):
        return {"episode": ep, "index": i, "label": label, "flagged_for": {"macro_f1": alarm, "balanced_f1": True}}

    rows = [row("a", 0, 0, False), row("a", 1, 0, True), row("a", 2, 1, True), row("a", 3, 0, True),
            row("a", 4, 1, False), row("b", 0, 0, False), row("b", 1, 0, False)]  # b: no mistake, all "before"
    got = bench_real_prego.alarm_shares(rows)
    assert got == {"correct, before the first mistake": (4, 0.25), "correct, after it": (1, 1.0),
                   "mistakes": (2, 0.5)}
