"""Stage cache: a model call is paid for once, whatever run, ablation or re-score needs it again.

Every call is keyed by everything that can change its output (issue 5, item 1): the model fingerprint (id +
revision or weights hash), the backend, the stage, the prompt name and version, a digest of the rendered
messages (roles, text parts and the content digest of every frames part, in order) and the generation
parameters. A changed prompt version, model or decoding setting therefore never reuses stale output, while an
ablation that repeats an identical narration call gets it for free.

Storage choice: one SQLite file in WAL mode (stdlib, one row per key, ``INSERT OR IGNORE``). WAL lets shard
processes and threads read while one writes; a committed row survives SIGKILL of the writer; and a lookup is an
index probe instead of re-reading a growing JSONL file. Keep the file on a local disk (SQLite's locking is not
reliable on network filesystems); shards on several nodes should each use a local cache and merge with
:meth:`StageCache.merge_from`.

Only successful generations are stored: a failed call (out of memory, bad input) is retried next time, and an
infrastructure failure (connection, timeout, 5xx, OOM: ``Generation.retryable``) is never stored in any form.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

from ego_adr.models.base import Capabilities, Frames, Generation, Request

KEY_SCHEMA = 1  # bump when the key recipe changes, so old rows are never matched by a different recipe
DEFAULT_FILENAME = "stage_cache.sqlite"


def frames_digest(frames: Frames) -> str:
    """``Frames.digest()`` computed once per Frames object (hashing 32 frames on every call is not free).

    The digest is memoised on the object together with the identity and shape of its array, so replacing
    ``frames.array`` invalidates it; mutating the array *in place* after the first digest is not supported.
    """
    arr = frames.array
    tag = (id(arr), arr.shape, float(frames.fps))
    memo = getattr(frames, "_ego_adr_digest", None)
    if memo is not None and memo[0] == tag:
        return memo[1]
    d = frames.digest()
    try:
        frames._ego_adr_digest = (tag, d)  # type: ignore[attr-defined]
    except AttributeError:  # pragma: no cover - a slotted Frames would simply not memoise
        pass
    return d


def messages_digest(request: Request) -> str:
    """sha256 of the rendered conversation: roles, text parts and frames digests (with timestamps), in order."""
    msgs = []
    for m in request.messages:
        parts = []
        for p in m.content:
            if isinstance(p, Frames):
                parts.append(["frames", frames_digest(p), [round(float(t), 6) for t in p.timestamps]])
            elif isinstance(p, str):
                parts.append(["text", p])
            else:
                raise TypeError(f"message part must be str or Frames, got {type(p).__name__}")
        msgs.append([m.role, parts])
    blob = json.dumps(msgs, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def request_key(model, request: Request, backend: str) -> str:
    """The cache key of one call of ``model`` (any VLM) through ``backend`` on ``request``."""
    meta = request.meta or {}
    canon = {
        "schema": KEY_SCHEMA,
        "model": model.fingerprint,
        "backend": backend,
        "stage": meta.get("stage"),
        "prompt": meta.get("prompt"),
        "prompt_version": meta.get("prompt_version"),
        "messages": messages_digest(request),
        "generation": request.config.key(),
    }
    blob = json.dumps(canon | _numerics(model), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _numerics(model) -> dict:
    """What besides the weights decides a backend's numbers, where the backend says (``model.numerics``: llama.cpp's
    thread count, :mod:`ego_adr.models.llamacpp_backend`): part of the key, so an answer is never served to a run
    that would have computed another. Not part of the model's fingerprint, which names the weights (a run's
    identity, the probe's trials); absent for every other backend, whose keys stay as they were."""
    numerics = getattr(model, "numerics", None)
    return {"numerics": numerics} if numerics else {}


