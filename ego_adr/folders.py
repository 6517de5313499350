"""Output folders that say what they hold: one identity per folder and one writer at a time, for every entry point
that writes a folder (the run, the chunk launcher, experiments, stream, check, helpmeout, the green agent,
``eval score``/``merge``). A shared leaf, so that ``eval/``, ``stream/`` and ``helpmeout/`` use the same rule as
``run/`` without importing the layer above them; :mod:`ego_adr.run.identity` derives a run's identity and
re-exports these.

The rule (issue 11, then issue 18 for every entry point):

- an empty or new folder is claimed and its identity written;
- the same identity resumes;
- any difference stops at once with one line naming the differing settings and the ways out;
- a folder with results but no identity (written before identities existed) is treated as different;
- ``--fresh`` (issue 46) starts a folder over: once its identity shows it is this command's folder (the identity
  records the command, :data:`COMMAND_KEY`), only the files the command writes there are removed, and it says which.

:func:`claim` checks before any work; :func:`confirm` adds what is known only once the model is loaded (its
fingerprint, the probe's route). :class:`FolderLock` (an ``flock`` on ``<folder>/.lock``, released by the kernel
when the process dies, so a killed run never leaves a stale lock) stops two live writers.

Library API: ``with FolderLock(out): claim(out, my_identity_dict, fresh=...)``, where the identity is any flat
JSON-serialisable dict, or ``with OutputFolder(out, identity, flag, result_files):``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path

from ego_adr.errors import ConfigError
from ego_adr.store import check_writable_dir, write_json

IDENTITY_FILE = "identity.json"


LOCK_FILE = ".lock"


#: What ``--fresh`` removes: only files a run writes, never anything else a user keeps in the folder.
RUN_FILES = ("predictions.jsonl", "predictions.jsonl.corrupt", "predictions.retried.jsonl", "judgements.jsonl",
             "judgements.jsonl.corrupt", "metrics.json", "report.md", "run.json", IDENTITY_FILE,
             "confusion_matrix.png", "per_type_accuracy.png", "per_source_f1.png", "report.html")


#: Result files whose presence means the folder holds results (a run's, and the stream monitor's ticks/alerts).
RESULT_FILES = ("predictions.jsonl", "judgements.jsonl", "ticks.jsonl", "alerts.jsonl")


#: The key of ``identity.json`` naming the command that wrote the folder (``run``, ``eval score``, ...): what lets
#: ``--fresh`` tell a folder of its own from another command's before it removes anything (issue 46, item 1). A
#: folder written before the key existed is adopted by the same command (the key is added to what it knows).
COMMAND_KEY = "command"


#: The output flag of every command that writes a folder, and the other spelling it also takes (issue 38 item 2:
#: ``--out`` is what most commands and pages used; ``--output-dir`` was the run's).
OUT_FLAG, OUT_ALIAS = "--out", "--output-dir"

#: The ways out of a mismatch, as ``ego_adr.run`` spells its flags (other entry points pass their own).
WAYS_OUT = f"use another {OUT_FLAG}, or --fresh to discard its results and start over"


def add_out_argument(parser, help: str, *, required: bool = False, dest: str = "out", fresh: str | None = None,
                     **kw):
    """``--out`` (also spelled ``--output-dir``) on ``parser``: the one output flag of every command. ``fresh``
    (what the command writes there, in words) also adds ``--fresh``, the one way to start a folder over."""
    if fresh is not None:
        add_fresh_argument(parser, fresh)
    return parser.add_argument(OUT_FLAG, OUT_ALIAS, dest=dest, required=required, metavar="DIR", help=help, **kw)


def add_fresh_argument(parser, what: str):
    """``--fresh`` with the same help everywhere: what it removes (``what``), and that it removes nothing else."""
    return parser.add_argument(
        "--fresh", action="store_true",
        help=f"start the folder over: remove what this command wrote there ({what}), once the identity the "
             "folder records shows it is this command's, and say what was removed; a user's other files stay")


class IdentityMismatch(ConfigError):
    """The folder holds results of other settings (a user mistake: exit 2 with one line)."""


class NotOurFolder(ConfigError):
    """``--fresh`` on a folder that nothing shows this command wrote: nothing is removed (exit 2, one line)."""


class FolderBusy(ConfigError):
    """Another live run holds the folder's lock."""


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


def _show(v) -> str:
    """A value as JSON, whole: a refusal that cuts both values can hide the very difference it reports."""
    return json.dumps(v, ensure_ascii=False, default=str)


def _change(key: str, a, b) -> str:
    """One differing setting, whole: ``key A -> B``; two lists that differ in their members are shown as the
    members added and removed (the rest named by count), since two long lists side by side hide what changed."""
    if isinstance(a, list) and isinstance(b, list):
        added = [x for x in b if x not in a]
        removed = [x for x in a if x not in b]
        if added or removed:
            parts = [f"{', '.join(map(_show, added))} added" if added else "",
                     f"{', '.join(map(_show, removed))} removed" if removed else ""]
            same = len([x for x in b if x in a])
            return f"{key}: {' and '.join(p for p in parts if p)} ({same} unchanged)"
    return f"{key} {_show(a)} -> {_show(b)}"


