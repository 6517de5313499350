"""Key-step matching accuracy of the paper's TF-IDF matcher and the ``minilm`` one on a matching set built from the
real EgoErrorVQA annotations (docs/real_models.md, block ``matching``).

The set: EgoOops' error clips. Each carries ``instruction``, the 0-based index of the step it belongs to in
EgoOops' fine-grained step list, and ``error_caption``, a sentence written by the annotators about what the person
did there. The step list of a task is the table the EgoOops loader builds from the correct clips' labels
(``ego_adr.data.sources.egooops.egooops_step_table``); a clip whose index is not in that table (or is -1) is left
out. So the correct step is known from the annotation, never from either matcher. Query = the error caption;
candidates = the task's steps; a match is right when it picks the annotated index. Both matchers use the paper's
fallback rule (difflib below tau 0.25). Nothing is tuned.

    python scripts/bench_matching.py [--data-root ../shared/egoerrorvqa] [--write-docs]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import docs_tables

ROOT = Path(__file__).resolve().parents[1]


def matching_set(data_root: Path) -> dict[str, tuple[list[str], list[tuple[str, int]]]]:
    """task -> (its steps in index order, [(error caption, index into those steps)])."""
    from ego_adr.data.sources.egooops import egooops_step_table

    records = json.loads((data_root / "egooops_answer.json").read_text())
    table = egooops_step_table(records)
    out: dict[str, tuple[list[str], list[tuple[str, int]]]] = {}
    for task in sorted({t for t, _ in table}):
        idx = sorted(i for t, i in table if t == task)
        steps = [table[(task, i)] for i in idx]
        pos = {i: k for k, i in enumerate(idx)}
        queries = [(r["error_caption"], pos[r["instruction"]]) for r in records
                   if r.get("task_id") == task and r.get("error_caption") and r.get("instruction") in pos]
        if queries:
            out[task] = (steps, queries)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=str(ROOT.parent / "shared" / "egoerrorvqa"))
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["matching"])
    from ego_adr.models.packaged import load_embedder
    from ego_adr.reasoning.embed_matching import make_matcher

    sets = matching_set(Path(a.data_root))
    embedder = load_embedder("minilm-l6")
    rows = {}
    for name in ("tfidf", "minilm"):
        right = n = fallback = 0
        t0 = time.perf_counter()
        for steps, queries in sets.values():
            m = make_matcher(name, steps, embedder=embedder)
            for q, gold in queries:
                got = m.match(q)
                n += 1
                right += got.index == gold
                fallback += got.method == "difflib"
        rows[name] = (n, right, fallback, time.perf_counter() - t0)
    chance = sum(len(q) / len(s) for s, q in sets.values())
    with docs_tables.Printed() as table:
        n_q = sum(len(q) for _, q in sets.values())
        print(f"EgoOops error clips of {Path(a.data_root).name}: {n_q} error captions over {len(sets)} tasks "
              f"({', '.join(f'{t} {len(s)} steps' for t, (s, _) in sets.items())}); chance "
              f"{100 * chance / n_q:.1f}%\n")
        print("| matcher | queries | right | accuracy | fell back to difflib | seconds |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, (n, right, fb, sec) in rows.items():
            print(f"| {name} | {n} | {right} | {100 * right / n:.1f}% | {fb} | {sec:.1f} |")
    docs_tables.publish(a, {"matching": table.text})


if __name__ == "__main__":
    main()