def likelihood_key(model, request, backend: str) -> str:
    """The cache key of one candidate-likelihood call (:mod:`ego_adr.models.likelihood`): its own kind, so it can
    never meet a generation's key."""
    from ego_adr.models.likelihood import request_digest

    meta = request.meta or {}
    canon = {"schema": KEY_SCHEMA, "kind": "loglikelihood", "model": model.fingerprint, "backend": backend,
             "stage": meta.get("stage"), "prompt": meta.get("prompt"), "prompt_version": meta.get("prompt_version"),
             "request": request_digest(request)}
    blob = json.dumps(canon | _numerics(model), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class StageCache:
    """Persistent key → generated text store (SQLite, WAL). ``path`` is a ``.sqlite``/``.db`` file or a folder
    (then ``<folder>/stage_cache.sqlite``). Safe to share between threads; several processes may open the same
    file."""

    def __init__(self, path: str | os.PathLike) -> None:
        p = Path(path)
        if p.suffix not in (".sqlite", ".db", ".sqlite3"):
            p = p / DEFAULT_FILENAME
        p.parent.mkdir(parents=True, exist_ok=True)
        self.path = p
        self._lock = threading.Lock()
        # Autocommit: each put is its own durable transaction; timeout waits out another process's write lock.
        self._conn = sqlite3.connect(str(p), timeout=60.0, check_same_thread=False, isolation_level=None)
        with self._lock:
            for attempt in range(20):  # two processes creating one file at once: switching it to WAL can meet
                try:  # the other's lock before the busy timeout applies ("database is locked"); wait and retry
                    self._conn.execute("PRAGMA journal_mode=WAL")
                    break
                except sqlite3.OperationalError as e:
                    if "locked" not in str(e) or attempt == 19:
                        raise
                    time.sleep(0.05 * (attempt + 1))
            self._conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a killed process loses nothing
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS calls ("
                " key TEXT PRIMARY KEY, text TEXT NOT NULL, seconds REAL, model TEXT, backend TEXT,"
                " stage TEXT, prompt TEXT, prompt_version TEXT, created REAL)"
            )

    def get(self, key: str) -> dict | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: list[str]) -> dict[str, dict]:
        """Rows for the keys that are present: ``{key: {"text", "seconds", ...}}``."""
        out: dict[str, dict] = {}
        uniq = list(dict.fromkeys(keys))
        with self._lock:
            for i in range(0, len(uniq), 500):  # stay under SQLite's bound-parameter limit
                chunk = uniq[i : i + 500]
                q = f"SELECT key, text, seconds, model, stage, prompt, prompt_version FROM calls WHERE key IN ({','.join('?' * len(chunk))})"
                for k, text, secs, model, stage, prompt, pv in self._conn.execute(q, chunk):
                    out[k] = {
                        "text": text,
                        "seconds": secs,
                        "model": model,
                        "stage": stage,
                        "prompt": prompt,
                        "prompt_version": pv,
                    }
        return out

    def put(self, key: str, text: str, seconds: float = 0.0, info: dict | None = None) -> None:
        """Store one successful output. The first writer of a key wins (greedy outputs are identical anyway)."""
        info = info or {}
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO calls VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    key,
                    text,
                    float(seconds),
                    info.get("model"),
                    info.get("backend"),
                    info.get("stage"),
                    info.get("prompt"),
                    None if info.get("prompt_version") is None else str(info.get("prompt_version")),
                    time.time(),
                ),
            )

    def merge_from(self, other: str | os.PathLike) -> int:
        """Copy every row of another cache file that this one lacks (e.g. caches of shards on other nodes)."""
        before = len(self)
        with self._lock:
            self._conn.execute("ATTACH DATABASE ? AS other", (str(other),))
            try:
                self._conn.execute("INSERT OR IGNORE INTO calls SELECT * FROM other.calls")
            finally:
                self._conn.execute("DETACH DATABASE other")
        return len(self) - before

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> StageCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"StageCache({str(self.path)!r})"


