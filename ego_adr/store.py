"""Where ego_adr keeps things on disk: append-only JSONL results, the cache root, atomic build-once folders and
the content fingerprint of a folder. Nothing a run has paid for is ever lost.

Predictions and judge outputs are written one row per sample, the moment the sample is done, and each line is
flushed and ``fsync``-ed before ``append`` returns. A run killed at any instant (even SIGKILL, mid-write) leaves
at worst one torn last line; :meth:`JsonlStore.repair` (run on open) cuts it away and keeps the dropped bytes in
``<path>.corrupt`` for audit, so a restarted run reads exactly the rows that were completely written, asks
:meth:`JsonlStore.done_ids` what is finished, and appends only the rest: every sample ends up exactly once.

Why JSONL and not a database: the file *is* the result a researcher inspects, diffs, concatenates across shards
and re-scores without this package. Each line is written with one ``os.write`` on an ``O_APPEND`` descriptor
(and under an advisory ``flock`` where available), so threads and processes appending to the same file never
interleave bytes within a line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from filelock import FileLock

from ego_adr.errors import UserError

try:  # advisory inter-process lock; absent on Windows, where the thread lock and O_APPEND must do
    import fcntl
except ImportError:  # pragma: no cover - non-POSIX
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

Key = str | tuple[str, ...]


def _parse_lines(data: bytes, source: str, skipped: list | None = None) -> list[dict]:
    """Valid JSON-object lines of ``data`` in order; a bad line is skipped, never raised: with a warning each, or
    appended to ``skipped`` as ``(line number, why)`` for a caller that says it once."""
    rows: list[dict] = []
    for lineno, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
            why = None if isinstance(row, dict) else "not a JSON object"
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            why = f"corrupt: {e}"
        if why is None:
            rows.append(row)
        elif skipped is not None:
            skipped.append((lineno, why))
        else:
            log.warning("%s:%d: skipping JSONL line (%s)", source, lineno, why)
    return rows


def read_jsonl(path: str | os.PathLike, skipped: list | None = None) -> list[dict]:
    """Every valid row of a JSONL file, in order, tolerating a torn last line and corrupt lines (skipped with a
    warning each, or listed in ``skipped``: see :func:`_parse_lines`). Never modifies the file; use
    :class:`JsonlStore` to repair it."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such results file (was the run started with this output folder?)")
    return _parse_lines(p.read_bytes(), str(p), skipped)


def _row_key(row: dict, key: Key):
    if isinstance(key, str):
        return row.get(key)
    vals = tuple(row.get(k) for k in key)
    return None if any(v is None for v in vals) else vals


class JsonlStore:
    """One append-only JSONL results file.

    Opening repairs a torn tail (see :meth:`repair`). ``append`` is durable when it returns and safe from many
    threads; ``rows``/``done_ids`` read the file back (tolerantly) so a resumed run sees exactly what is on disk.
    """

    def __init__(self, path: str | os.PathLike, repair: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.dropped_bytes = self.repair() if repair else 0

    # -- locking -------------------------------------------------------------------------------------------
    def _flock(self, exclusive: bool = True) -> None:
        if fcntl is not None and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)

    def _funlock(self) -> None:
        if fcntl is not None and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    # -- writing ---------------------------------------------------------------------------------------------
    def append(self, row: dict) -> None:
        """Write ``row`` as one line, flushed and fsynced before returning."""
        if not isinstance(row, dict):
            raise TypeError(f"JsonlStore rows must be dicts, got {type(row).__name__}")
        data = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"{self.path}: store is closed")
            self._flock()
            try:
                view = memoryview(data)
                while view:  # os.write may write less than asked (signals, huge rows): finish the line
                    n = os.write(self._fd, view)
                    view = view[n:]
                os.fsync(self._fd)
            finally:
                self._funlock()

    def extend(self, rows: Iterable[dict]) -> None:
        for row in rows:
            self.append(row)

    def repair(self) -> int:
        """Cut a torn or invalid last line away; return the number of bytes dropped (0 if the file was intact).

        A file not ending in a newline was killed mid-write; a last line that does not parse is equally
        untrustworthy. Either is removed from the end of the file (so the next append starts a clean line) and
        appended to ``<path>.corrupt``. Corrupt lines in the *middle* are left in place: readers skip them with
        a warning, and deleting data that is not at the tail is not this method's business.
        """
        with self._lock:
            self._flock()
            try:
                data = self.path.read_bytes()
                if not data:
                    return 0
                keep = len(data)
                if not data.endswith(b"\n"):
                    keep = data.rfind(b"\n") + 1  # 0 when the only line is torn
                else:
                    start = data.rfind(b"\n", 0, len(data) - 1) + 1
                    last = data[start:-1]
                    if last.strip() and not _parse_lines(last, str(self.path)):
                        keep = start
                if keep == len(data):
                    return 0
                dropped = data[keep:]
                with open(str(self.path) + ".corrupt", "ab") as f:
                    f.write(dropped if dropped.endswith(b"\n") else dropped + b"\n")
                    f.flush()
                    os.fsync(f.fileno())
                os.truncate(self.path, keep)
                os.fsync(self._fd)
                log.warning(
                    "%s: dropped %d bytes of a torn last line (kept in %s.corrupt)",
                    self.path,
                    len(dropped),
                    self.path,
                )
                return len(dropped)
            finally:
                self._funlock()

    # -- reading ---------------------------------------------------------------------------------------------
    def rows(self) -> list[dict]:
        """All valid rows in file order (duplicates included: the file is the record)."""
        return read_jsonl(self.path)

    def done_ids(self, key: Key = "sample_id") -> set:
        """Keys of rows already written; ``key`` may be a tuple of fields (e.g. sample, question, judge)."""
        out = set()
        for row in self.rows():
            k = _row_key(row, key)
            if k is not None:
                out.add(k)
        return out

    def __len__(self) -> int:
        return len(self.rows())

    # -- lifecycle -------------------------------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> JsonlStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:  # best effort; explicit close() or `with` is the contract
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"JsonlStore({str(self.path)!r})"


