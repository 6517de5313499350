"""HelpMeOut's LLM monitor with the real small LMs (docs/real_models.md, block ``helpmeout-real``): ``python -m
ego_adr.monitoring evaluate --benchmark helpmeout --monitor llm`` with SmolLM2-135M-Instruct and Gemma 3 270M, each behind llama.cpp's
server (``--backend openai``), on the 60-episode subset of a release, beside the paper's Table 17 LLM rows and the
blind rows (random, CUSUM, precondition check) re-scored on the same episodes by the same command. Numbers as
they come: small models are weak monitors.

    python scripts/bench_real_helpmeout.py [--release DIR] [--out DIR] [--max-new-tokens 512] [--per-class 30] \
        [--threshold X] [--write-docs]

The paper's settings are the defaults: the 60-episode subset (30 correct, 30 errorful), 512 new tokens (Table 16),
the M3 threshold chosen on the validation subset. A CPU run of all of it is hours (one call per observed step,
about 1,000 per split per model), so a smaller run is three named options, each printed above the table:
``--max-new-tokens N`` (the reply asked for is three short lines), ``--per-class K`` (the first K correct and the
first K errorful episodes of the 60-episode subset, by id; the blind rows are scored on the same episodes) and
``--threshold X`` (fix the M3 threshold: no validation pass; of the printed columns only M4 depends on it).
Measured first on two episodes (llama.cpp, 2 threads, the machine busy): SmolLM2 never stops before 512 tokens (it
repeats its three lines) and took about 50 s per call, some 14 hours per model for the subset; at 32 tokens the
three lines fit and a call took 2-11 s. The docs' run used ``--max-new-tokens 32 --threshold 0.5`` (about half an
hour per model, the two side by side).

Resuming: every call goes through a stage cache in ``OUT/cache`` whose keys name the endpoint, so each model is
served on a fixed loopback port (``--port``, then ``--port`` + 1, ...); a finished evaluate folder is read back,
never rerun, after checking its settings are the ones asked for.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import docs_tables

REPO = Path(__file__).resolve().parents[1]
BLIND = ("random", "cusum", "precondition")
SETTINGS = ("episodes", "max_new_tokens", "threshold", "model", "backend", "monitor")


def _cli(args: list[str]) -> None:
    """``python -m ego_adr.monitoring evaluate --benchmark helpmeout`` with ``args`` (they start with evaluate)."""
    from ego_adr.monitoring.cli import main

    args = [args[0], "--benchmark", "helpmeout", *args[1:]]
    rc = main(args)
    if rc != 0:
        raise SystemExit(f"python -m ego_adr.monitoring {' '.join(args)} exited {rc}")


def _release(a: argparse.Namespace, out: Path) -> Path:
    if a.release:
        rel = Path(a.release)
        missing = [f for f in ("train.jsonl", "val.jsonl", "test.jsonl") if not (rel / f).is_file()]
        if missing:
            raise SystemExit(f"--release {rel} lacks {', '.join(missing)}: pass a folder written by "
                             "`python -m ego_adr.helpmeout generate`")
        return rel
    rel = out / "release"
    if not (rel / "test.jsonl").is_file():
        _cli(["generate", "--episodes", str(a.episodes), "--seed", str(a.seed), "--out", str(rel), "--quiet"])
    return rel


def _subset_files(rel: Path, out: Path, per_class: int) -> tuple[Path, Path]:
    """The test and validation files the monitors read: the release's own (the evaluate command takes the
    60-episode subset itself), or the first ``per_class`` correct and errorful episodes of each split's subset."""
    if per_class >= 30:
        return rel / "test.jsonl", rel / "val.jsonl"
    from ego_adr.helpmeout.evaluation.evalrun import subset_ids

    folder = out / f"subset-{per_class}x2"
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("test", "val"):
        lines = (rel / f"{split}.jsonl").read_text().splitlines()
        eps = [json.loads(x) for x in lines]
        ids = set(subset_ids(eps))
        pick = [i for i, ep in enumerate(eps) if ep["id"] in ids]
        keep = ([i for i in pick if eps[i]["correct"]][:per_class]
                + [i for i in pick if not eps[i]["correct"]][:per_class])
        text = "".join(lines[i] + "\n" for i in sorted(keep))
        path = folder / f"{split}.jsonl"
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    return folder / "test.jsonl", folder / "val.jsonl"


