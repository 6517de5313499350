"""Merge the predictions files of data-parallel shards (or of interrupted and resumed runs) into one.

Rule (shared with :func:`ego_adr.eval.mc.dedup_rows`): one row per ``sample_id`` (per ``(sample_id,
qa_index)`` for open-ended answer and judgement rows, one per question), the last one seen in input
order -- except that a row without an answer never replaces a row with one (valid or unparseable), so a crashed
retry cannot erase an answer. Output order is each sample's first appearance in input order: shards given in
shard order, each written in dataset order by ``ego_adr.run``, stay in dataset order. Glob patterns passed
quoted are expanded here in natural order (shard-2 before shard-10).
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections import Counter
from pathlib import Path

from ego_adr.eval.mc import dedup_rows, has_answer, is_open_row, load_predictions, row_status


def _natural(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def expand_inputs(patterns: list[str]) -> list[Path]:
    """Paths from explicit names or glob patterns; raises when a pattern matches nothing."""
    out: list[Path] = []
    for p in patterns:
        if any(ch in p for ch in "*?["):
            hits = sorted(glob.glob(p), key=_natural)
            if not hits:
                raise FileNotFoundError(f"no file matches {p!r}")
            out += [Path(h) for h in hits]
        else:
            if not Path(p).is_file():
                raise FileNotFoundError(f"input predictions file not found: {p}")
            out.append(Path(p))
    return out


def merge_predictions(inputs: list[str | Path], out_path: str | Path) -> dict:
    """Merge ``inputs`` into ``out_path`` (written atomically); returns counts for the caller to print."""
    paths = expand_inputs([str(p) for p in inputs])
    out_path = Path(out_path)
    if any(p.resolve() == out_path.resolve() for p in paths):
        raise ValueError(f"output {out_path} is also an input; write the merge to a new file")
    rows: list[dict] = []
    per_input: list[tuple[str, int]] = []
    for p in paths:
        r = load_predictions(p)
        per_input.append((str(p), len(r)))
        rows += r
    merged = dedup_rows(rows)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(out_path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in merged:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, out_path)
    status = Counter(("answered" if has_answer(r) else "failed") if is_open_row(r) else row_status(r)
                     for r in merged)
    return {"inputs": per_input, "rows_read": len(rows), "rows_written": len(merged),
            "duplicates_dropped": len(rows) - len(merged), "answered": status.get("answered", 0),
            "unparseable": status.get("unparseable", 0), "no_answer": status.get("failed", 0),
            "per_source": dict(Counter(str(r.get("source")) for r in merged)), "out": str(out_path)}
