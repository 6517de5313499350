"""Served = local? The same run locally and through ``ego_adr.models.serve``, once per frame transfer; prints a table.

What docs/scale.md says about a served model ("What is identical to a local run") comes from this script:

    python scripts/served_vs_local.py [--model tiny] [--limit 8] [--data-root D --video-root V]

It runs ``python -m ego_adr.run --model M --limit N`` (the real runner, in this process) on the HF backend, then
serves the same model on a loopback port and runs ``--backend openai --base-url ...`` with each
``--frame-transfer`` (:data:`ego_adr.models.wire.TRANSFERS`), every other setting left at its default, and counts
the rows whose raw reply (and every stage's output) equals the local run's. Without ``--data-root`` it uses the
embedded demo set. Each run gets its own cache folder, so nothing is reused between them. Offline, CPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path


def _rows(out: Path) -> dict:
    return {r["sample_id"]: r for r in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}


def _accuracy(out: Path) -> str:
    overall = json.loads((out / "metrics.json").read_text()).get("overall") or {}
    acc = overall.get("accuracy", overall.get("Acc"))
    return "-" if acc is None else f"{100 * acc:.1f}" if acc <= 1 else f"{acc:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/served_vs_local.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="tiny", help="alias, hub id or folder (default: tiny)")
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--data-root")
    ap.add_argument("--video-root")
    a = ap.parse_args(argv)
    from ego_adr.models import load_model
    from ego_adr.models.serve import BackgroundServer
    from ego_adr.models.wire import TRANSFERS
    from ego_adr.run.config import RunConfig
    from ego_adr.run.runner import execute

    common = dict(model=a.model, limit=a.limit, data_root=a.data_root, video_root=a.video_root)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        execute(RunConfig(**common, output_dir=str(tmp / "local"), cache_dir=str(tmp / "cache-local")),
                progress=False)
        local = _rows(tmp / "local")
        lines = [f"model {a.model}, {len(local)} samples; local accuracy {_accuracy(tmp / 'local')}", "",
                 "| --frame-transfer | raw replies equal to local | every stage equal | served accuracy |",
                 "|---|---:|---:|---:|"]
        with BackgroundServer(load_model(a.model, device="cpu"), model_name=a.model) as srv:
            for name in TRANSFERS:
                out = tmp / f"served-{name}"
                execute(RunConfig(**common, backend="openai", base_url=srv.base_url, output_dir=str(out),
                                  cache_dir=str(tmp / f"cache-{name}"), extra={"frame_transfer": name}),
                        progress=False)
                served = _rows(out)
                raw = sum(local[k]["raw"] == served.get(k, {}).get("raw") for k in local)
                stages = sum(local[k]["stages"] == served.get(k, {}).get("stages") for k in local)
                lines.append(f"| {name} | {raw} of {len(local)} | {stages} of {len(local)} | {_accuracy(out)} |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