def _done(folder: Path, want: dict) -> dict | None:
    """A finished evaluate folder's metrics, if its settings are ``want`` (else a one-line refusal)."""
    if not (folder / "metrics.json").is_file():
        return None
    ident = json.loads((folder / "identity.json").read_text())
    differ = [k for k in want if str(ident.get(k)) != str(want[k])]
    if differ:
        raise SystemExit(f"{folder} holds a run with other settings ({', '.join(differ)}): pass another --out")
    return json.loads((folder / "metrics.json").read_text())


def _run_blind(test: Path, val: Path, train: Path, evals: Path, threshold: float | None) -> dict[str, dict]:
    """The blind rows on the same episodes, under the same M3 threshold rule as the LLM rows."""
    found = {}
    for mon in BLIND:
        folder = evals / mon
        m = _done(folder, {"monitor": mon, "episodes": test, "threshold": threshold})
        if m is None:
            fix = [] if threshold is None else ["--threshold", str(threshold)]
            _cli(["evaluate", "--monitor", mon, "--episodes", str(test), "--val", str(val), "--train", str(train),
                  "--out", str(folder), "--quiet", *fix])
            m = json.loads((folder / "metrics.json").read_text())
        found[mon] = m
    return found


def _run_llm(a, alias: str, port: int, test: Path, val: Path, evals: Path, cache: Path) -> tuple[dict, Path]:
    from ego_adr.models.llamacpp import LlamaCppServer
    from ego_adr.models.packaged import locate

    folder = evals / f"llm-{alias}"
    want = {"monitor": "llm", "episodes": test, "max_new_tokens": a.max_new_tokens, "threshold": a.threshold,
            "model": alias, "backend": "openai"}
    m = _done(folder, want)
    if m is None:
        args = ["evaluate", "--monitor", "llm", "--model", alias, "--backend", "openai", "--episodes", str(test),
                "--val", str(val), "--max-new-tokens", str(a.max_new_tokens), "--out", str(folder),
                "--cache-dir", str(cache), "--quiet"]
        if a.threshold is not None:
            args += ["--threshold", str(a.threshold)]
        with LlamaCppServer(locate(alias), alias, n_ctx=8192, threads=a.threads, port=port, swa_full=True) as srv:
            _cli([*args, "--base-url", srv.base_url])
        m = json.loads((folder / "metrics.json").read_text())
    return m, folder


def _view(m: dict) -> dict:
    """The subset's cells of one metrics.json (an LLM run is on the subset; a blind run carries a subset block)."""
    return m if m.get("on_subset") else m["subset"]


def _ci(s: dict, key: str, value: float) -> str:
    lo, hi = (s.get("ci95") or {}).get(key, (None, None))
    return f"{value:.3f}" + ("" if lo is None else f" [{lo:.2f}, {hi:.2f}]")


def _row(name: str, s: dict, note: str) -> str:
    return (f"| {name} | {_ci(s, 'M1', s['M1'])} | {_ci(s, 'M2', s['M2']['all'])} | {s['M2']['end']:.3f} | "
            f"{s['M2']['mid']:.3f} | {s['M4']['macro']:.3f} | {note} |")


def _deviations(a, n_eps: int) -> list[str]:
    dev = []
    if a.max_new_tokens != 512:
        dev.append(f"max new tokens {a.max_new_tokens} (paper: 512, Table 16)")
    if a.per_class < 30:
        dev.append(f"{n_eps} episodes: the first {a.per_class} correct and {a.per_class} errorful of the 60-episode "
                   "subset (paper: all 60)")
    if a.threshold is not None:
        dev.append(f"M3 threshold fixed at {a.threshold}, no validation pass (paper: chosen on validation); "
                   "only M4 of the columns below depends on it")
    return dev


