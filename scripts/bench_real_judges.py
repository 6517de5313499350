"""Agreement between two real open-ended judges (docs/real_models.md, block ``judges-real``): SmolLM2-135M-Instruct
and Gemma 3 270M, each behind llama.cpp's server, as the two judges of the open-ended VQA stage (the paper's judge
prompt and parsing, ``ego_adr.run.judging.judge_rows``), on a fixed set of answers built from the real
EgoErrorVQA developer split. Printed per judge: calls, parse rate (replies that yield a score), mean score (also
per answer kind); between them, on the items both scored: exact agreement, Cohen's kappa (sklearn), Spearman's rho
(scipy), n.

    python scripts/bench_real_judges.py [--per-source 5] [--max-new-tokens 64] [--write-docs]

The answers need no video model, and what each should score is known:
- ``reference``: the annotated reference answer itself (a perfect match: the rubric's 5);
- ``other-reference``: the reference answer of another chosen question of the same source (the next one in the
  chosen order), an answer to a different question (the rubric's 1 or 2 at best).
Questions: ``--per-source`` samples of each of the four sources, the first by sha256 of their sample id (a
deterministic subsample independent of file order), one QA pair each (``select_qa`` mode ``one``, seed 0).

The paper decodes its judges greedily with 256 new tokens (Appendix H); ``--max-new-tokens`` smaller than that is a
named deviation printed above the table (the reply asked for is one short JSON object; a base model that does not
stop writes until the limit). Resuming: judgements go to ``OUT/judgements.jsonl`` (a finished question is never
asked again) and every call through the stage cache in ``OUT/cache``, whose keys name the endpoint, so each judge
is served on a fixed loopback port.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

import docs_tables

REPO = Path(__file__).resolve().parents[1]
KINDS = ("reference", "other-reference")


def answer_rows(data_root: str, per_source: int) -> list[dict]:
    """Two answer rows per chosen question: the reference itself, and another chosen question's reference."""
    from ego_adr.data.egoerrorvqa import load_samples
    from ego_adr.data.sample import OPEN_END
    from ego_adr.eval.open_end import select_qa

    samples = load_samples(data_root, OPEN_END)
    rows = []
    for source in sorted({s.source for s in samples}):
        mine = sorted((s for s in samples if s.source == source),
                      key=lambda s: hashlib.sha256(s.sample_id.encode()).hexdigest())[:per_source]
        chosen = select_qa(mine, "one", seed=0)
        for i, (s, q) in enumerate(chosen):
            qa, other = s.qa_pairs[q], chosen[(i + 1) % len(chosen)]
            other_ref = other[0].qa_pairs[other[1]].answer
            for kind, answer in zip(KINDS, (qa.answer, other_ref), strict=True):
                rows.append({"sample_id": f"{s.sample_id}#{kind}", "qa_index": q, "source": source,
                             "question": qa.question, "reference": qa.answer, "answer": answer, "method": kind,
                             "model": "none (annotations)"})
    return rows


def judge(a: argparse.Namespace, rows: list[dict], out: Path) -> list[dict]:
    from ego_adr.models.base import GenerationConfig
    from ego_adr.models.cache import StageCache
    from ego_adr.models.llamacpp import LlamaCppServer
    from ego_adr.models.openai_api import OpenAIChatModel
    from ego_adr.models.packaged import locate
    from ego_adr.run.judging import judge_rows
    from ego_adr.store import JsonlStore

    out.mkdir(parents=True, exist_ok=True)
    servers = [LlamaCppServer(locate(j), j, n_ctx=4096, threads=a.threads, port=a.port + i).start()
               for i, j in enumerate(a.judges)]
    try:
        models = {j: OpenAIChatModel(j, base_url=s.base_url, concurrency=1, max_retries=1)
                  for j, s in zip(a.judges, servers, strict=True)}
        config = GenerationConfig(max_new_tokens=a.max_new_tokens, do_sample=False)
        store, t0 = JsonlStore(out / "judgements.jsonl"), time.perf_counter()
        before = len(store.rows())
        got = judge_rows(rows, models, store, StageCache(out / "cache" / "stage_cache.sqlite"), config=config,
                         progress=False)
        _add_seconds(out, time.perf_counter() - t0, len(got) - before)
        for m in models.values():
            m.close()
    finally:
        for s in servers:
            s.stop()
    wanted = {(r["sample_id"], r["qa_index"]) for r in rows}
    return [r for r in got if (r["sample_id"], r["qa_index"]) in wanted]


