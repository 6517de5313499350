"""PREGO and prego-lm with the real small LMs (docs/real_models.md, blocks ``prego-real`` and ``prego-lm-real``):
``python -m ego_adr.monitoring evaluate`` with SmolLM2-135M-Instruct and Gemma 3 270M through ``--backend
llamacpp`` on the step streams of each benchmark, beside the blind rows run by the same command and the published
rows. Numbers as they come: small models are weak next-step predictors.

- ``prego-real``: PREGO as published (its prompt, numeric decoding: greedy, 4 new tokens), with what the replies
  were: the most frequent replies and how many distinct steps they named (one step for every step: a constant
  predictor, whatever its row says);
- ``prego-lm-real``: ``prego-lm`` (every step scored as a raw continuation, 1 - P(observed), threshold by
  cross-validation on the training recordings) as symbols, and as step names on the streams given to ``--names``
  (a name is several tokens: on EPIC-Tent-O's oracle steps the names took about four times the symbols' model
  time, and a recogniser's stream passes ten times as many validation prefixes through the noise channel), with
  AUROC and the top-1 next-step accuracy on the correct steps.

On the CaptainCook4D benchmarks (``--benchmarks captaincook4d-o captaincook4d-complete``: oracle steps, no
``--stream``) each monitor is fitted on train, its threshold chosen on the labelled validation split and scored on
test, as every CaptainCook4D monitor is (docs/online_mistakes.md), beside that benchmark's blind baselines and
reference rules run by the same command; ``prego-lm`` there with ``--candidates`` (default ``task``: the steps of
the recording's recipe and END; ``taxonomy``: all 351). Each such row's seconds are those of the run that wrote
its folder (its ``timing.json``), so they are what a user pays from a cold stage cache only when ``--out`` was new.

    python scripts/bench_real_prego.py [--benchmarks epic-tent-o assembly101-o captaincook4d-o]
        [--streams oracle-merged miniroad] [--monitors prego prego-lm] [--models smollm2-135m gemma3-270m]
        [--names epic-tent-o/oracle-merged] [--candidates task] [--prego-on BENCHMARK ...] [--out DIR]
        [--write-docs]

Every run keeps its stage cache under ``--out``: run again with the same ``--out``, the same command answers from
it in seconds. On a busy 2-core machine the whole grid took hours the first time (the load is printed above the
tables).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import docs_tables

REPO = Path(__file__).resolve().parents[1]
KEYS = ("balanced_precision", "mistake_recall", "balanced_f1", "macro_f1")
BLIND = ("flag-all", "never-alarm", "position")
CC4D = ("captaincook4d-o", "captaincook4d-complete")
COMPLETE_CC4D = ("captaincook4d-complete",)  # recordings that go on after their first mistake
COMPLETE = ("assembly101-complete", "epic-tent-complete")  # complete trials: blocks of their own (-complete)


def group_of(bench: str) -> str:
    """The suffix of the docs blocks a benchmark's rows go to: the cut step streams, their complete trials, or
    CaptainCook4D (so a run of one group rewrites its own blocks and leaves the others' rows as they are)."""
    return "-cc4d" if bench in CC4D else "-complete" if bench in COMPLETE else ""
REFERENCE = ("unseen-step", "unseen-transition")  # the rules that read only the training vocabulary
RULES = (*BLIND, *REFERENCE)  # printed beside every model row
CC4D_RULES = RULES


def _evaluate(args: list[str], folder: Path) -> dict:
    from ego_adr.monitoring.__main__ import main

    rc = main([*args, "--out", str(folder)])
    if rc != 0:
        raise SystemExit(f"evaluate {' '.join(args)} exited {rc}")
    timing = folder / "timing.json"  # the seconds live beside metrics.json (the same bytes on any --jobs)
    m = json.loads((folder / "metrics.json").read_text())  # (a folder written before timing.json: its own)
    return m | {"seconds": json.loads(timing.read_text()).get("seconds") if timing.is_file() else m.get("seconds")}


def replies(folder: Path) -> str:
    """What PREGO's replies were: the three most frequent, and how many distinct steps the replies named."""
    rows = [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines()]
    said = Counter((r["evidence"].get("replies") or [None])[0] for r in rows)
    named = Counter(tuple(r["evidence"].get("anticipated") or ()) for r in rows)
    top = ", ".join(f"{n} x `{json.dumps(t)[1:-1] if t is not None else 'failed'}`" for t, n in said.most_common(3))
    steps = sorted({s for a in named for s in a})
    if len(named) == 1:
        what = (f"a constant reply: every step anticipates {list(next(iter(named)))}" if steps
                else "a constant reply: no step ever named, every step flagged")
    else:
        what = f"{len(named)} distinct anticipated sets, naming {len(steps)} steps"
    return f"{len(rows)} replies: {top}{', ...' if len(said) > 3 else ''} ({len(said)} distinct); {what}"


def _cells(m: dict, extra: bool) -> str:
    cells = [("" if m.get(k) is None else f"{100 * float(m[k]):.1f}") for k in KEYS]
    if extra:
        top = (m.get("next_step_top1") or {}).get("accuracy")
        cells += [f"{m['auroc']:.3f}" if m.get("auroc") is not None else "",
                  "" if top is None else f"{100 * top:.1f}"]
    return " | ".join(cells)


def _cc4d_metrics(folder: Path) -> dict:
    """A CaptainCook4D monitor folder's test metrics in the step streams' shape (the keys the tables read), and
    where its alarms fall (:func:`alarm_shares`)."""
    m = json.loads((folder / "metrics.json").read_text())
    timing = json.loads((folder / "timing.json").read_text()) if (folder / "timing.json").is_file() else {}
    rows = [json.loads(x) for x in (folder / "steps.jsonl").read_text().splitlines() if x.strip()]
    return {**m["test"], **{k: m[k] for k in ("next_step_top1", "stats") if k in m}, "seconds": timing.get("seconds"),
            "load": timing.get("load_average"), "alarms": alarm_shares(rows)}


def alarm_shares(rows: list[dict]) -> dict[str, tuple[int, float]]:
    """At the macro-F1 operating point, the share of steps alarmed on (and how many steps): the correct steps before
    a recording's first mistake, the correct steps after it (complete trials only: a cut recording ends there) and
    the mistakes; what tells a monitor that finds fewer mistakes from one that alarms more on correct steps."""
    first: dict[str, int] = {}
    for r in rows:
        if r["label"] and r["episode"] not in first:
            first[r["episode"]] = r["index"]
    parts = {"correct, before the first mistake": lambda r: not r["label"] and r["index"] < first.get(r["episode"], 1e9),
             "correct, after it": lambda r: not r["label"] and r["index"] > first.get(r["episode"], 1e9),
             "mistakes": lambda r: bool(r["label"])}
    out = {}
    for name, keep in parts.items():
        got = [r["flagged_for"]["macro_f1"] for r in rows if keep(r)]
        out[name] = (len(got), sum(got) / len(got) if got else 0.0)
    return out


def _cc4d(a, out: Path, bench: str) -> tuple[list, list]:
    """One CaptainCook4D benchmark: its blind and reference rows, PREGO and prego-lm with each model."""
    common = ["evaluate", "--benchmark", bench, "--data-root", a.data_root, "--quiet", "--cache-dir",
              str(out / "cache")]
    here = out / bench / "oracle"
    from ego_adr.monitoring.__main__ import main

    if main([*common, "--monitor", ",".join(CC4D_RULES), "--out", str(here / "rules")]) != 0:
        raise SystemExit(f"evaluate {bench} {','.join(CC4D_RULES)} failed")
    rules = [(f"{r} ({'blind' if r in BLIND else 'reference'})", _cc4d_metrics(here / "rules" / r), "")
             for r in CC4D_RULES]
    lm = [*common, "--backend", "llamacpp"]
    got, rows = [], []
    for alias in a.models if "prego" in a.monitors and (a.prego_on is None or bench in a.prego_on) else ():
        f = here / f"prego-{alias}"
        _evaluate_only([*lm, "--monitor", "prego", "--model", alias], f)
        got.append((f"PREGO, {alias}", _cc4d_metrics(f), replies(f)))
    for alias in a.models if "prego-lm" in a.monitors else ():
        for pool in a.candidates:
            f = here / f"prego-lm-symbols-{pool}-{alias}"
            _evaluate_only([*lm, "--monitor", "prego-lm", "--model", alias, "--monitor-option", "form=symbols",
                            "--monitor-option", f"candidates={pool}"], f)
            m = _cc4d_metrics(f)
            st = m["stats"]
            rows.append((f"prego-lm (symbols, candidates={pool}), {alias}", m,
                         f"{m['seconds']:.0f} s (the run that wrote the folder, load average {m['load']} when it "
                         f"began): {st['likelihood_calls']} likelihood calls, {st['model_calls']} asked of the model"))
    return [(bench, "oracle", *r) for r in [*rules[:1], *got]], [(bench, "oracle", *r) for r in [*rules, *got, *rows]]


def cost_probe(a, bench: str, steps: int) -> str:
    """Seconds a likelihood call takes with each candidate set: ``prego-lm`` (fitted as the CaptainCook4D command
    fits it) stepping through ``steps`` steps of the longest test recording after its first, with the first of
    ``--models`` on llama.cpp and no stage cache, so every call is asked of the model."""
    from ego_adr.captaincook4d import benchmark as B
    from ego_adr.models.llamacpp_backend import LlamaCppModel
    from ego_adr.models.packaged import locate
    from ego_adr.online_mistakes.monitors.prego_lm import POOLS, PregoLM
    from ego_adr.online_mistakes.types import StepContext

    data = B.load(a.data_root, bench)
    rec = max(data.test.recordings, key=lambda r: len(r.steps))  # the longest (the first may be shorter than steps)
    lm = LlamaCppModel(str(locate(a.models[0])), threads=int(os.environ.get("EGO_ADR_LLAMACPP_THREADS") or 2))
    cells = []
    try:
        for pool in POOLS:
            mon = PregoLM(lm, candidates=pool, folds=0)
            mon.fit(data.train)
            mon.reset(StepContext(bench, rec.video, data.train.taxonomy))
            mon.step(0, rec.steps[0])  # untimed: the examples' prompt into the server's cache, as in a run
            load, t0 = os.getloadavg()[0], time.perf_counter()
            for i, s in enumerate(rec.steps[1:steps + 1], 1):
                mon.step(i, s)
            dt = time.perf_counter() - t0
            n = len(rec.steps[1:steps + 1])
            k = mon.stats()["candidates"]
            k = k[rec.recipe] if isinstance(k, dict) else k
            cells.append(f"candidates={pool} ({k} candidates): {n} calls in {dt:.1f} s, "
                         f"{n / dt:.2f} a second (load average {load:.1f})")
    finally:
        lm.close()
    return (f"Cost of a likelihood call, {a.models[0]} on llama.cpp, no stage cache, steps 2 to {steps + 1} of "
            f"{rec.video} (the first step untimed, so the examples' prompt is in the server's cache for both): "
            + "; ".join(cells) + ".")


def _evaluate_only(args: list[str], folder: Path) -> None:
    from ego_adr.monitoring.__main__ import main

    if main([*args, "--out", str(folder)]) != 0:
        raise SystemExit(f"evaluate {' '.join(args)} exited non-zero")


def _grid(a, out: Path) -> tuple[list, list]:
    from ego_adr.online_mistakes.published import rows as published

    prego, plm, repeats = [], [], []
    for bench in a.benchmarks:
        if bench in CC4D:
            pr, pl = _cc4d(a, out, bench)
            prego, plm = prego + pr, plm + pl
            continue
        for stream in a.streams:
            common = ["evaluate", "--benchmark", bench, "--stream", stream, "--data-root", a.data_root, "--quiet",
                      "--cache-dir", str(out / "cache")]
            here = out / bench / stream
            blind = [(f"{b} ({'blind' if b in BLIND else 'reference'})", _evaluate([*common, "--monitor", b],
                                                                                   here / b), "") for b in RULES]
            pub = [(row.label, row.values, "published") for row in published(bench, stream)]
            lm = [*common, "--backend", "llamacpp"]
            got = []
            for alias in a.models if "prego" in a.monitors and (a.prego_on is None or bench in a.prego_on) else ():
                m = _evaluate([*lm, "--monitor", "prego", "--model", alias], here / f"prego-{alias}")
                got.append((f"PREGO, {alias}", m, replies(here / f"prego-{alias}")))
            prego += [(bench, stream, *r) for r in [*blind[:1], *got, *pub]]
            rows = []
            for alias in a.models if "prego-lm" in a.monitors else ():
                for form in ("symbols", "names") if f"{bench}/{stream}" in a.names else ("symbols",):
                    f = here / f"prego-lm-{form}-{alias}"
                    m = _evaluate([*lm, "--monitor", "prego-lm", "--model", alias, "--monitor-option",
                                   f"form={form}"], f)
                    st = m["stats"]
                    rows.append((f"prego-lm ({form}), {alias}", m, f"{m['seconds']:.0f} s: {st['likelihood_calls']} "
                                 f"likelihood calls, {st['model_calls']} asked of the model (the rest from the stage "
                                 "cache)"))
            if rows:
                plm += [(bench, stream, *r) for r in [*blind, *got, *rows]]
                repeats.append((bench, stream, *_repeats(here / "flag-all")))
    return prego, plm, repeats


def _repeats(folder: Path) -> tuple[str, str]:
    """How often a step repeats one done earlier in its recording: among the mistakes, among the correct steps."""
    seen: dict[str, list] = {}
    hits, counts = [0, 0], [0, 0]
    for line in (folder / "steps.jsonl").read_text().splitlines():
        r = json.loads(line)
        prev = seen.setdefault(r["episode"], [])
        hits[r["label"]] += r["step_id"] in prev
        counts[r["label"]] += 1
        prev.append(r["step_id"])
    return tuple(f"{hits[k]} of {counts[k]}" for k in (1, 0))


def _tables(a, prego: list, plm: list, repeats: list, head: str, suffix: str, probe: str = "") -> dict[str, str]:
    """The blocks of one group of benchmarks (the step streams: ``prego-real``, ``prego-lm-real``; CaptainCook4D:
    the same names with ``-cc4d``)."""
    texts = {}
    if "prego" in a.monitors and prego:
        with docs_tables.Printed() as table:
            print("PREGO's numeric decoding (greedy, 4 new tokens); " + head)
            print("| benchmark | stream | monitor | Pb | recall | F1b | macro F1 | what the replies were |")
            print("|---|---|---|---:|---:|---:|---:|---|")
            for bench, stream, name, m, note in prego:
                print(f"| {bench} | {stream} | {name} | {_cells(m, False)} | {note} |")
        texts["prego-real" + suffix] = table.text
    if "prego-lm" in a.monitors and plm:
        how = ("threshold chosen on the labelled validation split (CaptainCook4D: no cross-validation), blind and "
               "reference rows of the same command beside" if suffix == "-cc4d" else
               "threshold by cross-validation on the training recordings")
        with docs_tables.Printed() as table:
            what = ("every candidate step (candidates= in each row) scored" if suffix == "-cc4d" else
                    "every step a candidate")
            print(f"prego-lm: {what}, 1 - P(observed), {how}; top-1: the most likely step was the one done, on the "
                  "correct steps; " + head)
            print("| benchmark | stream | monitor | Pb | recall | F1b | macro F1 | AUROC | top-1 next step | note |")
            print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
            for bench, stream, name, m, note in plm:
                print(f"| {bench} | {stream} | {name} | {_cells(m, True)} | {note} |")
            if repeats:
                print("\nSteps that repeat a step done earlier in their recording (a small model readily continues "
                      "with a step it has just read):\n")
                print("| benchmark | stream | among the mistakes | among the correct steps |")
                print("|---|---|---:|---:|")
                for bench, stream, wrong, right in repeats:
                    print(f"| {bench} | {stream} | {wrong} | {right} |")
            shares = [(b, n, m["alarms"]) for b, _, n, m, _ in plm if "alarms" in m and b in COMPLETE_CC4D]
            if shares:
                parts = list(shares[0][2])
                print("\nWhere the alarms fall on the complete trials, at the macro-F1 point (share of the steps "
                      "alarmed on; how many steps):\n")
                print("| benchmark | monitor | " + " | ".join(parts) + " |")
                print("|---|---|" + "---:|" * len(parts))
                for bench, name, al in shares:
                    print(f"| {bench} | {name} | " + " | ".join(f"{100 * al[p][1]:.1f}% ({al[p][0]})" for p in parts)
                          + " |")
            if probe:
                print("\n" + probe)
        texts["prego-lm-real" + suffix] = table.text
    return texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", default=str(REPO.parent / "shared" / "online-mistakes"))
    ap.add_argument("--benchmarks", nargs="+", default=["epic-tent-o"])
    ap.add_argument("--streams", nargs="+", default=["oracle-merged", "miniroad"])
    ap.add_argument("--monitors", nargs="+", default=["prego", "prego-lm"], choices=["prego", "prego-lm"])
    ap.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    ap.add_argument("--names", nargs="*", default=["epic-tent-o/oracle-merged"], metavar="BENCHMARK/STREAM",
                    help="where prego-lm also runs with step names (default epic-tent-o/oracle-merged)")
    ap.add_argument("--prego-on", nargs="+", default=None, metavar="BENCHMARK",
                    help="run PREGO (generative) on these of --benchmarks only (default: all of them; on "
                    "captaincook4d-complete it is one generation per step, about half an hour a model here)")
    ap.add_argument("--candidates", nargs="+", default=["task"], choices=["task", "taxonomy"],
                    help="CaptainCook4D: prego-lm's candidate steps (default task: the recipe's steps and END)")
    ap.add_argument("--cost-steps", type=int, default=0, metavar="N",
                    help="CaptainCook4D: time prego-lm's likelihood calls with each candidate set on N steps of the "
                    "longest test recording, after its first (0: not timed)")
    ap.add_argument("--out", default=None, help="keep the evaluate folders and the stage cache here (default: a "
                    "temporary folder)")
    docs_tables.add_flag(ap)
    a = ap.parse_args()
    if a.prego_on and set(a.prego_on) - set(a.benchmarks):
        ap.error(f"--prego-on {' '.join(a.prego_on)}: each must be one of --benchmarks")
    groups = list(dict.fromkeys(group_of(b) for b in a.benchmarks))
    blocks = [b + sfx for m, b in (("prego", "prego-real"), ("prego-lm", "prego-lm-real")) if m in a.monitors
              for sfx in groups]
    docs_tables.check(a, blocks)
    out = Path(a.out or tempfile.mkdtemp(prefix="prego_real_"))
    cc4d = [b for b in a.benchmarks if b in CC4D]
    probe = cost_probe(a, cc4d[0], a.cost_steps) if cc4d and a.cost_steps and "prego-lm" in a.monitors else ""
    load, t0 = os.getloadavg(), time.perf_counter()
    prego, plm, repeats = _grid(a, out)
    head = (f"{time.perf_counter() - t0:.0f} s in all on {os.cpu_count()} CPUs (load average {load[0]:.1f} when it "
            "started; a run into an --out that holds earlier runs answers from their stage cache: each prego-lm row "
            "says how much it asked of the model), llama.cpp through `--backend llamacpp` with "
            "$EGO_ADR_LLAMACPP_THREADS="
            f"{os.environ.get('EGO_ADR_LLAMACPP_THREADS', 'unset (the idle cores)')}; every prompt, reply and "
            "score in each folder's steps.jsonl\n")
    texts = {}
    for sfx in groups:
        cc = sfx == "-cc4d"
        texts |= _tables(a, [r for r in prego if group_of(r[0]) == sfx], [r for r in plm if group_of(r[0]) == sfx],
                         [r for r in repeats if group_of(r[0]) == sfx], head, sfx, probe if cc else "")
    docs_tables.publish(a, texts)


if __name__ == "__main__":
    main()