# ---- the one cache root, the one build-once routine, the one folder fingerprint ------------------------------


def write_text(path: str | os.PathLike, text: str | bytes, durable: bool = False) -> Path:
    """``text`` (UTF-8) or bytes at ``path``, its folder made if missing, atomically: written beside it, then
    renamed, so a reader never sees half a file and a crash leaves the old one. ``durable``: flushed to disk
    before the rename, for results a rerun resumes from (a rewritten predictions or judgements file). The one
    write-then-rename of the package (JSON, JSONL, pages, copied files)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # a name of this writer's own: two processes writing one file at once (two test workers filling one cache, two
    # runs sharing a --cache-dir) each rename a whole file of their own, never each other's half-written one
    tmp = path.with_name(f"{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else text)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_json(path: str | os.PathLike, data) -> Path:
    """``data`` as indented UTF-8 JSON at ``path`` (:func:`write_text`: atomically): a reader never sees a
    half-written ``run.json``, ``identity.json`` or built annotation file. The one writer of the package's JSON
    files (runs, the stream monitor, the benchmark builder, banks and probe verdicts)."""
    return write_text(path, json.dumps(data, indent=1, ensure_ascii=False, default=str))


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict], durable: bool = False) -> Path:
    """``rows`` as JSON lines at ``path``, the whole file at once (:func:`write_text`); appending a row is
    :class:`JsonlStore`'s."""
    return write_text(path, "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows), durable)


_SCOPED: list[Path] = []  # the folders of the open cache_scope() blocks, innermost last


@contextlib.contextmanager
def cache_scope(folder: str | os.PathLike) -> Iterator[Path]:
    """Every :func:`cache_root` of this process (any thread) is ``folder`` until the block ends: a run's
    ``--cache-dir`` holds every cache, those found through the root (demo set, tiny models) included. Passed
    explicitly rather than through ``$EGO_ADR_CACHE``, so the process environment is never rewritten."""
    path = Path(folder).expanduser()
    _SCOPED.append(path)
    try:
        yield path
    finally:
        _SCOPED.remove(path)


def cache_root() -> Path:
    """The innermost :func:`cache_scope`, else ``$EGO_ADR_CACHE``, else ``$XDG_CACHE_HOME/ego_adr``, else
    ``~/.cache/ego_adr``: the demo set, the tiny models, probe verdicts, procedure banks and the stage cache all
    live under it (``--cache-dir`` sets it)."""
    if _SCOPED:
        return _SCOPED[-1]
    if os.environ.get("EGO_ADR_CACHE"):
        return Path(os.environ["EGO_ADR_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ego_adr"


def check_writable_dir(path: str | os.PathLike, flag: str) -> None:
    """``path`` is (or can be created as) a folder this process can write into. Tried for real with a probe file:
    permission bits lie for root and on read-only mounts."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise UserError(f"{flag} {path} is a file, not a folder; pick a folder path")
    probe_dir = p
    while not probe_dir.exists():
        if probe_dir.parent == probe_dir:
            break
        probe_dir = probe_dir.parent
    if not probe_dir.is_dir():
        raise UserError(f"{flag} {path}: {probe_dir} is a file, not a folder; pick a folder path")
    try:
        fd, name = _probe_file(probe_dir)
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise UserError(f"{flag} {path} is not writable ({e.strerror or e}); choose a folder you can write "
                          "to") from None


def _probe_file(folder: Path) -> tuple[int, str]:
    return tempfile.mkstemp(prefix=".ego_adr_write_check_", dir=folder)


def build_once(final: Path, build: Callable[[Path], None], is_complete: Callable[[Path], bool]) -> Path:
    """Build a folder at ``final`` exactly once, atomically: ``build(tmp)`` fills a temporary sibling that is then
    renamed into place, so an interrupted build is never seen as complete and concurrent builders never see a
    half-written folder. ``is_complete(folder)`` says whether an existing folder is current (a stale one is moved
    away and rebuilt). Builders of one folder take turns on a lock (:func:`_lock_file`): whoever comes second waits
    and finds the first one's folder; a builder that takes no lock (an older version, another machine on a shared
    file system) and wins the race with a complete build has its build kept."""
    final = Path(final)
    if is_complete(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    # one builder at a time: a second process asking while the first builds waits for its folder instead of
    # building a copy of its own beside it (two test workers each built the same 45-second run, issue 46)
    try:
        lock = FileLock(str(_lock_file(final)), mode=0o666)
        lock.acquire()
    except OSError:  # a lock folder this user cannot write (another user's): build unlocked, as before the lock
        return _build(final, build, is_complete)
    try:
        if is_complete(final):
            return final
        return _build(final, build, is_complete)
    finally:
        lock.release()


def _lock_file(final: Path) -> Path:
    """The lock of :func:`build_once` for ``final``: in the system's temporary folder, named by the digest of the
    folder's absolute path, so the cache holds nothing but its folders (a lock file is never removed: removing one
    that a waiting process has open would let a third process lock a new file beside it)."""
    digest = hashlib.sha256(str(final.resolve()).encode("utf-8")).hexdigest()[:24]
    folder = Path(tempfile.gettempdir()) / "ego_adr-build-locks"
    if not folder.is_dir():
        folder.mkdir(exist_ok=True)
        with contextlib.suppress(OSError):
            folder.chmod(0o1777)  # every user's builds lock here, as in /tmp itself
    return folder / f"{digest}.lock"


def _build(final: Path, build: Callable[[Path], None], is_complete: Callable[[Path], bool]) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp", dir=final.parent))
    try:
        build(tmp / "build")
        if is_complete(final):  # another process finished first: keep its build, drop ours
            return final
        if final.exists():  # stale (its builder or inputs changed): move it away first
            old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old", dir=final.parent))
            os.replace(final, old / "stale")
            shutil.rmtree(old, ignore_errors=True)
        try:
            os.replace(tmp / "build", final)
        except OSError:
            if not is_complete(final):  # someone else won the race only if their build is complete
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


_TEXT_SUFFIXES = (".json", ".jinja", ".txt", ".model", ".yaml", ".py")
_SMALL = 64 << 20


def folder_fingerprint(folder: str | os.PathLike) -> str:
    """Content identity of a local model folder, cheap enough to take on every start: config, tokenizer and
    processor files and every file under 64 MB are hashed whole (so a deterministic rebuild of a tiny model keeps
    its fingerprint); a large weight file by name, size and its first and last MiB (hashing 15 GB of 7B weights
    would cost minutes, and a re-trained or re-saved model changes its size or those bytes)."""
    h = hashlib.sha256()
    for f in sorted(Path(folder).iterdir()):
        if not f.is_file():
            continue
        size = f.stat().st_size
        h.update(f.name.encode())
        if f.suffix in _TEXT_SUFFIXES or size < _SMALL:
            h.update(f.read_bytes())
            continue
        h.update(f":{size}".encode())
        with open(f, "rb") as fh:
            h.update(fh.read(1 << 20))
            fh.seek(-(1 << 20), os.SEEK_END)
            h.update(fh.read())
    return h.hexdigest()[:16]
