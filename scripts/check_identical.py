"""Do two checkouts write the same results? Runs each benchmark's documented commands in a *before* checkout and an
*after* checkout (each into its own folder, each with a cold cache of its own) and compares what they wrote.

    git archive main | tar -x -C /tmp/before      # a checkout of the code before the change
    python scripts/check_identical.py --before /tmp/before --benchmarks helpmeout,egoadr-stream
    python scripts/check_identical.py --before /tmp/before --benchmarks epic-tent-o --full
    python scripts/check_identical.py --before /tmp/before --benchmarks assembly101-o --full --side before  # now, then
    python scripts/check_identical.py --before /tmp/before --benchmarks assembly101-o --full --side after   # later

Why: a change of structure (issue 43 moved HelpMeOut and the video stream onto one harness; its stage 2 moves the
step streams) must not change a number. Compared, byte for byte, in every folder both sides wrote: ``steps.jsonl``
(and ``steps/*.jsonl``), ``metrics.json``, ``summary.json``, each monitor's ``outputs.jsonl`` / ``outputs/*.jsonl``
and ``identity.json``. A field that holds a timing is taken out of both sides before the comparison and named in
the output (:data:`TIMING`: ``seconds``, ``timing``, ``processing_s``, ``real_time_factor``, ``wall_s``,
``train_seconds``); the
libraries' ``versions`` are the same on one machine and stay in. A file only one side wrote is listed (the video
stream writes ``steps/`` since issue 43). Exit 0 when every compared file is identical, 1 otherwise.

Each run of :data:`RUNS` is a command for the *before* side and one for the *after* side (the same when the
command did not change); ``{out}`` is the side's folder, ``{data}`` the step streams' data root. ``--full`` runs
the documented commands as the docs give them (minutes to an hour on 2 cores); the default is a quick version of
each (a smaller release, fewer monitors), enough to see a changed byte.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

TIMING = ("seconds", "timing", "processing_s", "real_time_factor", "wall_s", "train_seconds")
COMPARED = ("steps.jsonl", "steps/*.jsonl", "metrics.json", "summary.json", "outputs.jsonl", "outputs/*.jsonl",
            "identity.json")
DATA = Path(__file__).resolve().parents[1].parent / "shared" / "online-mistakes"

_GEN = ["-m", "ego_adr.helpmeout", "generate", "--seed", "0", "--out", "{out}/release", "--quiet"]
_QUICK_HMO = ("random", "cusum", "precondition", "replanner", "egoadr", "egoadr-knowledge", "seq2seq")
_FULL_HMO = ("random", "cusum", "precondition", "seq2seq", "seq2seq-sg", "sgt", "seq2seq-oneclass",
             "seq2seq-sg-oneclass", "sgt-oneclass", "replanner", "egoadr", "egoadr-online", "replanner-privileged",
             "egoadr-knowledge", "egoadr-privileged")
_LLM = ["--monitor", "llm", "--model", "tiny", "--episodes", "{out}/release/test.jsonl", "--out", "{out}/eval/llm-tiny",
        "--subset", "--max-new-tokens", "16", "--quiet"]


def _hmo(monitor: str) -> tuple[list[str], list[str]]:
    tail = ["--monitor", monitor, "--episodes", "{out}/release/test.jsonl", "--out", f"{{out}}/eval/{monitor}",
            "--quiet"]
    return (["-m", "ego_adr.helpmeout", "evaluate", *tail],
            ["-m", "ego_adr.monitoring", "evaluate", "--benchmark", "helpmeout", *tail])


def _helpmeout(full: bool) -> list[tuple[list[str], list[str]]]:
    gen = [*_GEN, "--episodes", "2000" if full else "400"]
    llm = _LLM if full else [*_LLM, "--limit", "30"]
    return [(gen, gen), *(_hmo(m) for m in (_FULL_HMO if full else _QUICK_HMO)),
            (["-m", "ego_adr.helpmeout", "evaluate", *llm],
             ["-m", "ego_adr.monitoring", "evaluate", "--benchmark", "helpmeout", *llm])]


def _stream(full: bool) -> list[tuple[list[str], list[str]]]:
    flags = ["--mode", "shallow", "--frames", "4", "--max-new-tokens", "16", "--quiet"]
    runs = [(["-m", "ego_adr.stream", "--evaluate", *flags, "--out", "{out}/synth"],
             ["-m", "ego_adr.monitoring", "evaluate", "--benchmark", "egoadr-stream", "--monitor", "all", *flags,
              "--out", "{out}/synth"])]
    if full:  # the diagnostic row of docs/stream.md
        ref = [*flags, "--narration-source", "reference", "--out", "{out}/synth-ref"]
        runs.append((["-m", "ego_adr.stream", "--evaluate", "--baselines", "none", *ref],
                     ["-m", "ego_adr.monitoring", "evaluate", "--benchmark", "egoadr-stream", "--monitor", "egoadr",
                      *ref]))
    return runs


def _steps(benchmark: str, full: bool) -> list[tuple[list[str], list[str]]]:
    monitor = "all" if full else "count-based"
    cmd = ["-m", "ego_adr.monitoring", "evaluate", "--benchmark", benchmark, "--stream", "oracle", "--monitor",
           monitor, "--data-root", "{data}", "--out", "{out}/" + benchmark, "--quiet", "--jobs", "1"]
    return [(cmd, cmd)]


RUNS = {"helpmeout": _helpmeout, "egoadr-stream": _stream,
        **{b: (lambda full, b=b: _steps(b, full)) for b in ("assembly101-o", "epic-tent-o", "assembly101-complete",
                                                            "epic-tent-complete")}}


def _run(checkout: Path, side: Path, argv: list[str], data: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout), "EGO_ADR_CACHE": str(side / "cache"), "EGO_ADR_JOBS": "1"}
    args = [a.replace("{out}", str(side)).replace("{data}", str(data)) for a in argv]
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *args], cwd=side, env=env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{checkout}: python {' '.join(args)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return time.perf_counter() - t0


def _without(value, names: set[str], dropped: set[str]):
    if isinstance(value, dict):
        dropped |= names & set(value)
        return {k: _without(v, names, dropped) for k, v in value.items() if k not in names}
    if isinstance(value, list):
        return [_without(v, names, dropped) for v in value]
    return value


def same(a: Path, b: Path) -> tuple[bool, set[str]]:
    """Whether two files hold the same bytes once the timing fields are taken out; the fields taken out."""
    if a.read_bytes() == b.read_bytes():
        return True, set()
    dropped: set[str] = set()
    try:
        if a.suffix == ".json":
            x, y = (_without(json.loads(p.read_text()), set(TIMING), dropped) for p in (a, b))
        else:
            x, y = ([_without(json.loads(line), set(TIMING), dropped) for line in p.read_text().splitlines()]
                    for p in (a, b))
    except json.JSONDecodeError:
        return False, set()
    return x == y, dropped


def _keys(a: Path, b: Path) -> str:
    """Where two JSON files differ: the top-level keys (a JSON-lines file: its first differing line)."""
    try:
        if a.suffix == ".json":
            x, y = json.loads(a.read_text()), json.loads(b.read_text())
            if isinstance(x, dict) and isinstance(y, dict):
                keys = [k for k in dict.fromkeys([*x, *y]) if x.get(k) != y.get(k)]
                return f": {', '.join(f'{k} {json.dumps(x.get(k))[:60]} -> {json.dumps(y.get(k))[:60]}' for k in keys)}"
        lines = list(zip(a.read_text().splitlines(), b.read_text().splitlines(), strict=False))
        return next((f": line {k + 1}" for k, (p, q) in enumerate(lines) if p != q), ": a line more or less")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""


def compare(before: Path, after: Path) -> int:
    """Print one line per compared file; the number that differ."""
    def files(root: Path) -> set[Path]:
        return {p.relative_to(root) for pat in COMPARED for p in root.rglob(pat.split("/")[-1])
                if "cache" not in p.relative_to(root).parts and p.match(pat)}

    fa, fb = files(before), files(after)
    bad = 0
    for rel in sorted(fa | fb):
        if rel not in fa or rel not in fb:
            print(f"  only {'after' if rel in fb else 'before'}: {rel}")
            continue
        ok, dropped = same(before / rel, after / rel)
        bad += not ok
        print(f"  {'same' if ok else 'DIFFERS'}: {rel}" + (f" (without {', '.join(sorted(dropped))})" if dropped
                                                            else "") + ("" if ok else _keys(before / rel, after / rel)))
    return bad


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="the checkout of the code before the change")
    p.add_argument("--after", default=str(Path(__file__).resolve().parents[1]), help="default: this checkout")
    p.add_argument("--benchmarks", default="helpmeout,egoadr-stream", help=f"comma-separated: {', '.join(RUNS)}")
    p.add_argument("--work", default="/tmp/check_identical", help="where both sides write (emptied first)")
    p.add_argument("--data-root", default=str(DATA), help="the step streams' data root")
    p.add_argument("--full", action="store_true", help="the documented commands as the docs give them")
    p.add_argument("--side", choices=("both", "before", "after"), default="both",
                   help="run one side only: `before` leaves WORK/<benchmark>/before for a later `after` run, which "
                   "compares with it (the before side of a --full run costs an hour of CPU: run it while you work)")
    a = p.parse_args(argv)
    import shutil

    bad = 0
    for name in a.benchmarks.split(","):
        if name not in RUNS:
            raise SystemExit(f"--benchmarks: unknown {name!r}; choose from {', '.join(RUNS)}")
        sides = {"before": Path(a.work) / name / "before"} if a.side == "after" else {}
        if a.side == "after" and not sides["before"].is_dir():
            raise SystemExit(f"--side after: no {sides['before']}; run --side before first")
        for side, checkout in (("before", a.before), ("after", a.after)):
            if a.side not in ("both", side):
                continue
            # both sides run in the same folder (paths are part of identities and metrics), then move aside
            folder, kept = Path(a.work) / name / "run", Path(a.work) / name / side
            for f in (folder, kept):
                shutil.rmtree(f, ignore_errors=True)
            folder.mkdir(parents=True)
            spent = sum(_run(Path(checkout).resolve(), folder, argv, Path(a.data_root))
                        for argv in (r[0 if side == "before" else 1] for r in RUNS[name](a.full)))
            folder.rename(kept)
            sides[side] = kept
            print(f"{name} {side}: {spent:.1f} s", flush=True)
        if len(sides) == 2:
            bad += compare(sides["before"], sides["after"])
    print("identical" if not bad else f"{bad} file(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
