"""Key-step matching on real EgoErrorVQA text: the paper's TF-IDF matcher beside the MiniLM matcher (issue 36 item 4).

    python scripts/bench_matching.py [--data-root ../shared/egoerrorvqa] [--write-docs]

The matching set, built from the annotations alone (the correct step is known from an annotation field, never from
either matcher):

* ``captaincook4d`` -- CaptainCook4D annotates each segment with its recipe step (``step_id``, the step's text in
  ``original_description``) and, on error segments, what the person actually did (``modified_description``, e.g.
  "cut cucumber into thin strips" for "chop or grate the cucumber"). Query: a ``modified_description`` that differs
  from its step's text and is not "Skipped this step"; candidates: the recipe's step texts (every distinct
  ``step_id`` of that recipe in the file); correct: the segment's own ``step_id``. The short step name before the
  first ``-`` ("Chop-Chop 1 scallion") is removed from both sides: it is copied verbatim into most modified texts
  and would hand both matchers the answer.
* ``egooops`` -- EgoOops error clips carry the index of their step in EgoOops' step list (``instruction``) and a
  free-text ``error_caption`` ("pour much water but should pour about 15 ml"). Query: the caption; candidates: the
  task's step list (the ``instruction_label`` texts of its correct clips, as the loader builds it); correct: the
  clip's ``instruction``.

Printed per source: queries, candidates per query, top-1 / top-3 accuracy of each cosine ranking, and each full
matcher (its cosine, the difflib fallback below its threshold) with the share of queries that fell back.

MiniLM's threshold (``TAU_MINILM``) is not fitted on this set: the script prints the 99th percentile of the cosines
between action texts of the *other* two sources (Assembly101, EPIC-Tent: informative ``action_annotation``) and the
rule-based procedure steps of *other* tasks -- pairs that cannot match -- beside the constant chosen from it.
"""

import argparse
import json
import re
import sys
from pathlib import Path

import docs_tables  # scripts/docs_tables.py (this folder is on sys.path when the script runs)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "egoerrorvqa"
_SHORT_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z ]{0,40}?)\s*-\s*(?=\S)")
UNINFORMATIVE = {"", "instruction", "unknown action", "skipped this step"}


def strip_short_name(text: str) -> str:
    """CaptainCook4D's "Verb-Long description" without its short step name (at most four words before ``-``)."""
    m = _SHORT_NAME.match(text or "")
    if m and len(m.group(1).split()) <= 4:
        return text[m.end():].strip()
    return (text or "").strip()


def captaincook4d_set(records: list[dict]) -> list[dict]:
    steps: dict[str, dict[int, str]] = {}
    for r in records:
        steps.setdefault(r["task_id"], {})[int(r["step_id"])] = strip_short_name(r["original_description"])
    items = []
    for r in records:
        orig, mod = r.get("original_description") or "", r.get("modified_description") or ""
        query = strip_short_name(mod)
        if mod == orig or query.lower().strip(" .") in UNINFORMATIVE:
            continue
        texts = sorted(set(steps[r["task_id"]].values()))  # two step ids with one text are one candidate
        items.append({"source": "captaincook4d", "task": r["task_id"], "step_id": int(r["step_id"]), "query": query,
                      "candidates": texts,
                      "gold": texts.index(steps[r["task_id"]][int(r["step_id"])])})
    return items


def egooops_set(records: list[dict]) -> list[dict]:
    from ego_adr.data.sources.egooops import egooops_step_table

    table = egooops_step_table(records)
    items = []
    for r in records:
        caption, idx = (r.get("error_caption") or "").strip(), r.get("instruction")
        if not caption or idx is None or (r["task_id"], int(idx)) not in table:
            continue
        ordered = sorted((i, t) for (task, i), t in table.items() if task == r["task_id"])
        items.append({"source": "egooops", "task": r["task_id"], "query": caption,
                      "candidates": [t for _, t in ordered], "gold": [i for i, _ in ordered].index(int(idx))})
    return items


def matching_set(root: Path) -> list[dict]:
    return (captaincook4d_set(json.loads((root / "captaincook4d_answer.json").read_text()))
            + egooops_set(json.loads((root / "egooops_answer.json").read_text())))


