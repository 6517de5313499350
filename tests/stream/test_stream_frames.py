"""Successive windows read once, forward: the same frames as the sampler's per-window path."""

import numpy as np

from ego_adr.stream.frames import WindowReader
from ego_adr.stream.runner import tick_times
from ego_adr.video.sampler import FrameSampler
from ego_adr.video.synth import make_test_video, read_frame_index


def test_window_reader_equals_sample_clip(tmp_path):
    path = str(make_test_video(tmp_path / "v.mp4", 40.0, fps=8, gop=50))
    for stride, n in ((4.0, 8), (3.0, 6)):  # the default grid (aligned), and one that is not
        _compare(path, stride, n)


def _compare(path, stride, n):
    seen = set()
    with FrameSampler() as a, FrameSampler() as b:
        wr = WindowReader(a, path)
        for t in tick_times(40.0, stride):
            got = wr.clip(max(0.0, t - 8.0), t, n)
            want = b.sample_clip(path, max(0.0, t - 8.0), t, n)
            seen.update(want.info.indices)
            assert np.array_equal(got.array, want.array)
            assert got.fps == want.fps and got.timestamps == want.timestamps
            assert max(read_frame_index(f) for f in got.array) < t * 8  # nothing at or after the window's end
            assert len(wr._cache) <= n
        if stride == 4.0:
            assert wr.decoded == len(seen)  # every sampled frame read exactly once