def _flat(d: dict, prefix: str = "") -> dict:
    """``{"settings": {"frames": 8}}`` -> ``{"settings.frames": 8}``: a nested setting is named by its path, so
    a mismatch names the key that differs, not the whole group cut to 40 characters."""
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def differences(stored: dict, current: dict) -> list[str]:
    """Names of the settings whose values differ (a key only one side has counts when it has a value); a setting
    inside a group (a dict) is named by its path, e.g. ``settings.frames``."""
    a, b = _flat(stored), _flat(current)
    keys = [k for k in dict.fromkeys([*a, *b])]
    return [k for k in keys if a.get(k) != b.get(k)]


def describe_difference(out: Path, stored: dict | None, current: dict, ways: str = WAYS_OUT) -> str:
    """The one-line message of a mismatch: the differing settings (folder's value -> this run's) and the ways out.
    Every command that writes a folder says it this way (the run, stream, helpmeout, eval, monitoring)."""
    if stored is None:  # --fresh refuses such a folder too: nothing shows whose its files are
        return (f"{out} holds results but no {IDENTITY_FILE} (an older version's, or not this command's), so "
                f"nothing shows they match; move them away or use another {OUT_FLAG}")
    if stored.get("unreadable"):
        return (f"{out}/{IDENTITY_FILE} is unreadable, so its results cannot be trusted to match; move them away or "
                f"use another {OUT_FLAG}")
    kinds = stored.get(COMMAND_KEY), current.get(COMMAND_KEY)
    if None not in kinds and kinds[0] != kinds[1]:
        return f"{out} holds the results of `{kinds[0]}`, not of `{kinds[1]}`; use another {OUT_FLAG}"
    if kinds[0] is None:  # a folder written before identities named their command: compared on the rest
        current = {k: v for k, v in current.items() if k != COMMAND_KEY}
    a, b = _flat(stored), _flat(current)
    shown = "; ".join(_change(k, a.get(k), b.get(k)) for k in differences(stored, current))
    return f"{out} holds a run with other settings ({shown}); {ways}"


def _write(out: Path, ident: dict) -> None:
    write_json(Path(out) / IDENTITY_FILE, ident)


def _present(out: Path, names: tuple[str, ...]) -> list[Path]:
    """The files and folders (never a link to one) of ``names`` that ``out`` holds."""
    return [p for p in (out / n for n in dict.fromkeys(names)) if p.is_file() or (p.is_dir() and not p.is_symlink())]


def discard(out: Path, names: tuple[str, ...] = RUN_FILES) -> list[str]:
    """Remove what a command wrote in ``out``: the files (and folders) ``names``, nothing else a user keeps there;
    returns the names removed. :func:`start_over` first checks that the folder is the command's (``--fresh``)."""
    import shutil

    removed = []
    for p in _present(Path(out), names):
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()
        removed.append(p.name)
    return removed


def check_ours(out: Path, current: dict, written: tuple[str, ...] = RUN_FILES, legacy=None) -> None:
    """Before ``--fresh`` removes anything: the folder's ``identity.json`` must show it is a folder of the command
    whose identity is ``current`` (its :data:`COMMAND_KEY`; a folder written before that key, by ``legacy(stored)``,
    else by sharing at least half of its keys with ``current``). A folder holding none of ``written`` passes:
    there is nothing to remove. Raises :class:`NotOurFolder` (one line, nothing removed)."""
    out = Path(out)
    present = [p.name for p in _present(out, written) if p.name != IDENTITY_FILE]
    stored = read_identity(out)
    kind = current.get(COMMAND_KEY)
    mine = f"`{kind}`" if kind else "this command"
    if stored is None:
        if present:
            raise NotOurFolder(f"--fresh: {out} holds {', '.join(present)} but no {IDENTITY_FILE}, so nothing shows "
                               f"they are {mine}'s; nothing was removed: move them away or use another {OUT_FLAG}")
        return
    if stored.get("unreadable"):
        raise NotOurFolder(f"--fresh: {out}/{IDENTITY_FILE} is unreadable, so nothing shows the folder is {mine}'s; "
                           f"nothing was removed: use another {OUT_FLAG}")
    theirs = stored.get(COMMAND_KEY)
    if theirs is not None and kind is not None and theirs != kind:
        raise NotOurFolder(f"--fresh: {out} holds the results of `{theirs}`, not of {mine}; --fresh removes only "
                           f"its own command's files, so nothing was removed: use another {OUT_FLAG}")
    like = legacy(stored) if legacy is not None else 2 * len(set(stored) & set(current)) >= len(stored)
    if theirs is None and not like:
        others = ", ".join(sorted(set(stored) - set(current)))
        raise NotOurFolder(f"--fresh: {out}/{IDENTITY_FILE} records other kinds of settings than {mine}'s ({others}), "
                           f"so it is another command's folder; nothing was removed: use another {OUT_FLAG}")


