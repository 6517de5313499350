"""Compare the results of two run folders file by file: byte-identical, identical once wall-clock fields are set
aside (``timings``, ``seconds``, ``wall_s``, ``processing_s``: they differ on every run), or different (with the
first differing row). Used to show that a refactor changed no result:

    python scripts/compare_runs.py runs/before runs/after predictions.jsonl metrics.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

CLOCK = {"timings", "seconds", "wall_s", "processing_s", "started", "finished"}


def _strip(obj):
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in CLOCK}
    if isinstance(obj, list):
        return [_strip(x) for x in obj]
    return obj


def _load(text: str, name: str):
    if name.endswith(".jsonl"):
        return [_strip(json.loads(line)) for line in text.splitlines() if line.strip()]
    return _strip(json.loads(text))


def compare(a: Path, b: Path, name: str) -> str:
    ta, tb = (a / name).read_text(), (b / name).read_text()
    if ta == tb:
        return "byte-identical"
    la, lb = _load(ta, name), _load(tb, name)
    if la == lb:
        return "identical except wall-clock fields"
    if isinstance(la, list):
        for i, (x, y) in enumerate(zip(la, lb)):
            if x != y:
                return f"DIFFERENT (first at row {i}: {x.get('sample_id', '?') if isinstance(x, dict) else i})"
        return f"DIFFERENT ({len(la)} vs {len(lb)} rows)"
    return "DIFFERENT"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/compare_runs.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("files", nargs="+", help="file names inside both folders, e.g. predictions.jsonl metrics.json")
    args = ap.parse_args(argv)
    worst = 0
    for name in args.files:
        if not (args.a / name).is_file() or not (args.b / name).is_file():
            print(f"error: {name} is missing in {args.a} or {args.b}", file=sys.stderr)
            return 2
        verdict = compare(args.a, args.b, name)
        worst = max(worst, verdict.startswith("DIFFERENT"))
        print(f"{name}: {verdict}")
    return worst


if __name__ == "__main__":
    sys.exit(main())
