"""Prefetcher: order, bounded look-ahead, per-item errors, early stop without stray threads."""

from __future__ import annotations

import threading
import time

import pytest

from ego_adr.video.prefetch import Prefetcher
from ego_adr.video.sampler import FrameSampler
from ego_adr.video.synth import make_test_video, read_frame_index


def _prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("prefetch")]


@pytest.mark.parametrize("workers", [0, 1, 3])
def test_results_in_input_order(workers):
    def slow_square(x):
        time.sleep(0.002 * ((7 * x) % 5))  # later items often finish first
        return x * x

    got = list(Prefetcher(slow_square, range(20), workers=workers, depth=4))
    assert [r.index for r in got] == list(range(20))
    assert [r.value for r in got] == [x * x for x in range(20)]
    assert all(r.ok and r.seconds >= 0 for r in got)


def test_lookahead_is_bounded_by_depth():
    started: list[int] = []
    lock = threading.Lock()

    def record(x):
        with lock:
            started.append(x)
        time.sleep(0.005)
        return x

    depth = 3
    for r in Prefetcher(record, range(15), workers=4, depth=depth):
        time.sleep(0.02)  # a slow consumer: workers would run far ahead if unbounded
        with lock:
            assert max(started) <= r.index + depth
    assert sorted(started) == list(range(15))


def test_errors_are_values_and_do_not_stop_the_rest():
    def fragile(x):
        if x % 4 == 1:
            raise ValueError(f"bad item {x}")
        return -x

    got = list(Prefetcher(fragile, range(10), workers=2, depth=2))
    assert [r.ok for r in got] == [x % 4 != 1 for x in range(10)]
    assert all(isinstance(r.error, ValueError) and str(r.item) in str(r.error) for r in got if not r.ok)
    assert [r.value for r in got if r.ok] == [-x for x in range(10) if x % 4 != 1]


def test_early_stop_cancels_and_leaves_no_threads():
    calls: list[int] = []

    def work(x):
        calls.append(x)
        time.sleep(0.01)
        return x

    items = iter(range(1000))
    for r in Prefetcher(work, items, workers=2, depth=4):
        if r.index == 2:
            break
    time.sleep(0.05)
    assert not _prefetch_threads()
    assert len(calls) <= 2 + 4 + 1  # nothing beyond the look-ahead was started
    assert next(items) <= 8  # the input iterator was not drained

    with Prefetcher(work, range(100), workers=2, depth=2) as p:
        it = iter(p)
        next(it)
    assert not _prefetch_threads()


def test_decodes_clips_ahead(tmp_path):
    path = make_test_video(tmp_path / "v.mp4", 6, fps=8, gop=16)
    windows = [(s, s + 2.0) for s in range(4)] + [(100.0, None)]
    with FrameSampler() as fs:
        got = list(Prefetcher(lambda w: fs.sample_with_info(path, w[0], w[1], 4), windows, workers=2, depth=2))
    for r in got[:-1]:
        arr, info = r.value
        assert [read_frame_index(f) for f in arr] == info.indices
    # a half window (no end) is refused by the window rule: that item's error, the others are unaffected
    assert not got[-1].ok and getattr(got[-1].error, "kind", None) == "window"


def test_bad_arguments():
    with pytest.raises(ValueError):
        Prefetcher(abs, [], workers=1, depth=0)