def null_cosines(root: Path, embedder) -> list[float]:
    """Cosines of Assembly101 / EPIC-Tent action texts with the rule-based steps of every other task."""
    from ego_adr.reasoning.procedures import rule_based_bank

    procedures = json.loads((root / "procedure.json").read_text())
    banks = {t: rule_based_bank(t, p).texts for t, p in procedures.items()}
    out: list[float] = []
    for name in ("assembly101_answers.json", "epic_tent_answer_sec.json"):
        records = json.loads((root / name).read_text())
        texts = sorted({(r["task_id"], (r.get("action_annotation") or "").strip()) for r in records})
        texts = [(t, a) for t, a in texts if a.lower() not in UNINFORMATIVE]
        q = embedder.encode([a for _, a in texts])
        for task, steps in banks.items():
            rows = [i for i, (t, _) in enumerate(texts) if t != task]
            if rows:
                out.extend((q[rows] @ embedder.encode(steps).T).ravel().tolist())
    return out


def evaluate(items: list[dict], embedder) -> dict[str, dict]:
    from ego_adr.reasoning.embed_matching import make_matcher

    stats: dict[str, dict] = {}
    for it in items:
        s = stats.setdefault(it["source"], {"n": 0, "cands": 0})
        s["n"] += 1
        s["cands"] += len(it["candidates"])
        for kind in ("tfidf", "minilm"):
            m = make_matcher(kind, it["candidates"], embedder=embedder)
            scores = m.tfidf_scores(it["query"]) if kind == "tfidf" else m.embedding_scores(it["query"])
            ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
            found = m.match(it["query"])
            s[f"{kind}_top1"] = s.get(f"{kind}_top1", 0) + (ranked[0] == it["gold"])
            s[f"{kind}_top3"] = s.get(f"{kind}_top3", 0) + (it["gold"] in ranked[:3])
            s[f"{kind}_acc"] = s.get(f"{kind}_acc", 0) + (found.index == it["gold"])
            s[f"{kind}_fallback"] = s.get(f"{kind}_fallback", 0) + (found.method == "difflib")
    return stats


def table(stats: dict[str, dict]) -> None:
    print("| source | queries | candidates / query | TF-IDF cosine top-1 / top-3 | TF-IDF matcher (difflib < 0.25) "
          "| fell back | MiniLM cosine top-1 / top-3 | MiniLM matcher (difflib < tau) | fell back |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    total: dict = {}
    for src, s in [*sorted(stats.items()), ("all", None)]:
        if s is None:
            s = total
        else:
            for k, v in s.items():
                total[k] = total.get(k, 0) + v
        n = s["n"]
        pct = {k: f"{100 * v / n:.1f}%" for k, v in s.items()}
        print(f"| {src} | {n} | {s['cands'] / n:.1f} | {pct['tfidf_top1']} / {pct['tfidf_top3']} | {pct['tfidf_acc']} "
              f"| {pct['tfidf_fallback']} | {pct['minilm_top1']} / {pct['minilm_top3']} | {pct['minilm_acc']} "
              f"| {pct['minilm_fallback']} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", default=str(DEFAULT_DATA), help="the EgoErrorVQA json folder")
    p.add_argument("--cache-dir", help="embedding cache (default: the ego_adr cache)")
    docs_tables.add_flag(p)
    args = p.parse_args()
    root = Path(args.data_root)
    if not (root / "captaincook4d_answer.json").is_file():
        print(f"--data-root {root}: no captaincook4d_answer.json there; give the EgoErrorVQA json folder "
              "(scripts/download_annotations.py)", file=sys.stderr)
        sys.exit(2)
    docs_tables.check(args, ["matching"])
    import numpy as np

    from ego_adr.errors import UserError
    from ego_adr.reasoning.embed_matching import TAU_MINILM, load_cached_embedder
    from ego_adr.store import cache_root

    try:
        embedder = load_cached_embedder("minilm", Path(args.cache_dir) if args.cache_dir else cache_root())
    except UserError as e:
        print(str(e), file=sys.stderr)
        sys.exit(2)
    items = matching_set(root)
    null = null_cosines(root, embedder)
    with docs_tables.Printed() as out:
        table(evaluate(items, embedder))
        print()
        print(f"MiniLM threshold: tau = {TAU_MINILM:.2f}; the 99th percentile of {len(null)} cross-task cosines "
              f"(Assembly101 / EPIC-Tent actions vs other tasks' rule-based steps) is "
              f"{float(np.percentile(null, 99)):.3f} (median {float(np.median(null)):.3f}). "
              f"Data: {root.name}.")
    docs_tables.publish(args, {"matching": out.text})


if __name__ == "__main__":
    main()
