"""Stage cache: hits, misses on every key ingredient, errors not cached, persistence, threads, order."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from ego_adr.models.base import Capabilities, Frames, GenerationConfig, Message, Request
from ego_adr.models.cache import CachedModel, StageCache, frames_digest, request_key

REPO = Path(__file__).resolve().parents[2]


class CountingModelDouble:
    """A model double that counts the requests it receives and answers from their content (so a wrong cache hit
    would show up as a wrong answer). Requests whose text contains "FAIL" come back as errors."""

    def __init__(self, fingerprint: str = "double@rev1") -> None:
        self._fp = fingerprint
        self.requests_seen = 0
        self.batches: list[int] = []
        self._lock = threading.Lock()

    model_id = "counting-double"

    @property
    def fingerprint(self) -> str:
        return self._fp

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(video=True, text_only=True, max_batch_size=8)

    def generate(self, requests):
        from ego_adr.models.base import Generation

        with self._lock:
            self.requests_seen += len(requests)
            self.batches.append(len(requests))
        out = []
        for r in requests:
            text = " | ".join(p if isinstance(p, str) else f"<{p.num_frames}f>" for m in r.messages for p in m.content)
            if "FAIL" in text:
                out.append(Generation(text=None, error="simulated OOM"))
            else:
                out.append(Generation(text=f"{self._fp}: {text} [{r.config.max_new_tokens}]", seconds=0.5))
        return out


def _frames(seed: int = 0, n: int = 4) -> Frames:
    rng = np.random.default_rng(seed)
    return Frames(rng.integers(0, 256, size=(n, 8, 8, 3), dtype=np.uint8), fps=2.0, timestamps=tuple(range(n)))


def _req(text: str = "describe", frames: Frames | None = None, version: str = "1", stage: str = "narrate", **gen):
    parts = [frames, text] if frames is not None else [text]
    return Request(
        [Message.system("You watch videos."), Message.user(*parts)],
        config=GenerationConfig(**gen),
        meta={"stage": stage, "prompt": "narration", "prompt_version": version},
    )


def test_same_request_twice_is_one_call_and_one_hit(tmp_path):
    model = CountingModelDouble()
    cm = CachedModel(model, StageCache(tmp_path), "hf")
    fr = _frames()
    a = cm.generate([_req(frames=fr)])[0]
    b = cm.generate([_req(frames=_frames())])[0]  # equal content, different object
    assert a.ok and b.text == a.text
    assert model.requests_seen == 1
    assert (cm.model_calls, cm.cache_hits) == (1, 1)
    assert b.seconds == 0.0
    assert cm.stats()["model_calls_by_stage"] == {"narrate": 1}
    assert cm.stats()["cache_hits_by_stage"] == {"narrate": 1}
    assert cm.model_id == model.model_id and cm.fingerprint == model.fingerprint
    assert cm.capabilities == model.capabilities


def test_every_key_ingredient_causes_a_miss(tmp_path):
    cache = StageCache(tmp_path / "c.sqlite")
    model = CountingModelDouble()
    cm = CachedModel(model, cache, "hf")
    base = _req(frames=_frames(0))
    cm.generate([base])
    variants = [
        _req(frames=_frames(0), version="2"),  # prompt version
        _req(frames=_frames(1)),  # frames content
        _req(frames=_frames(0), max_new_tokens=64),  # generation parameters
        _req(frames=_frames(0), stage="classify"),  # stage
        _req("describe it", frames=_frames(0)),  # rendered text
    ]
    for v in variants:
        cm.generate([v])
    assert model.requests_seen == 1 + len(variants)
    assert cm.cache_hits == 0
    keys = {request_key(model, r, "hf") for r in [base, *variants]}
    assert len(keys) == 1 + len(variants)
    assert request_key(model, base, "vllm") != request_key(model, base, "hf")  # backend

    other = CountingModelDouble(fingerprint="double@rev2")  # changed model / weights
    cm2 = CachedModel(other, cache, "hf")
    g = cm2.generate([_req(frames=_frames(0))])[0]
    assert other.requests_seen == 1 and g.text.startswith("double@rev2")


def test_errors_are_not_cached_and_retried(tmp_path):
    model = CountingModelDouble()
    cm = CachedModel(model, StageCache(tmp_path), "hf")
    g1 = cm.generate([_req("FAIL please")])[0]
    g2 = cm.generate([_req("FAIL please")])[0]
    assert not g1.ok and not g2.ok and g1.error == "simulated OOM"
    assert model.requests_seen == 2 and cm.cache_hits == 0 and cm.failed_calls == 2
    assert len(cm.cache) == 0


def test_cache_persists_across_instances(tmp_path):
    m1 = CountingModelDouble()
    with StageCache(tmp_path) as c1:
        t1 = CachedModel(m1, c1, "hf").generate([_req(frames=_frames(3))])[0].text
    m2 = CountingModelDouble()
    with StageCache(tmp_path) as c2:
        cm = CachedModel(m2, c2, "hf")
        t2 = cm.generate([_req(frames=_frames(3))])[0].text
        assert len(c2) == 1
    assert t1 == t2 and m2.requests_seen == 0 and cm.cache_hits == 1


def test_mixed_batch_keeps_order_and_sends_misses_as_one_batch(tmp_path):
    model = CountingModelDouble()
    cm = CachedModel(model, StageCache(tmp_path), "hf")
    cm.generate([_req("q1"), _req("q3")])
    batch = [_req(f"q{i}") for i in range(6)] + [_req("q4")]  # q4 twice in one batch: asked once
    model.batches.clear()
    out = cm.generate(batch)
    assert [g.text.split(" | ")[-1] for g in out] == [f"q{i} [256]" for i in range(6)] + ["q4 [256]"]
    assert model.batches == [4]  # q0, q2, q4, q5
    assert cm.model_calls == 2 + 4 and cm.cache_hits == 2 + 1


def test_pass_through_without_cache_only_counts():
    model = CountingModelDouble()
    cm = CachedModel(model, None, "hf")
    cm.generate([_req("a"), _req("a")])
    cm.generate([_req("a")])
    assert model.requests_seen == 3 and cm.model_calls == 3 and cm.cache_hits == 0


def test_four_threads_share_one_cache_consistently(tmp_path):
    model = CountingModelDouble()
    cm = CachedModel(model, StageCache(tmp_path), "hf")
    results: dict[int, list[str]] = {}

    def work(t):
        texts = []
        for _round in range(3):
            for i in range(10):
                texts.append(cm.generate([_req(f"item {i}")])[0].text)
        results[t] = texts

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert all(results[t] == results[0] for t in range(4))
    assert len(set(results[0])) == 10
    assert cm.model_calls + cm.cache_hits == 4 * 3 * 10
    assert cm.model_calls == model.requests_seen
    assert 10 <= cm.model_calls <= 40  # concurrent first misses may each ask; later rounds only hit
    assert len(cm.cache) == 10


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_two_processes_share_the_cache_file(tmp_path):
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from ego_adr.models.cache import StageCache\n"
        "c = StageCache(sys.argv[2])\n"
        "for i in range(200): c.put(f'{sys.argv[3]}-{i}', 'x' * 100)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(REPO), str(tmp_path), tag]) for tag in ("a", "b")
    ]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    with StageCache(tmp_path) as c:
        assert len(c) == 400 and c.get("b-199")["text"] == "x" * 100


def test_frames_digest_is_memoised_and_invalidated_by_new_array():
    fr = _frames(5)
    d = frames_digest(fr)
    assert d == fr.digest() and frames_digest(fr) == d
    fr.array = _frames(6).array
    assert frames_digest(fr) == fr.digest() != d


def test_merge_from_another_cache(tmp_path):
    with StageCache(tmp_path / "a.sqlite") as a, StageCache(tmp_path / "b.sqlite") as b:
        a.put("k1", "one")
        b.put("k1", "uno")
        b.put("k2", "two")
        assert a.merge_from(b.path) == 1
        assert a.get("k1")["text"] == "one" and a.get("k2")["text"] == "two"


def test_what_a_backend_says_decides_its_numbers_is_part_of_the_key_and_absent_changes_nothing():
    """``numerics`` (llama.cpp's thread count): two counts, two keys, one fingerprint; a backend without it, or
    with it empty, keeps the key it had."""
    req = Request([Message.user("q")], GenerationConfig(max_new_tokens=4), {"stage": "s"})
    plain = CountingModelDouble()
    empty, one, two = CountingModelDouble(), CountingModelDouble(), CountingModelDouble()
    empty.numerics, one.numerics, two.numerics = None, "threads=1", "threads=2"
    assert request_key(empty, req, "llamacpp") == request_key(plain, req, "llamacpp")
    keys = {request_key(m, req, "llamacpp") for m in (plain, one, two)}
    assert len(keys) == 3 and one.fingerprint == two.fingerprint == plain.fingerprint
