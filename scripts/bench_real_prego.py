"""PREGO with the real small LMs (docs/real_models.md, block ``prego-real``): ``python -m ego_adr.monitoring
evaluate --monitor prego`` with SmolLM2-135M-Instruct and Gemma 3 270M, each behind llama.cpp's server, on the
step streams of a benchmark (default EPIC-Tent-O, ``oracle-merged`` and ``miniroad``, PREGO's numeric decoding),
beside PREGO's published rows and the blind flag-all baseline run by the same command. Numbers as they come: small
models are weak next-step predictors.

    python scripts/bench_real_prego.py [--benchmarks epic-tent-o] [--models smollm2-135m gemma3-270m] [--write-docs]

Assembly101-O's prompts hold 135 training sequences (thousands of tokens per step on 664 steps); the docs' block
is ``--benchmarks epic-tent-o assembly101-o``: about ten minutes on an idle 2-core machine (llama.cpp's prompt
cache keeps each recording's common prefix), hours on a loaded one.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import docs_tables

REPO = Path(__file__).resolve().parents[1]
KEYS = ("balanced_precision", "mistake_recall", "balanced_f1", "macro_f1")


def _evaluate(args: list[str]) -> None:
    from ego_adr.monitoring.__main__ import main

    rc = main(args)
    if rc != 0:
        raise SystemExit(f"evaluate {' '.join(args)} exited {rc}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=str(REPO.parent / "shared" / "online-mistakes"))
    ap.add_argument("--benchmarks", nargs="+", default=["epic-tent-o"])
    ap.add_argument("--streams", nargs="+", default=["oracle-merged", "miniroad"])
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--out", default=None, help="keep the evaluate folders here (default: a temporary folder)")
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["prego-real"])
    from ego_adr.models.llamacpp import LlamaCppServer
    from ego_adr.models.packaged import locate
    from ego_adr.online_mistakes.published import rows as published

    out = Path(a.out or tempfile.mkdtemp(prefix="prego_real_"))
    lines, t_all = [], time.perf_counter()
    for bench in a.benchmarks:
        for stream in a.streams:
            common = ["evaluate", "--benchmark", bench, "--stream", stream, "--data-root", a.data_root, "--quiet"]
            base = out / bench / stream / "flag-all"
            _evaluate([*common, "--monitor", "flag-all", "--out", str(base)])
            lines.append((bench, stream, "flag-all (blind)", json.loads((base / "metrics.json").read_text()), ""))
            for alias in a.models:
                folder = out / bench / stream / alias
                with LlamaCppServer(locate(alias), alias, n_ctx=16384) as srv:
                    t0 = time.perf_counter()
                    _evaluate([*common, "--monitor", "prego", "--model", alias, "--backend", "openai",
                               "--base-url", srv.base_url, "--out", str(folder), "--cache-dir", str(out / "cache")])
                    sec = time.perf_counter() - t0
                m = json.loads((folder / "metrics.json").read_text())
                st = m.get("stats") or {}
                lines.append((bench, stream, f"PREGO, {alias} (llama.cpp)", m,
                               f"{sec:.0f} s; {st.get('unparseable')} of {st.get('calls')} replies name no step"))
            for row in published(bench, stream):
                lines.append((bench, stream, row.label, row.values, "published"))
    with docs_tables.Printed() as table:
        print(f"PREGO's numeric decoding (greedy, 4 new tokens); every prompt and reply in each folder's steps.jsonl; "
              f"{time.perf_counter() - t_all:.0f} s in all\n")
        print("| benchmark | stream | monitor | Pb | recall | F1b | macro F1 | note |")
        print("|---|---|---|---:|---:|---:|---:|---|")
        for bench, stream, name, m, note in lines:
            vals = [m.get(k) for k in KEYS]
            cells = " | ".join("" if v is None else f"{100 * float(v):.1f}" for v in vals)
            print(f"| {bench} | {stream} | {name} | {cells} | {note} |")
    docs_tables.publish(a, {"prego-real": table.text})


if __name__ == "__main__":
    main()
