"""Run identity: an output folder holds the results of exactly one set of settings, and says which.

Why: resuming into a folder is how a long run survives a crash, but a rerun with *other* settings used to append
its rows beside the old ones and title the mixed report after the last command (issue 11). So every folder
carries ``identity.json`` -- everything that changes what a row means: the model and its fingerprint, backend,
mode and the route the probe chose, protocol, frames and sampling, the prompts' versions, a digest of the samples
(annotations: ids, windows, actions, labels, procedures), a digest of the videos they use (relative path and size
of each file), sources, limit and shard. The rule, for the runner, the ablation grid and the green agent alike:

- an empty or new folder is claimed and its identity written;
- the same identity resumes;
- any difference stops at once with one line naming the differing settings and the two ways out: another
  ``--output-dir``, or ``--fresh`` to discard the folder's results and start over;
- a folder with results but no identity (written before identities existed) is treated as different.

The identity is checked in two steps: :func:`claim` before any work, with what is known from the settings and the
data; :func:`confirm` once the model is loaded, with its fingerprint and the probe's route (both unknown until
then). A resume with nothing left to do never loads the model, so only the first step applies to it.

:class:`FolderLock` (an ``flock`` on ``<folder>/.lock``, released by the kernel when the process dies, so a
killed run never leaves a stale lock) stops two live runs from writing one folder.

Library API (e.g. for the green agent): ``with FolderLock(out): claim(out, my_identity_dict, fresh=...)``, where the
identity is any flat JSON-serialisable dict; :func:`describe_difference` renders the one-line message.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ego_adr.run.config import ConfigError

IDENTITY_FILE = "identity.json"
LOCK_FILE = ".lock"
#: What ``--fresh`` removes: only files a run writes, never anything else a user keeps in the folder.
RUN_FILES = ("predictions.jsonl", "predictions.jsonl.corrupt", "predictions.retried.jsonl", "judgements.jsonl",
             "judgements.jsonl.corrupt", "metrics.json", "report.md", "run.json", IDENTITY_FILE,
             "confusion_matrix.png", "per_type_accuracy.png", "per_source_f1.png")
#: Result files whose presence means the folder holds results (a run's, and the stream monitor's ticks/alerts).
RESULT_FILES = ("predictions.jsonl", "judgements.jsonl", "ticks.jsonl", "alerts.jsonl")
#: The ways out of a mismatch, as ``ego_adr.run`` spells its flags (other entry points pass their own).
WAYS_OUT = "use another --output-dir, or --fresh to discard its results and start over"


class IdentityMismatch(ConfigError):
    """The folder holds results of other settings (a user mistake: exit 2 with one line)."""


class FolderBusy(ConfigError):
    """Another live run holds the folder's lock."""


