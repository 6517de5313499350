"""Running the chunks of :mod:`ego_adr.run.launch_ray`: one attempt of one chunk as a process, local slots that
take the next chunk as they free up, and Ray tasks that Ray schedules and retries (see that module's docstring
for the rules: chunks, retries that resume, the crash test hook)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ego_adr.errors import UserError

RAY_MISSING = (
    "the Ray launcher needs ray, which is not installed: pip install 'ego-adr[ray]'. "
    "On a single machine, --local runs the chunks as local processes without Ray."
)


class LaunchError(UserError):
    """A user mistake found before any chunk starts: one line, exit 2."""


def _rows(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the chunk process gets SIGTERM when the worker that started it dies (a killed Ray worker must not
    leave a process holding a GPU)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - best effort only
        pass


def run_chunk(cmd: list[str], out: str, index: int, cwd: str | None = None, env: dict | None = None,
              crash_attempts: int = 0) -> dict:
    """Run one chunk (one attempt) in ``cwd`` (the launcher's folder, so relative paths in the run arguments mean
    the same inside a Ray worker); output appended to ``OUT/chunk-i.log``. ``crash_attempts``: the test hook (see
    the module docstring). Returns exit code, seconds, attempt number, rows found at start and the log's tail."""
    outp = Path(out)
    attempts_file = outp / f"chunk-{index}.attempts"
    attempt = int(attempts_file.read_text() or 0) + 1 if attempts_file.exists() else 1
    attempts_file.write_text(str(attempt))
    preds = outp / f"chunk-{index}" / "predictions.jsonl"
    resumed = _rows(preds)
    log_path = outp / f"chunk-{index}.log"
    t0 = time.perf_counter()
    with open(log_path, "a") as log:
        log.write(f"--- attempt {attempt}: {' '.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        try:
            if attempt <= crash_attempts:
                while proc.poll() is None and _rows(preds) <= resumed:
                    time.sleep(0.02)
                if proc.poll() is None:
                    proc.kill()
                log.write(f"--- test hook: chunk {index} killed on attempt {attempt} with "
                          f"{_rows(preds)} prediction(s) written\n")
            rc = proc.wait()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if attempt <= crash_attempts and rc == 0:
            rc = -int(signal.SIGKILL)  # it finished before the kill landed: still counts as the injected failure
    tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-15:])
    return {"index": index, "rc": rc, "seconds": time.perf_counter() - t0, "attempt": attempt,
            "resumed_from": resumed, "tail": tail}


class ChunkFailed(Exception):
    """Raised inside a Ray task for a failed attempt, so that Ray retries it (``retry_exceptions``)."""

    def __init__(self, result: dict):
        super().__init__(f"chunk {result['index']} exited with {result['rc']} (log: chunk-{result['index']}.log)")
        self.result = result

    def __reduce__(self):  # Ray pickles the exception: rebuild it from the result, not from the message
        return ChunkFailed, (self.result,)


def _ray_chunk(cmd, out, index, cwd, crash_attempts):
    res = run_chunk(cmd, out, index, cwd=cwd, crash_attempts=crash_attempts)
    if res["rc"] != 0:
        raise ChunkFailed(res)
    return res


def run_local(cmds, out: Path, max_parallel: int, devices: list[str] | None, retries: int, crash: dict,
              report) -> list[dict]:
    """Chunks as local processes, ``max_parallel`` at a time, each taken by the next free worker; a worker holds
    one GPU of ``devices`` (cycled when there are more workers than GPUs) for the chunk it runs."""
    slots: queue.Queue = queue.Queue()
    for j in range(max_parallel):
        slots.put(devices[j % len(devices)] if devices else None)
    stopping = threading.Event()  # Ctrl-C: the chunks stop with the terminal's SIGINT; start and retry nothing

    def one(i: int) -> dict:
        dev = slots.get()
        try:
            env = dict(os.environ)
            if dev is not None:
                env["CUDA_VISIBLE_DEVICES"] = dev
            res = {"index": i, "rc": 130, "seconds": 0.0, "attempt": 0, "resumed_from": 0, "tail": "interrupted"}
            for _ in range(retries + 1):
                if stopping.is_set():
                    return res
                res = run_chunk(cmds[i], str(out), i, env=env, crash_attempts=crash.get(i, 0))
                if res["rc"] == 0:
                    break
            report(res)
            return res
        finally:
            slots.put(dev)

    with ThreadPoolExecutor(max_workers=max_parallel) as pool:
        try:
            return list(pool.map(one, range(len(cmds))))
        except KeyboardInterrupt:
            stopping.set()
            raise


def _package_parent() -> str:
    import ego_adr

    return str(Path(ego_adr.__file__).resolve().parents[1])


def run_ray(cmds, out: Path, address: str | None, gpus: float, cpus: float, ray_cpus: int | None,
            retries: int, crash: dict, report) -> list[dict]:
    try:
        import ray
    except ImportError as e:
        raise LaunchError(RAY_MISSING) from e
    if address is None:
        # a local instance's workers inherit this environment: make them import this same ego_adr
        parts = [_package_parent()] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    ray.init(address=address, num_cpus=ray_cpus if address is None else None, include_dashboard=False,
             log_to_driver=False, ignore_reinit_error=True)
    try:
        task = ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=retries, retry_exceptions=True)(_ray_chunk)
        cwd = os.getcwd()
        refs = {task.remote(cmd, str(out), i, cwd, crash.get(i, 0)): i for i, cmd in enumerate(cmds)}
        results: dict[int, dict] = {}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for ref in done:
                i = refs[ref]
                try:
                    res = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - retries exhausted (or the task could not run at all)
                    cause = getattr(e, "cause", None) or e
                    res = getattr(cause, "result", None) or {"index": i, "rc": 1, "seconds": 0.0, "attempt": 0,
                                                            "resumed_from": 0, "tail": f"{type(e).__name__}: {e}"}
                results[i] = res
                report(res)
        return [results[i] for i in range(len(cmds))]
    finally:
        ray.shutdown()