def _add_seconds(out: Path, seconds: float, judged: int) -> None:
    """Judging time summed over the runs that judged something (a resumed run reads stored judgements)."""
    if judged:
        f = out / "seconds.json"
        t = json.loads(f.read_text()) if f.is_file() else {"seconds": 0.0, "answers": 0}
        f.write_text(json.dumps({"seconds": t["seconds"] + seconds, "answers": t["answers"] + judged}) + "\n")


def judging_seconds(out: Path) -> float:
    f = out / "seconds.json"
    return json.loads(f.read_text())["seconds"] if f.is_file() else 0.0


def _mean(xs: list[float]) -> str:
    return f"{sum(xs) / len(xs):.2f}" if xs else "–"


def agreement(rows: list[dict], a: str, b: str) -> dict:
    """Exact agreement, Cohen's kappa (unweighted and quadratic) and Spearman's rho on the items both scored."""
    pairs = [(r["judges"][a]["score"], r["judges"][b]["score"]) for r in rows
             if r["judges"][a]["score"] is not None and r["judges"][b]["score"] is not None]
    res = {"n": len(pairs), "exact": None, "kappa": None, "kappa_quadratic": None, "spearman": None}
    if not pairs:
        return res
    x, y = [p[0] for p in pairs], [p[1] for p in pairs]
    res["exact"] = sum(p == q for p, q in pairs) / len(pairs)
    from sklearn.metrics import cohen_kappa_score

    labels = sorted({round(v) for v in x + y} | set(range(6)))
    xi, yi = [round(v) for v in x], [round(v) for v in y]
    if len(set(xi) | set(yi)) > 1:
        res["kappa"] = float(cohen_kappa_score(xi, yi, labels=labels))
        res["kappa_quadratic"] = float(cohen_kappa_score(xi, yi, labels=labels, weights="quadratic"))
    try:
        from scipy.stats import spearmanr
    except ImportError:
        res["spearman"] = "scipy not installed"
    else:
        if len(set(x)) > 1 and len(set(y)) > 1:
            res["spearman"] = float(spearmanr(x, y).statistic)
        else:
            res["spearman"] = "undefined (a judge gave one score to every item)"
    return res


def separation(rows: list[dict], j: str) -> float | None:
    """AUROC of judge ``j``'s scores for telling an answer that is its question's own reference from another
    question's (ties count half); None when it scored no answer of one kind."""
    own = [r["judges"][j]["score"] for r in rows if r["method"] == KINDS[0] and r["judges"][j]["score"] is not None]
    other = [r["judges"][j]["score"] for r in rows if r["method"] == KINDS[1] and r["judges"][j]["score"] is not None]
    if not own or not other:
        return None
    return sum((x > y) + 0.5 * (x == y) for x in own for y in other) / (len(own) * len(other))


def verdict(rows: list[dict], judges: list[str]) -> str:
    """Whether the rows measure anything, from the rows: a judge is a measurement only when it scores most answers
    and tells its own reference from another question's (AUROC at least 0.7); otherwise the rows check the plumbing
    around it (replies recorded, parse failures counted, resumable) and say why."""
    why = []
    for j in judges:
        per = [r["judges"][j]["score"] for r in rows]
        rate = sum(s is not None for s in per) / len(per)
        auc = separation(rows, j)
        if rate < 0.5:
            why.append(f"{j} scores {rate:.0%} of the answers")
        elif auc is None or auc < 0.7:
            why.append(f"{j} does not tell its own reference from another question's (AUROC "
                       f"{'undefined' if auc is None else f'{auc:.2f}'})")
    if not why:
        return "Both judges score most answers and separate the two kinds: these rows are a measurement."
    return ("These rows are plumbing checks, not measurements of judging: " + "; ".join(why) + ". What they check is "
            "the stage around the judges: every reply recorded with its parse method, an unparseable reply counted "
            "and never read as a score, a rerun answered from the stored judgements.")