class CachedModel:
    """A VLM that answers from the stage cache where it can and asks the wrapped model only for the misses.

    It has the wrapped model's ``model_id``, ``fingerprint`` and ``capabilities``, so it can stand in anywhere a
    VLM is expected. Misses of one ``generate`` call go to the wrapped model as one batch (duplicates within a
    batch are asked once); results come back in request order. ``model_calls`` counts requests actually sent,
    ``cache_hits`` requests answered from the cache (both also per stage); with ``cache=None`` it only counts.
    A cached answer is returned with ``seconds=0.0``: no model time was spent on it in this run.
    """

    def __init__(self, model, cache: StageCache | None, backend_name: str | None = None) -> None:
        self.model = model
        self.cache = cache
        # the model reports its own backend; a name given here is for models that do not (test doubles)
        self.backend_name = getattr(model, "backend", None) or backend_name or type(model).__name__
        self._lock = threading.Lock()
        self.model_calls = 0
        self.cache_hits = 0
        self.failed_calls = 0
        self.retryable_failures = 0  # infrastructure failures among failed_calls
        self.calls_by_stage: Counter = Counter()
        self.hits_by_stage: Counter = Counter()

    @property
    def backend(self) -> str:
        return self.backend_name

    @property
    def model_id(self) -> str:
        return self.model.model_id

    @property
    def fingerprint(self) -> str:
        return self.model.fingerprint

    @property
    def capabilities(self) -> Capabilities:
        return self.model.capabilities

    def key(self, request: Request) -> str:
        return request_key(self.model, request, self.backend_name)

    def generate(self, requests: list[Request]) -> list[Generation]:
        if not requests:
            return []
        keys = [self.key(r) for r in requests] if self.cache is not None else [str(i) for i in range(len(requests))]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        out: list[Generation | None] = [None] * len(requests)
        hit_stages: list[str] = []
        miss_index: dict[str, list[int]] = {}  # key -> positions waiting for it, first-seen order
        for i, (k, r) in enumerate(zip(keys, requests, strict=True)):
            if k in found:
                out[i] = Generation(text=found[k]["text"], error=None, seconds=0.0)
                hit_stages.append(_stage(r))
            else:
                miss_index.setdefault(k, []).append(i)

        send_keys = list(miss_index)
        send = [requests[miss_index[k][0]] for k in send_keys]
        gens = self.model.generate(send) if send else []
        if len(gens) != len(send):
            raise RuntimeError(
                f"{self.model_id}: backend returned {len(gens)} generations for {len(send)} requests"
            )
        failed = retryable = 0
        for k, req, g in zip(send_keys, send, gens, strict=True):
            if g.ok and not g.retryable and self.cache is not None:
                meta = req.meta or {}
                self.cache.put(
                    k,
                    g.text,
                    g.seconds,
                    {
                        "model": self.fingerprint,
                        "backend": self.backend_name,
                        "stage": meta.get("stage"),
                        "prompt": meta.get("prompt"),
                        "prompt_version": meta.get("prompt_version"),
                    },
                )
            failed += 0 if g.ok else 1
            retryable += 1 if g.retryable else 0
            for j, pos in enumerate(miss_index[k]):
                # A duplicate inside the batch was not paid for twice: it is a hit of the first one's answer.
                out[pos] = g if j == 0 else Generation(text=g.text, error=g.error, seconds=0.0, kind=g.kind)
                if j:
                    hit_stages.append(_stage(requests[pos]))

        with self._lock:
            self.model_calls += len(send)
            self.failed_calls += failed
            self.retryable_failures += retryable
            self.cache_hits += len(hit_stages)
            self.calls_by_stage.update(_stage(r) for r in send)
            self.hits_by_stage.update(hit_stages)
        return out  # type: ignore[return-value]

    def loglikelihood(self, requests: list) -> list:
        """Candidate likelihoods (:mod:`ego_adr.models.likelihood`) through the cache, as :meth:`generate` does for
        replies: hits answered from it, the misses asked of the wrapped model in one call, successes stored (a
        failure, retryable or not, is asked again next time). A model without ``loglikelihood`` is a ValueError."""
        from ego_adr.models.likelihood import Likelihoods

        score = getattr(self.model, "loglikelihood", None)
        if score is None:
            raise ValueError(f"{self.model_id} ({self.backend_name}) gives no token probabilities: use a backend "
                             "that does (llamacpp, hf, or openai against a server that returns logprobs)")
        if not requests:
            return []
        keys = [likelihood_key(self.model, r, self.backend_name) for r in requests]
        found = self.cache.get_many(keys) if self.cache is not None else {}
        out = [Likelihoods.from_text(found[k]["text"]) if k in found else None for k in keys]
        todo = list(dict.fromkeys(k for k in keys if k not in found))
        first = {k: requests[keys.index(k)] for k in todo}
        got = dict(zip(todo, score([first[k] for k in todo]) if todo else [], strict=True))
        for k, res in got.items():
            if res.ok and self.cache is not None:
                meta = first[k].meta or {}
                self.cache.put(k, res.to_text(), res.seconds, {
                    "model": self.fingerprint, "backend": self.backend_name, "stage": meta.get("stage"),
                    "prompt": meta.get("prompt"), "prompt_version": meta.get("prompt_version")})
        out = [o if o is not None else got[k] for o, k in zip(out, keys)]
        with self._lock:
            self.model_calls += len(todo)
            self.cache_hits += len(keys) - len(todo)  # a duplicate in the batch is a hit of the first one's answer
            self.failed_calls += sum(not r.ok for r in got.values())
            self.retryable_failures += sum(r.retryable for r in got.values())
            self.calls_by_stage.update(_stage(first[k]) for k in todo)
            self.hits_by_stage.update(_stage(r) for i, (r, k) in enumerate(zip(requests, keys))
                                      if k in found or keys.index(k) != i)
        return out

    def stats(self) -> dict:
        """Counters for ``run.json``: ``model_calls`` (calls actually made), ``cache_hits``, and per stage."""
        with self._lock:
            return {
                "model_calls": self.model_calls,
                "cache_hits": self.cache_hits,
                "failed_calls": self.failed_calls,
                "retryable_failures": self.retryable_failures,
                "model_calls_by_stage": dict(self.calls_by_stage),
                "cache_hits_by_stage": dict(self.hits_by_stage),
            }

    def __repr__(self) -> str:
        return f"CachedModel({self.model_id!r}, cache={self.cache!r}, backend={self.backend_name!r})"


def _stage(request: Request) -> str:
    return str((request.meta or {}).get("stage") or "unknown")
