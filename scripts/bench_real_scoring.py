"""The deep error classifier with the real small LMs, writing its answer or scoring the options (docs/real_models.md,
block ``scoring-real``): ``python -m ego_adr.run --mode deep --narration-source reference`` (the annotations'
descriptions as the narration, so only the classifier and the model's step choice run; no video) with SmolLM2 and
Gemma 3 through ``--backend llamacpp``, ``--scoring generate`` (the paper's) and ``--scoring likelihood`` (each
option scored as the start of the classifier's reply: a named deviation), beside the keyword classifier on the
same narrations (shallow, no model) and two trivial rules on the same samples (always ``correct``; always the most
frequent error type of the annotations). Each row says what its answers were: a row whose answers are all one
option is a constant reply.

    python scripts/bench_real_scoring.py [--models smollm2-135m gemma3-270m] [--limit 40] [--max-new-tokens 32]
        [--out DIR] [--write-docs]

``--limit`` samples round robin over the four sources; ``--max-new-tokens`` is the budget of every written reply
(the paper's is 256; the classifier's answer is one option, and a base model that does not stop writes until the
limit): a deviation printed above the table.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import docs_tables

REPO = Path(__file__).resolve().parents[1]


def _run(args: list[str], out: Path) -> list[dict]:
    from ego_adr.run.cli import main

    rc = main([*args, "--out", str(out), "--quiet"])
    if rc != 0:
        raise SystemExit(f"python -m ego_adr.run {' '.join(args)} exited {rc}")
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


def _answers(rows: list[dict]) -> str:
    said = Counter(r["prediction"] or f"({r['failure'] or 'none'})" for r in rows)
    top = ", ".join(f"{n} x {o}" for o, n in said.most_common(2))
    options = {r["prediction"] for r in rows if r["prediction"]}
    constant = ("; never an option" if not options else "; a constant reply" if len(said) == 1 else
                "; one option whenever it names one" if len(options) == 1 else "")
    return f"{top}{', ...' if len(said) > 2 else ''} ({len(said)} distinct){constant}"


def _line(name: str, scoring: str, rows: list[dict], note: str = "") -> str:
    from ego_adr.eval.mc import compute_mc_metrics

    o = compute_mc_metrics(rows)["overall"]
    cells = " | ".join(f"{100 * o[k]:.1f}" for k in ("accuracy", "precision", "recall", "f1"))
    return f"| {name} | {scoring} | {len(rows)} | {cells} | {_answers(rows)} | {note} |"


def _trivial(rows: list[dict], option: str) -> list[dict]:
    return [{**r, "prediction": option, "answer": option, "failure": None, "extraction": "rule"} for r in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=str(REPO.parent / "shared" / "egoerrorvqa"))
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--out", default=None, help="keep the run folders and the stage cache here")
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["scoring-real"])
    out = Path(a.out or tempfile.mkdtemp(prefix="scoring_real_"))
    common = ["--narration-source", "reference", "--data-root", a.data_root, "--limit", str(a.limit),
              "--cache-dir", str(out / "cache")]
    load, t0 = os.getloadavg(), time.perf_counter()
    keywords = _run(["--mode", "shallow", *common], out / "keywords")
    from ego_adr.taxonomy import CORRECT

    errors = Counter(g for r in keywords for g in r["ground_truth"] if g != CORRECT)
    lines = [_line("always `correct` (trivial)", "-", _trivial(keywords, CORRECT)),
             _line(f"always `{errors.most_common(1)[0][0]}` (trivial)", "-",
                   _trivial(keywords, errors.most_common(1)[0][0]), "the most frequent error type of these samples' "
                   "labels: a reference, not a method"),
             _line("keyword classifier (shallow, no model)", "-", keywords)]
    calls = spent = 0
    for alias in a.models:
        for scoring in ("generate", "likelihood"):
            rows = _run(["--mode", "deep", "--bank-builder", "rule", "--model", alias, "--backend", "llamacpp",
                         "--scoring", scoring, "--max-new-tokens", str(a.max_new_tokens), *common],
                        out / f"{alias}-{scoring}")
            lines.append(_line(f"deep classifier, {alias}", scoring, rows))
            first = json.loads((out / f"{alias}-{scoring}" / "run.json").read_text())["invocations"][0]
            calls += first["model_calls"]
            spent += (datetime.fromisoformat(first["finished"]) - datetime.fromisoformat(first["started"])).seconds
    with docs_tables.Printed() as table:
        print(f"{a.limit} samples of the EgoErrorVQA annotations (round robin over the sources), the annotations' "
              f"descriptions as the narration; deviations: at most {a.max_new_tokens} new tokens per written reply "
              "(paper: 256), procedure banks by rule (paper: Qwen2.5-VL-7B). "
              f"The model runs' first invocations: {calls} model calls in {spent} s (run.json); this one "
              f"{time.perf_counter() - t0:.0f} s, load average {load[0]:.1f} when it started; every row "
              "in its folder's predictions.jsonl (likelihood rows: each option's score in "
              "`stages.classification.scores`)\n")
        print("| classifier | scoring | n | Acc | Pre | Recall | F1 | answers | note |")
        print("|---|---|---:|---:|---:|---:|---:|---|---|")
        for line in lines:
            print(line)
    docs_tables.publish(a, {"scoring-real": table.text})


if __name__ == "__main__":
    main()