def _f(v) -> str:
    return "–" if v is None else v if isinstance(v, str) else f"{v:.2f}"


def report(a: argparse.Namespace, rows: list[dict], out: Path) -> str:
    seconds = judging_seconds(out)
    with docs_tables.Printed() as table:
        dev = "" if a.max_new_tokens == 256 else (f"; deviation: {a.max_new_tokens} new tokens per reply "
                                                  "(paper: 256, Appendix H)")
        n_q = len(rows) // len(KINDS)
        print(f"The paper's judge prompt and strict parsing, greedy{dev}. {len(rows)} answers: {n_q} questions of "
              f"the developer split ({a.per_source} per source, the first by sha256 of their sample id, one QA "
              "pair each), each answered by its own reference and by another question's. "
              f"Judging took {seconds:.0f} s, llama.cpp with {a.threads} thread(s) per judge on a 2-core machine shared "
              "with other jobs (slower than its nominal speed).\n")
        print("| judge | calls | parse rate | mean score | mean: reference | mean: other question's reference | "
              "AUROC: own vs other reference | unparsed (why) |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for j in a.judges:
            per = [r["judges"][j] for r in rows]
            scored = [p["score"] for p in per if p["score"] is not None]
            kinds = {k: [r["judges"][j]["score"] for r in rows if r["method"] == k
                         and r["judges"][j]["score"] is not None] for k in KINDS}
            why: dict[str, int] = {}
            cut = 0
            for p in per:
                if p["score"] is None:
                    why[p["method"]] = why.get(p["method"], 0) + 1
                    raw = (p["raw"] or "").strip()
                    cut += raw.startswith("{") and "}" not in raw  # a JSON object the token limit cut off
            print(f"| {j} | {len(per)} | {len(scored) / len(per):.0%} | {_mean(scored)} | "
                  f"{_mean(kinds[KINDS[0]])} | {_mean(kinds[KINDS[1]])} | {_f(separation(rows, j))} | "
                  f"{', '.join(f'{k} {v}' for k, v in sorted(why.items())) or '–'}"
                  f"{f' ({cut} a JSON object cut off by the token limit)' if cut else ''} |")
        ag = agreement(rows, *a.judges[:2])
        print(f"\n| between {a.judges[0]} and {a.judges[1]} | n (both scored) | exact agreement | Cohen's kappa | "
              "kappa, quadratic weights | Spearman's rho |")
        print("|---|---:|---:|---:|---:|---:|")
        print(f"| all answers | {ag['n']} | {_f(ag['exact'])} | {_f(ag['kappa'])} | {_f(ag['kappa_quadratic'])} | "
              f"{_f(ag['spearman'])} |")
        print(f"\n{verdict(rows, a.judges)}")
        print(f"\nEvery reply, score and parse method per answer: `--out`/{out.name}/judgements.jsonl (the stage "
              f"cache of every call: `--out`/{out.name}/cache).")
    return table.text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=str(REPO.parent / "shared" / "egoerrorvqa"))
    ap.add_argument("--judges", nargs=2, default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--per-source", type=int, default=5, help="questions per source (default 5: 20 questions, 40 "
                    "answers)")
    ap.add_argument("--max-new-tokens", type=int, default=64, help="per reply (paper: 256, Appendix H)")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads per judge (default 1: a shared "
                    "2-core machine)")
    ap.add_argument("--port", type=int, default=38471, help="first judge's loopback port (fixed: cache keys name "
                    "the endpoint, so a rerun resumes)")
    ap.add_argument("--out", default=str(REPO / "runs" / "judges-real"))
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["judges-real"])
    if a.per_source < 2:
        raise SystemExit("--per-source must be at least 2 (an answer is another question's reference)")
    if not Path(a.data_root, "procedure.json").is_file():
        raise SystemExit(f"--data-root {a.data_root} holds no EgoErrorVQA annotations (procedure.json)")
    out = Path(a.out) / f"per{a.per_source}-mnt{a.max_new_tokens}"
    rows = judge(a, answer_rows(a.data_root, a.per_source), out)
    docs_tables.publish(a, {"judges-real": report(a, rows, out)})


if __name__ == "__main__":
    main()