def start_over(out: str | os.PathLike, current: dict, written: tuple[str, ...] = RUN_FILES,
               legacy=None) -> list[str]:
    """``--fresh``: once :func:`check_ours` says the folder is this command's, remove ``written`` (what the command
    writes there) and say on stderr what was removed; anything else in the folder stays. Returns the names."""
    check_ours(Path(out), current, written, legacy)
    return said_removed(out, discard(Path(out), written))


def said_removed(out: str | os.PathLike, removed: list[str]) -> list[str]:
    """The line ``--fresh`` prints on stderr: what it removed from ``out`` (or that there was nothing)."""
    say = logging.getLogger("ego_adr.folders").warning
    if removed:
        say("--fresh: removed %s from %s", ", ".join(removed), out)
    else:
        say("--fresh: %s held nothing of this command's; nothing to remove", out)
    return removed


def claim(out: str | os.PathLike, identity: dict, fresh: bool = False, ways: str = WAYS_OUT,
          result_files: tuple[str, ...] = RESULT_FILES, written: tuple[str, ...] = RUN_FILES,
          kind: str | None = None) -> str:
    """Claim ``out`` for a run of ``identity``: ``"new"`` (identity written) or ``"resume"``; raises
    :class:`IdentityMismatch` when the folder holds other settings. ``kind`` (the command, e.g. ``"run"``) is
    recorded as the identity's :data:`COMMAND_KEY`. ``fresh`` first starts the folder over (:func:`start_over`:
    ``written`` removed, once the folder shows it is this command's).

    Keys of ``identity`` the stored one lacks are adopted when the stored values agree on everything else (e.g.
    ``model_fingerprint`` added by :func:`confirm`, or the command of a folder written before it was recorded),
    so a stored identity is compared on what it knows.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    current = json.loads(json.dumps(identity, default=str))  # compare what would be written, not Python types
    if kind is not None:
        current[COMMAND_KEY] = kind
    if fresh:
        start_over(out, current, written)
    stored = read_identity(out)
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
    if common != {k: current[k] for k in common} or set(current) - set(stored) - _LATE_KEYS - {COMMAND_KEY}:
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
    no ``fcntl`` the lock is a no-op). The file holds the owner's pid for the error message.

    The holder removes the file when it lets go, so a finished run (or ``eval merge`` into a shared folder) leaves
    no ``.lock`` behind. That is safe because a taker checks, once it holds the lock, that the path still names the
    file it locked (a file removed by the previous holder in between is retried with the new one)."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.folder = Path(folder)
        self._fd: int | None = None
        self._owns_file = False  # locked, and the file at the path is the one locked: removed on release

    def acquire(self) -> FolderLock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - non-POSIX
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / LOCK_FILE
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.read(fd, 64).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise FolderBusy(f"another run (pid {owner}) is writing to {self.folder}; wait for it to finish "
                                 f"or use another {OUT_FLAG}") from None
            except OSError as e:  # a filesystem without flock (some network mounts): run unlocked, but say so
                import logging

                logging.getLogger(__name__).warning("%s: cannot lock (%s); make sure no other run writes here",
                                                    self.folder, e)
                break
            try:  # still the file at the path? (the previous holder may have removed it meanwhile)
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if same:
                self._owns_file = True
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            if self._owns_file:
                self._owns_file = False
                with contextlib.suppress(OSError):
                    os.unlink(self.folder / LOCK_FILE)  # while still holding it: see the class docstring
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
    ``result_files`` are the files that mean "this folder holds results" for that entry point; ``written`` what it
    writes there, which ``fresh`` (the command's ``--fresh``) removes once the folder shows it is ``kind``'s."""

    def __init__(self, out: str | os.PathLike, identity: dict, flag: str, result_files: tuple[str, ...],
                 ways: str | None = None, *, kind: str | None = None, fresh: bool = False,
                 written: tuple[str, ...] | None = None) -> None:
        self.out, self.identity, self.flag, self.result_files = Path(out), identity, flag, result_files
        self.kind, self.fresh, self.written = kind, fresh, written or (*result_files, IDENTITY_FILE)
        self.ways = ways or (f"pass another {flag}, or --fresh to start it over" if written else
                             f"pass another {flag}, or delete that folder's results")
        self._lock = FolderLock(self.out)

    def __enter__(self) -> Path:
        check_writable_dir(self.out, self.flag)
        self._lock.acquire()
        try:
            claim(self.out, self.identity, fresh=self.fresh, ways=self.ways, result_files=self.result_files,
                  written=self.written, kind=self.kind)
        except BaseException:
            self._lock.release()
            raise
        return self.out

    def __exit__(self, *exc) -> None:
        self._lock.release()