def _print(a, lines: list[str], llm: dict, blind: dict, n_eps: int) -> str:
    from ego_adr.helpmeout.evaluation.paper_results import PAPER_T17_LLM

    with docs_tables.Printed() as table:
        dev = _deviations(a, n_eps)
        print("Settings: greedy, llama.cpp's server (`--backend openai`, "
              f"{a.threads} thread{'s' if a.threads > 1 else ''}); "
              + ("deviations from the paper: " + "; ".join(dev) if dev else "the paper's settings") + ".")
        spent = sum(m.get("seconds", 0) for m, _ in llm.values()) + sum(m.get("seconds", 0) for m in blind.values())
        print(f"The evaluate runs took {spent:.0f} s (their own `seconds`), on a 2-core machine shared with other jobs "
              "(a niced PREGO run, tests and the two models side by side): times are slower than the machine's "
              "nominal speed.\n")
        print("| Model / monitor | M1 | M2 | M2-end | M2-mid | M4 | note |")
        print("|---|---|---|---|---|---:|---|")
        for alias, (m, _) in llm.items():
            st = m.get("model_stats") or {}
            print(_row(f"LLM monitor, {alias} (llama.cpp)", m,
                       f"{st.get('calls')} calls ({st.get('cache_hits')} from the stage cache of an earlier run), "
                       f"{st.get('unparseable')} unparseable, {st.get('failed')} failed; {m.get('seconds', 0):.0f} s"))
        for mon, m in blind.items():
            print(_row(f"{mon} (blind)", _view(m), "same episodes"))
        for p in PAPER_T17_LLM:
            s = {"M1": p["M1"], "M2": {"all": p["M2"], "end": p["M2_end"], "mid": p["M2_mid"]},
                 "M4": {"macro": p["M4"]}, "ci95": {"M1": p["M1_ci"], "M2": p["M2_ci"]}}
            print(_row(f"{p['model']} [HelpMeOut Table 17]", s, "published, 60 episodes"))
        s = _view(next(iter(blind.values())))
        print(f"\n{n_eps} episodes ({s['errorful_episodes']} errorful); random M2 = positive-step rate "
              f"{s['M2']['positive_rate_all']:.3f}. Brackets: 95% trajectory-level bootstrap intervals. "
              "Per-step prompts, replies and scores:")
        for line in lines:
            print(f"- {line}")
    return table.text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", default=None, help="a generated release (default: generate one under --out)")
    ap.add_argument("--episodes", type=int, default=2000, help="release size when generating (default: 2000, "
                    "the docs' release of helpmeout.md)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--max-new-tokens", type=int, default=512, help="per call (Table 16: 512)")
    ap.add_argument("--per-class", type=int, default=30, help="correct and errorful episodes of the subset "
                    "(default 30: the paper's 60-episode subset)")
    ap.add_argument("--threshold", type=float, default=None, help="fix the M3 threshold (no validation pass)")
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (default 1: a shared 2-core machine)")
    ap.add_argument("--port", type=int, default=38461, help="first model's loopback port (fixed: the stage cache "
                    "keys name the endpoint, so a rerun resumes from OUT/cache)")
    ap.add_argument("--out", default=str(REPO / "runs" / "helpmeout-real"))
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    docs_tables.check(a, ["helpmeout-real"])
    if not 1 <= a.per_class <= 30 or a.max_new_tokens < 1:
        raise SystemExit("--per-class takes 1..30 and --max-new-tokens at least 1")
    out = Path(a.out)
    rel = _release(a, out)
    test, val = _subset_files(rel, out, a.per_class)
    tag = f"{'subset-60' if a.per_class >= 30 else test.parent.name}-mnt{a.max_new_tokens}" + ("" if a.threshold is None else f"-thr{a.threshold}")
    evals = out / "eval" / tag
    blind = _run_blind(test, val, rel / "train.jsonl", evals / "blind", a.threshold)
    llm, lines = {}, []
    for i, alias in enumerate(a.models):
        llm[alias] = _run_llm(a, alias, a.port + i, test, val, evals, out / "cache")
        where = llm[alias][1].relative_to(out)
        lines.append(f"{alias}: `--out`/{where}/steps.jsonl (per step), outputs.jsonl (each reply, in `evidence`), "
                     "metrics.json (calls, unparseable: `model_stats`)")
    lines.append(f"blind rows: `--out`/{(evals / 'blind').relative_to(out)}/<monitor>/steps.jsonl; "
                 f"the stage cache of every call: `--out`/cache")
    n_eps = _view(next(iter(blind.values())))["episodes"]
    text = _print(a, lines, llm, blind, n_eps)
    docs_tables.publish(a, {"helpmeout-real": text})


if __name__ == "__main__":
    main()
