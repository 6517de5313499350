"""One run as many small chunks, scheduled dynamically on a Ray cluster or local processes, then merged and scored.

    python -m ego_adr.run.launch_ray --gpus-per-chunk 1 --address auto -- --model qwen2.5-vl --data-root D \\
        --video-root V --out /shared/runs/q25
    python -m ego_adr.run.launch_ray --local --devices 0,1 -- <ego_adr.run arguments>

**Chunks, not shards.** The run's samples are cut into ``K`` small contiguous blocks (``--chunk-size`` samples
each, or ``--num-chunks K``); chunk ``i`` is exactly the command a user could type,
``python -m ego_adr.run <args> --num-shards K --shard-index i --out OUT/chunk-i``. All chunks are queued at
once and each free slot (a Ray worker with the requested CPUs/GPUs, or one of ``--max-parallel`` local
processes) takes the next one, so a slow chunk (long videos) or a failing one holds up only its own slot, never
the rest. Contiguous blocks keep the samples of one long video together (its reader is reused inside a chunk).

**Failures.** A chunk whose process exits non-zero (a crash, an OOM kill, a lost node) is retried
(``--retries``, default 2; by Ray itself with ``retry_exceptions`` in Ray mode, by the local worker otherwise).
The retry runs the same command into the same folder, and ``ego_adr.run`` resumes from that folder's
``predictions.jsonl``: finished samples are never redone. Chunks always run with ``--retry-failed``, so samples
whose failure was infrastructure (a server outage, an OOM; see ``ego_adr.run.failures``) are redone by a retry
or a rerun of the launcher, while samples that failed on their data are kept as they are. When a chunk still fails, the others finish, the
launcher names the failed chunks and their logs (``OUT/chunk-i.log``, every attempt appended) and exits 1 without
merging; rerunning the same command resumes every chunk. When all chunks succeeded, ``python -m ego_adr.eval
merge`` and ``python -m ego_adr.eval score`` write ``OUT/predictions.jsonl``, ``metrics.json`` and ``report.md``.

**Why processes.** Each chunk is a fresh process, so a CUDA OOM or a decoder segfault cannot take other chunks
down, and each keeps its own log. The price is one model load per chunk, which is why the default chunk holds
64 samples: loading a 7B model costs tens of seconds, small against 64 samples of several seconds each, while a
paper-sized run (thousands of samples) still gives many more chunks than GPUs to balance.

Ray places the processes (it sets ``CUDA_VISIBLE_DEVICES`` per task). Without ``--address`` a local Ray
instance is started (``--ray-cpus`` caps its CPUs) and stopped at the end; on several nodes ``OUT`` must be on a
file system every node can write and ego_adr must be installed on every node.

**One folder, one run.** The output folder carries the identity of the whole (unsharded) run, exactly what
``python -m ego_adr.run`` with the same arguments would write (:mod:`ego_adr.run.identity`), and the launcher holds
its lock while chunks run: a launch with other settings than the folder's refuses in one line (issue 18: it used
to replace a direct run's predictions with shallow ones), and a plain run of the same settings resumes from the
merged file. A folder holding a plain run's results (the demo's default folder, when no ``--out`` is
given after ``--``) is refused rather than merged into. ``--fresh`` (the launcher's own, before ``--``) discards
the launch -- its merged results, chunk folders, logs and plan -- and starts over; after ``--`` it is refused,
since every chunk (and every retry of a crashed one) would discard its own progress.

Test hook (hidden from ``--help``): ``--test-crash-chunk I`` kills chunk ``I``'s process (SIGKILL, like an OOM
kill) as soon as it has written its first prediction, on its first ``--test-crash-attempts`` attempts (default 1);
the tests use it to show that a crashed chunk is retried, resumes from its own file and the merged result is
unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import subprocess
import sys
import time
from pathlib import Path

from ego_adr.folders import OUT_ALIAS, OUT_FLAG, add_fresh_argument
from ego_adr.run.chunk_runner import RAY_MISSING, LaunchError, run_local, run_ray

DEFAULT_CHUNK_SIZE = 64  # see the module docstring ("Why processes")


def split_run_args(run_args: list[str]) -> tuple[list[str], str | None]:
    """Remove ``--out`` (or its other spelling ``--output-dir``) from the ``ego_adr.run`` arguments and return it;
    refuse shard flags (the launcher sets them)."""
    rest, out = [], None
    i = 0
    while i < len(run_args):
        a = run_args[i]
        name = a.split("=", 1)[0]
        if name in ("--num-shards", "--shard-index"):
            raise LaunchError(f"do not pass {name} after '--': the launcher sets it (use --num-chunks before '--')")
        if name == "--fresh":
            raise LaunchError("put --fresh before '--': the launcher discards the whole launch (after '--' every "
                              "chunk, and every retry of a crashed one, would discard its own progress)")
        if name in (OUT_FLAG, OUT_ALIAS):
            if "=" in a:
                out = a.split("=", 1)[1]
            else:
                if i + 1 >= len(run_args):
                    raise LaunchError(f"{name} needs a value")
                out = run_args[i + 1]
                i += 1
        else:
            rest.append(a)
        i += 1
    return rest, out


def resolve_run(run_args: list[str]):
    """Parse and validate the ``ego_adr.run`` arguments here, before anything starts, and count the samples.
    Returns (config, number of samples, default output folder, the whole run's identity)."""
    from ego_adr.reasoning.protocol import apply_to_samples
    from ego_adr.run.cli import config_from_args
    from ego_adr.run.config import ConfigError
    from ego_adr.run.identity import run_identity
    from ego_adr.run.runner import cache_scope, default_output_dir, load_dataset

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            cfg, _ = config_from_args(run_args)
    except SystemExit as e:  # argparse: keep its last line ("... error: argument --frames: invalid int ...")
        if e.code == 0:  # `-- --help`: the run's help was printed, which is all that was asked
            raise
        lines = [x for x in err.getvalue().splitlines() if x.strip()]
        raise LaunchError(f"ego_adr.run arguments: {lines[-1] if lines else e}") from None
    try:
        cfg = cfg.validate()
        from ego_adr.run.checks import check_model_name

        check_model_name(cfg.model, cfg.backend)  # here, not three failed attempts per chunk
        with cache_scope(cfg):  # --cache-dir also holds the demo set
            samples, info = load_dataset(cfg)
            samples = apply_to_samples(samples, cfg.protocol_settings)  # as the runner does before its identity
    except (ConfigError, FileNotFoundError) as e:
        raise LaunchError(str(e)) from None
    if not samples:
        raise LaunchError("the run has no samples (check --sources, --data-root and --limit after '--')")
    return cfg, len(samples), Path(default_output_dir(cfg)), run_identity(cfg, samples, info)


WAYS_OUT = "use another --out after '--', or --fresh before '--' to discard the launch and start over"


def claim_folder(out: Path, identity: dict, fresh: bool = False) -> None:
    """The launch folder holds one run: refuse a plain run's results (the launcher would replace them) and any
    other identity; see the module docstring ("One folder, one run"). ``fresh`` discards the launch first, once
    the folder's identity shows it is a run's (:func:`ego_adr.folders.check_ours`), and says what it removed."""
    from ego_adr.run.identity import (
        COMMAND_KEY,
        RUN_FILES,
        RUN_KIND,
        check_ours,
        claim,
        has_results,
        said_removed,
    )

    if has_results(out) and not (out / "launch.json").is_file():
        raise LaunchError(f"{out} holds the results of a plain `python -m ego_adr.run` (not a chunked launch); "
                          "give the launch its own folder with --out after '--'")
    if fresh:
        check_ours(out, {**identity, COMMAND_KEY: RUN_KIND}, (*RUN_FILES, "launch.json"))
        said_removed(out, discard_launch(out))
    claim(out, identity, ways=WAYS_OUT, kind=RUN_KIND)


def discard_launch(out: Path) -> list[str]:
    """Remove what a launch wrote in ``out`` (the merged run files, ``chunk-<i>/`` folders, their logs and attempt
    counts, ``launch.json``, the evidence page); anything else a user keeps there stays. Returns the names."""
    import re
    import shutil

    from ego_adr.run.identity import discard

    removed = discard(out)
    for p in sorted(out.iterdir()) if out.is_dir() else []:
        if re.fullmatch(r"chunk-\d+", p.name) and p.is_dir():
            shutil.rmtree(p)
        elif re.fullmatch(r"chunk-\d+\.(log|attempts)", p.name) or p.name == "launch.json":
            p.unlink()
        else:
            continue
        removed.append(p.name)
    return removed


def chunk_command(run_args: list[str], out: Path, num_chunks: int, index: int,
                  python: str = sys.executable) -> list[str]:
    return [python, "-m", "ego_adr.run", *run_args, "--out", str(out / f"chunk-{index}"),
            "--num-shards", str(num_chunks), "--shard-index", str(index), "--retry-failed", "--quiet"]


def merge_and_score(out: Path, num_chunks: int, score: bool = True) -> int:
    chunks = [str(out / f"chunk-{i}" / "predictions.jsonl") for i in range(num_chunks)]
    merged = str(out / "predictions.jsonl")
    steps = [[sys.executable, "-m", "ego_adr.eval", "merge", merged, *chunks]]
    if score:
        steps.append([sys.executable, "-m", "ego_adr.eval", "score", merged, "--out", str(out)])
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"error: {' '.join(cmd[2:4])} failed (exit {r.returncode}): {r.stderr.strip()[-500:]}",
                  file=sys.stderr)
            return r.returncode
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # a wrong launcher flag: one line, exit 2 (as every user mistake)
        raise LaunchError(f"{message} (see python -m ego_adr.run.launch_ray --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m ego_adr.run.launch_ray",
        description="Run `python -m ego_adr.run` as many small chunks scheduled dynamically (Ray tasks or local "
        "processes), retry failed chunks, then merge and score. Arguments after '--' go to ego_adr.run.",
        usage="python -m ego_adr.run.launch_ray [options] -- <ego_adr.run arguments>",
    )
    a = p.add_argument
    a("--chunk-size", type=int, default=None,
      help=f"samples per chunk (default {DEFAULT_CHUNK_SIZE}; a chunk loads the model once)")
    a("--num-chunks", "--num-shards", dest="num_chunks", type=int, default=None,
      help="number of chunks instead of --chunk-size (--num-shards is the older name)")
    a("--retries", type=int, default=2, help="retries of a failed chunk (default 2); each resumes its own file")
    a("--local", action="store_true", help="run chunks as local processes (no Ray needed)")
    a("--address", default=None, help="Ray cluster address, e.g. auto (default: start a local Ray instance)")
    a("--ray-cpus", type=int, default=None, help="CPUs of the local Ray instance (default: all)")
    a("--gpus-per-chunk", "--gpus-per-shard", dest="gpus_per_chunk", type=float, default=0.0,
      help="Ray: GPUs reserved per chunk (default 0)")
    a("--cpus-per-chunk", "--cpus-per-shard", dest="cpus_per_chunk", type=float, default=1.0,
      help="Ray: CPUs reserved per chunk (default 1)")
    a("--max-parallel", type=int, default=None,
      help="--local: chunks at once (default: the number of --devices, else 2)")
    a("--devices", default=None, help="--local: GPU ids, one per running chunk, e.g. 0,1,2,3")
    a("--no-score", action="store_true", help="merge only, do not score")
    add_fresh_argument(p, "the merged run files, chunk folders, their logs and attempt counts, launch.json")
    # test hooks (module docstring), hidden from --help
    a("--test-crash-chunk", type=int, default=None, help=argparse.SUPPRESS)
    a("--test-crash-attempts", type=int, default=1, help=argparse.SUPPRESS)
    return p