def _digest(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def samples_digest(samples) -> str:
    """What the annotations say about the run's samples (ids, windows, actions, labels, procedures, QA pairs):
    a re-downloaded or edited annotation file changes it, a moved data folder does not."""
    recs = []
    for s in samples:
        recs.append([s.sample_id, s.source, s.task_id, s.video_id, s.start, s.end, s.action, list(s.ground_truth),
                     hashlib.sha256((s.procedure or "").encode()).hexdigest()[:12],
                     [[getattr(q, "question", None), getattr(q, "answer", None)] for q in (s.qa_pairs or [])]])
    return _digest(recs)


def videos_digest(samples, video_root: str | os.PathLike | None) -> str:
    """Relative path and size of every video the samples use ("missing" where there is none): another video
    root with other files changes it; a copied folder does not."""
    root = Path(video_root).resolve() if video_root else None
    seen: dict[str, object] = {}
    for s in samples:
        if not s.video_path or s.video_path in seen:
            continue
        p = Path(s.video_path)
        try:
            rel = str(p.resolve().relative_to(root)) if root else p.name
        except ValueError:
            rel = p.name
        try:
            seen[s.video_path] = [rel, p.stat().st_size]
        except OSError:
            seen[s.video_path] = [rel, "missing"]
    return _digest(sorted(seen.values(), key=str))


def _protocol_settings(cfg) -> dict | None:
    from dataclasses import asdict

    from ego_adr.reasoning.protocol import settings_of

    try:
        return asdict(settings_of(cfg))
    except (AttributeError, ValueError, TypeError):  # a config object without protocol fields (library use)
        return None


def run_identity(cfg, samples, info: dict) -> dict:
    """The identity of a run of ``cfg`` over ``samples`` (settings known before the model is loaded)."""
    from ego_adr.reasoning import prompts as P
    from ego_adr.reasoning.probe import PROBE_VERSION

    ident = {
        "task": cfg.task,
        "model": cfg.model or "tiny-demo",
        "backend": cfg.backend,
        "base_url": cfg.base_url if cfg.backend == "openai" else None,
        "mode": cfg.mode,
        "protocol": getattr(cfg, "protocol", None),
        "frames": cfg.frames,
        # every input the protocol sets (sampling, clip rate, resize, step text, question, answers, budget)
        "protocol_settings": _protocol_settings(cfg),
        "bank_model": getattr(cfg, "bank_model", None),
        "match": cfg.match,
        "narration": cfg.narration,
        "narration_source": cfg.narration_source,
        "bank_builder": cfg.bank_builder,
        "dtype": cfg.dtype,
        "max_pixels_per_frame": cfg.max_pixels_per_frame,
        "gpu_memory": cfg.gpu_memory,
        "max_new_tokens": cfg.max_new_tokens,
        "seed": cfg.seed,
        "prompts": _digest(getattr(P, "VERSIONS", {})),
        "probe_version": PROBE_VERSION,
        "sources": list(info.get("sources") or []),
        "limit": cfg.limit,
        "shard": f"{cfg.shard_index}/{cfg.num_shards}",
        "annotations": samples_digest(samples),
        "videos": videos_digest(samples, info.get("video_root")),
    }
    if cfg.task == "open-end":
        ident.update(judges=list(cfg.judges), judge_backend=cfg.judge_backend, qa_selection=cfg.qa_selection)
    return ident


def read_identity(out: Path) -> dict | None:
    p = Path(out) / IDENTITY_FILE
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {"unreadable": True}
    return data if isinstance(data, dict) else {"unreadable": True}


def has_results(out: Path, result_files: tuple[str, ...] = RESULT_FILES) -> bool:
    return any((Path(out) / f).is_file() and (Path(out) / f).stat().st_size > 0 for f in result_files)


def _short(v) -> str:
    text = json.dumps(v, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def differences(stored: dict, current: dict) -> list[str]:
    """Names of the settings whose values differ (a key only one side has counts when it has a value)."""
    keys = [k for k in dict.fromkeys([*stored, *current])]
    return [k for k in keys if stored.get(k) != current.get(k)]


def describe_difference(out: Path, stored: dict | None, current: dict, ways: str = WAYS_OUT) -> str:
    """The one-line message of a mismatch: the differing settings (folder's value -> this run's) and the ways out."""
    if stored is None:
        return f"{out} holds results written without a run identity (older version); {ways}"
    if stored.get("unreadable"):
        return f"{out}/{IDENTITY_FILE} is unreadable, so its results cannot be trusted to match; {ways}"
    diff = differences(stored, current)
    shown = ", ".join(f"{k} {_short(stored.get(k))} -> {_short(current.get(k))}" for k in diff[:6])
    more = f" (+{len(diff) - 6} more)" if len(diff) > 6 else ""
    return f"{out} holds a run with other settings ({shown}{more}); {ways}"


def _write(out: Path, ident: dict) -> None:
    p = Path(out) / IDENTITY_FILE
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps(ident, indent=1, ensure_ascii=False, default=str))
    tmp.replace(p)


def discard(out: Path) -> list[str]:
    """Remove the run files of ``out`` (``--fresh``); returns the names removed."""
    removed = []
    for name in RUN_FILES:
        p = Path(out) / name
        if p.is_file():
            p.unlink()
            removed.append(name)
    return removed


def claim(out: str | os.PathLike, identity: dict, fresh: bool = False, ways: str = WAYS_OUT,
          result_files: tuple[str, ...] = RESULT_FILES) -> str:
    """Claim ``out`` for a run of ``identity``: ``"new"`` (identity written) or ``"resume"``; raises
    :class:`IdentityMismatch` when the folder holds other settings. ``fresh`` discards its results first.

    Keys of ``identity`` the stored one lacks are adopted when the stored values agree on everything else (e.g.
    ``model_fingerprint`` added by :func:`confirm`), so a stored identity is compared on what it knows.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if fresh:
        discard(out)
    stored = read_identity(out)
    current = json.loads(json.dumps(identity, default=str))  # compare what would be written, not Python types
    if stored is None or (not stored.get("unreadable") and not has_results(out, result_files)):
        # no identity yet, or one left by a run that stopped before its first result (a memory-plan refusal, an
        # unreachable probe): the folder holds nothing, so the corrected command may take it
        if stored is None and has_results(out, result_files):
            raise IdentityMismatch(describe_difference(out, None, current, ways))
        _write(out, current)
        return "new"
    if stored.get("unreadable"):
        raise IdentityMismatch(describe_difference(out, stored, current, ways))
    common = {k: v for k, v in stored.items() if k in current}
    if common != {k: current[k] for k in common} or set(current) - set(stored) - _LATE_KEYS:
        raise IdentityMismatch(describe_difference(out, {k: stored.get(k) for k in current}, current, ways))
    return "resume"


#: Keys known only once the model is loaded (see :func:`confirm`): a claim before loading does not have them.
_LATE_KEYS = {"model_fingerprint", "route"}


def confirm(out: str | os.PathLike, late: dict) -> None:
    """Second step, once the model is loaded: check (or record) ``late`` keys such as ``model_fingerprint`` and
    ``route`` against the folder's identity. Raises :class:`IdentityMismatch` on a difference."""
    out = Path(out)
    stored = read_identity(out) or {}
    late = json.loads(json.dumps(late, default=str))
    known = {k: stored[k] for k in late if k in stored}
    if known != {k: late[k] for k in known}:
        raise IdentityMismatch(describe_difference(out, {**stored, **known}, {**stored, **late}))
    if any(k not in stored for k in late):
        _write(out, {**stored, **late})


class FolderLock:
    """Exclusive advisory lock on ``<folder>/.lock`` for the lifetime of a run (POSIX ``flock``; where there is
    no ``fcntl`` the lock is a no-op). The file holds the owner's pid for the error message."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise FolderBusy(f"another run (pid {owner}) is writing to {self.folder}; wait for it to finish "
                             "or use another --output-dir") from None
        except OSError as e:  # a filesystem without flock (some network mounts): run unlocked, but say so
            import logging

            logging.getLogger(__name__).warning("%s: cannot lock (%s); make sure no other run writes here",
                                                self.folder, e)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class OutputFolder:
    """What every entry point that writes a folder does first (``with OutputFolder(out, identity, ...):``): check
    it can be written (a probe file, since root ignores permission bits), take its lock, and claim it for
    ``identity`` -- the same settings resume or overwrite their own results, others refuse in one line.
    ``result_files`` are the files that mean "this folder holds results" for that entry point."""

    def __init__(self, out: str | os.PathLike, identity: dict, flag: str, result_files: tuple[str, ...],
                 ways: str | None = None) -> None:
        self.out, self.identity, self.flag, self.result_files = Path(out), identity, flag, result_files
        self.ways = ways or f"pass another {flag}, or delete that folder's results"
        self._lock = FolderLock(self.out)

    def __enter__(self) -> Path:
        from ego_adr.run.checks import check_writable_dir

        check_writable_dir(self.out, self.flag)
        self._lock.acquire()
        try:
            claim(self.out, self.identity, ways=self.ways, result_files=self.result_files)
        except BaseException:
            self._lock.release()
            raise
        return self.out

    def __exit__(self, *exc) -> None:
        self._lock.release()
