"""Data-parallel shards of one run, as Ray tasks or local processes, then one merged and scored result.

    python -m ego_adr.run.launch_ray --num-shards 8 --gpus-per-shard 1 -- --model qwen2.5-vl --data-root D \\
        --video-root V --output-dir runs/q25
    python -m ego_adr.run.launch_ray --local --num-shards 2 --devices 0,1 -- <ego_adr.run args>

Why subprocesses of ``python -m ego_adr.run`` rather than calling the pipeline inside Ray workers: each shard is
then exactly the command a user could run by hand (``--num-shards K --shard-index i --output-dir OUT/shard-i``),
keeps its own log, resumes on rerun (``ego_adr.run`` appends to its predictions file), and a crash in one shard
(CUDA OOM, a segfault in a decoder) cannot take the others down. Ray only places the processes on GPUs/nodes
(it sets ``CUDA_VISIBLE_DEVICES`` for each task); ``--local`` does the same on one machine without Ray.

When every shard succeeded, ``python -m ego_adr.eval merge OUT/predictions.jsonl OUT/shard-*/predictions.jsonl``
and ``python -m ego_adr.eval score OUT/predictions.jsonl --out OUT`` produce the run's metrics and report. With
Ray on several nodes, OUT must be on a file system every node can write.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RAY_MISSING = (
    "the Ray launcher needs ray, which is not installed: pip install 'ego-adr[ray]'. "
    "On a single machine, --local runs the shards as local processes without Ray."
)
OWNED_FLAGS = ("--num-shards", "--shard-index", "--output-dir")


def split_run_args(run_args: list[str]) -> tuple[list[str], str | None]:
    """Remove ``--output-dir`` from the ``ego_adr.run`` arguments and return it; refuse shard flags (the
    launcher sets them)."""
    rest, out = [], None
    i = 0
    while i < len(run_args):
        a = run_args[i]
        name = a.split("=", 1)[0]
        if name in ("--num-shards", "--shard-index"):
            raise SystemExit(
                f"error: do not pass {name} after '--': the launcher sets it (use --num-shards before '--')"
            )
        if name == "--output-dir":
            if "=" in a:
                out = a.split("=", 1)[1]
            else:
                if i + 1 >= len(run_args):
                    raise SystemExit("error: --output-dir needs a value")
                out = run_args[i + 1]
                i += 1
        else:
            rest.append(a)
        i += 1
    return rest, out


def default_output_dir(run_args: list[str]) -> Path:
    """The folder ``ego_adr.run`` would pick for these arguments (so sharded and unsharded runs agree)."""
    from ego_adr.run.cli import config_from_args
    from ego_adr.run.runner import default_output_dir as runner_default

    cfg, _ = config_from_args(run_args)
    return Path(runner_default(cfg))


def shard_command(
    run_args: list[str], out: Path, num_shards: int, index: int, python: str = sys.executable
) -> list[str]:
    return [
        python, "-m", "ego_adr.run", *run_args,
        "--output-dir", str(out / f"shard-{index}"),
        "--num-shards", str(num_shards),
        "--shard-index", str(index),
        "--quiet",
    ]  # fmt: skip


def run_shard(
    cmd: list[str], log_path: str, env: dict | None = None, cwd: str | None = None
) -> tuple[int, float, str]:
    """Run one shard in ``cwd`` (the launcher's folder, so relative paths in the run arguments mean the same
    inside a Ray worker), its output to ``log_path``; returns (exit code, seconds, last lines of the log)."""
    t0 = time.perf_counter()
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        rc = subprocess.call(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    tail = "\n".join(Path(log_path).read_text(errors="replace").splitlines()[-15:])
    return rc, time.perf_counter() - t0, tail


def run_local(cmds: list[list[str]], out: Path, max_parallel: int, devices: list[str] | None) -> list[tuple]:
    """Shards as local processes, ``max_parallel`` at a time; shard i gets ``devices[i % len(devices)]`` as its
    only visible GPU when devices are given."""

    def one(i: int):
        env = dict(os.environ)
        if devices:
            env["CUDA_VISIBLE_DEVICES"] = devices[i % len(devices)]
        return run_shard(cmds[i], str(out / f"shard-{i}.log"), env)

    with ThreadPoolExecutor(max_workers=max_parallel) as pool:
        return list(pool.map(one, range(len(cmds))))


def run_ray(cmds: list[list[str]], out: Path, address: str | None, gpus: float, cpus: float) -> list[tuple]:
    try:
        import ray
    except ImportError as e:
        raise SystemExit(f"error: {RAY_MISSING}") from e
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
    task = ray.remote(num_gpus=gpus, num_cpus=cpus, max_retries=0)(run_shard)
    cwd = os.getcwd()
    refs = [task.remote(cmd, str(out / f"shard-{i}.log"), None, cwd) for i, cmd in enumerate(cmds)]
    return ray.get(refs)


def merge_and_score(out: Path, num_shards: int, score: bool = True) -> int:
    shards = [str(out / f"shard-{i}" / "predictions.jsonl") for i in range(num_shards)]
    merged = str(out / "predictions.jsonl")
    steps = [[sys.executable, "-m", "ego_adr.eval", "merge", merged, *shards]]
    if score:
        steps.append([sys.executable, "-m", "ego_adr.eval", "score", merged, "--out", str(out)])
    for cmd in steps:
        rc = subprocess.call(cmd)
        if rc != 0:
            print(f"error: {' '.join(cmd[2:4])} failed (exit {rc})", file=sys.stderr)
            return rc
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ego_adr.run.launch_ray",
        description="Run `python -m ego_adr.run` as K data-parallel shards (Ray tasks or local processes), "
        "then merge and score. Arguments after '--' go to ego_adr.run.",
        usage="python -m ego_adr.run.launch_ray --num-shards K [options] -- <ego_adr.run arguments>",
    )
    p.add_argument("--num-shards", type=int, required=True, help="number of shards K")
    p.add_argument("--local", action="store_true", help="run shards as local processes (no Ray needed)")
    p.add_argument("--address", default=None, help="Ray cluster address (default: start or join a local one)")
    p.add_argument(
        "--gpus-per-shard", type=float, default=0.0, help="Ray: GPUs reserved per shard (default 0)"
    )
    p.add_argument(
        "--cpus-per-shard", type=float, default=1.0, help="Ray: CPUs reserved per shard (default 1)"
    )
    p.add_argument("--max-parallel", type=int, default=None, help="--local: shards at once (default K)")
    p.add_argument(
        "--devices", default=None, help="--local: GPU ids given round-robin to shards, e.g. 0,1,2,3"
    )
    p.add_argument("--no-score", action="store_true", help="merge only, do not score")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--" in argv:
        cut = argv.index("--")
        own, run_args = argv[:cut], argv[cut + 1 :]
    else:
        own, run_args = argv, []
    args = build_parser().parse_args(own)
    if args.num_shards < 1:
        raise SystemExit("error: --num-shards must be >= 1")
    if args.max_parallel is not None and args.max_parallel < 1:
        raise SystemExit("error: --max-parallel must be >= 1")
    if not args.local and args.devices:
        raise SystemExit("error: --devices is for --local; Ray assigns GPUs itself (--gpus-per-shard)")
    if not args.local and importlib.util.find_spec("ray") is None:
        raise SystemExit(f"error: {RAY_MISSING}")
    rest, out_dir = split_run_args(run_args)
    out = (Path(out_dir) if out_dir else default_output_dir(rest)).resolve()
    out.mkdir(parents=True, exist_ok=True)
    k = args.num_shards
    cmds = [shard_command(rest, out, k, i) for i in range(k)]

    where = "local processes" if args.local else f"Ray tasks ({args.address or 'local cluster'})"
    print(f"running {k} shards as {where}; logs in {out}/shard-*.log", flush=True)
    t0 = time.perf_counter()
    if args.local:
        devices = [d.strip() for d in args.devices.split(",") if d.strip()] if args.devices else None
        results = run_local(cmds, out, args.max_parallel or k, devices)
    else:
        results = run_ray(cmds, out, args.address, args.gpus_per_shard, args.cpus_per_shard)

    failed = []
    for i, (rc, secs, tail) in enumerate(results):
        status = "ok" if rc == 0 else f"FAILED (exit {rc})"
        print(f"shard {i}/{k}: {status} in {secs:.1f}s")
        if rc != 0:
            failed.append(i)
            print("  " + tail.replace("\n", "\n  "), file=sys.stderr)
    if failed:
        print(
            f"error: shard(s) {', '.join(map(str, failed))} failed; see {out}/shard-<i>.log. Rerunning the same "
            "command resumes: finished samples are kept.",
            file=sys.stderr,
        )
        return 1
    rc = merge_and_score(out, k, score=not args.no_score)
    if rc == 0:
        print(f"all {k} shards done in {time.perf_counter() - t0:.1f}s; merged results in {out}/")
    return rc


if __name__ == "__main__":
    sys.exit(main())