def _check_plan(out: Path, plan: dict) -> None:
    """A rerun must cut the run into the same chunks, or the chunk folders would hold other samples."""
    path = out / "launch.json"
    if path.exists():
        try:
            old = json.loads(path.read_text())
        except json.JSONDecodeError:
            old = {}
        if old and (old.get("num_chunks"), old.get("n_samples")) != (plan["num_chunks"], plan["n_samples"]):
            raise LaunchError(
                f"{out} holds a launch of {old.get('n_samples')} samples in {old.get('num_chunks')} chunks, this "
                f"one is {plan['n_samples']} samples in {plan['num_chunks']} chunks; use the same --chunk-size / "
                f"--num-chunks to resume it, or {WAYS_OUT.removeprefix('use ')}")
        if old and old.get("run_args") != plan["run_args"]:
            raise LaunchError(
                f"{out} holds a launch of `ego_adr.run {' '.join(old.get('run_args') or [])}`, this one is "
                f"`ego_adr.run {' '.join(plan['run_args'])}`; rerun with the same arguments to resume it, or "
                f"{WAYS_OUT.removeprefix('use ')}")
    path.write_text(json.dumps(plan, indent=1))


def launch(argv: list[str]) -> int:
    if "--" in argv:
        cut = argv.index("--")
        own, run_args = argv[:cut], argv[cut + 1 :]
    else:
        own, run_args = argv, []
    args = build_parser().parse_args(own)
    if args.chunk_size is not None and args.num_chunks is not None:
        raise LaunchError("give --chunk-size or --num-chunks, not both")
    for name in ("chunk_size", "num_chunks", "max_parallel"):
        v = getattr(args, name)
        if v is not None and v < 1:
            raise LaunchError(f"--{name.replace('_', '-')} must be >= 1")
    if args.retries < 0:
        raise LaunchError("--retries must be >= 0")
    if not args.local and args.devices:
        raise LaunchError("--devices is for --local; Ray assigns GPUs itself (--gpus-per-chunk)")
    if not args.local and importlib.util.find_spec("ray") is None:
        raise LaunchError(RAY_MISSING)
    rest, out_dir = split_run_args(run_args)
    dry = "--dry-run" in rest
    rest = [a for a in rest if a != "--dry-run"]
    cfg, n, default_out, identity = resolve_run(rest)
    out = (Path(out_dir) if out_dir else default_out).resolve()
    k = min(n, args.num_chunks or -(-n // (args.chunk_size or DEFAULT_CHUNK_SIZE)))
    if dry:  # the run's preflight, plus the cut; nothing is started or written
        from ego_adr.run.preflight import run_dry

        print(f"launch plan: {n} samples in {k} chunks of ~{-(-n // k)} into {out}/chunk-*")
        return run_dry(cfg)
    if args.test_crash_chunk is not None and not 0 <= args.test_crash_chunk < k:
        raise LaunchError(f"--test-crash-chunk must be in 0..{k - 1} ({k} chunks)")
    from ego_adr.run.checks import check_writable_dir
    from ego_adr.run.identity import FolderLock

    check_writable_dir(out, "the launch's output folder (choose another with --out after '--')")
    with FolderLock(out):
        claim_folder(out, identity, fresh=args.fresh)
        _check_plan(out, {"num_chunks": k, "n_samples": n, "run_args": rest})
        results = _run_chunks(args, rest, out, k, n)
    failed = [r["index"] for r in results if r["rc"] != 0]
    if failed:
        print(f"error: chunk(s) {', '.join(map(str, failed))} failed after {args.retries + 1} attempt(s); see "
              f"{out}/chunk-<i>.log. Rerunning the same command resumes: finished samples are kept.",
              file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    rc = merge_and_score(out, k, score=not args.no_score)  # after the lock: merge and score take it themselves
    if rc == 0 and not args.no_score:
        from ego_adr.eval.browser import write_run_report_html

        write_run_report_html(out)  # the merged run's evidence browser (issue 21)
    if rc == 0:
        print(f"all {k} chunks merged in {time.perf_counter() - t0:.1f}s; results in {out}/")
    return rc


def _run_chunks(args, rest: list[str], out: Path, k: int, n: int) -> list[dict]:
    cmds = [chunk_command(rest, out, k, i) for i in range(k)]
    crash = {args.test_crash_chunk: args.test_crash_attempts} if args.test_crash_chunk is not None else {}

    devices = [d.strip() for d in args.devices.split(",") if d.strip()] if args.devices else None
    parallel = args.max_parallel or (len(devices) if devices else 2)
    where = (f"{parallel} local processes" if args.local
             else f"Ray tasks ({args.address or 'local Ray instance'})")
    print(f"{n} samples in {k} chunks on {where}; logs in {out}/chunk-*.log", flush=True)
    t0 = time.perf_counter()

    def report(res: dict) -> None:
        i, rc = res["index"], res["rc"]
        status = "ok" if rc == 0 else f"FAILED (exit {rc})"
        extra = f", attempt {res['attempt']}" if res["attempt"] > 1 else ""
        extra += f", resumed after {res['resumed_from']} finished" if res["resumed_from"] else ""
        print(f"chunk {i}/{k}: {status} in {res['seconds']:.1f}s{extra}", flush=True)
        if rc != 0:
            print("  " + res["tail"].replace("\n", "\n  "), file=sys.stderr, flush=True)

    if args.local:
        results = run_local(cmds, out, parallel, devices, args.retries, crash, report)
    else:
        results = run_ray(cmds, out, args.address, args.gpus_per_chunk, args.cpus_per_chunk, args.ray_cpus,
                          args.retries, crash, report)
    print(f"{k} chunks ran in {time.perf_counter() - t0:.1f}s", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    return run_cli(lambda: launch(list(sys.argv[1:] if argv is None else argv)),
                   interrupted="interrupted; rerunning the same command resumes every chunk")


if __name__ == "__main__":
    sys.exit(main())
