"""The PyAV reader's pixels: its one reused RGB converter gives what PyAV's own per-frame conversion gives.
Its decoder threads follow the cores the process may use, with the same frames.

Why: the reader converts every frame through one ``VideoReformatter`` (a cached swscale context, issue 17 item 6)
instead of ``VideoFrame.to_ndarray(format="rgb24")``, which builds a context per frame. The two must agree byte
for byte on every pixel format a recording may come in (limited and full range, 4:2:0 and 4:4:4, 10 bit, odd
sizes), or the speed-up would change what a model sees.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

av = pytest.importorskip("av")  # third-party: the reader under test needs it

from ego_adr.video.readers import _PyAVReader  # noqa: E402
from ego_adr.video.synth import index_frame  # noqa: E402

CASES = [  # (codec, pixel format, width, height, container)
    ("libx264", "yuv420p", 160, 120, "mp4"),
    ("libx264", "yuv444p", 96, 64, "mp4"),
    ("libx264", "yuv420p10le", 128, 72, "mp4"),
    ("mjpeg", "yuvj420p", 161, 121, "avi"),  # full range, odd size
    ("mpeg4", "yuv420p", 176, 144, "avi"),
]


def _write(path, codec, pix_fmt, w, h, n=24, gop=8):
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as out:
        st = out.add_stream(codec, rate=Fraction(10))
        st.width, st.height, st.pix_fmt = w, h, pix_fmt
        if codec == "libx264":
            st.options = {"preset": "ultrafast", "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0"}
        for i in range(n):
            img = index_frame(i, (w, h))
            img = np.clip(img.astype(np.int16) + rng.integers(-40, 40, img.shape), 0, 255).astype(np.uint8)
            for pkt in st.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                out.mux(pkt)
        for pkt in st.encode():
            out.mux(pkt)


def _reference(path) -> list[np.ndarray]:
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(c.streams.video[0])]


@pytest.mark.parametrize("codec,pix_fmt,w,h,ext", CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}x{c[3]}" for c in CASES])
def test_reused_converter_gives_pyav_own_pixels(tmp_path, codec, pix_fmt, w, h, ext):
    path = tmp_path / f"v.{ext}"
    try:
        _write(path, codec, pix_fmt, w, h)
    except (av.error.FFmpegError, ValueError) as e:
        pytest.skip(f"this FFmpeg build cannot write {codec} {pix_fmt}: {e}")
    ref = _reference(path)
    reader = _PyAVReader(str(path))
    try:
        assert reader.num_frames == len(ref)
        # Sorted, with a backward jump between the two reads: both seek and decode-forward paths convert.
        for wanted in ([0, 3, 9, 17, len(ref) - 1], [1, 2, 8, 16]):
            got = reader.read(wanted, lambda f: f)
            for i, d in zip(wanted, got, strict=True):
                assert d.problem is None and d.index == i
                assert d.frame.shape == (h, w, 3) and d.frame.dtype == np.uint8
                assert np.array_equal(d.frame, ref[i]), f"frame {i} differs from PyAV's own conversion"
    finally:
        reader.close()


@pytest.mark.parametrize("cores", [{0}, {0, 1, 2}])
def test_decoder_threads_follow_the_cores_this_process_may_use(tmp_path, monkeypatch, cores):
    """FFmpeg's own choice (thread_count 0) is cores + 1 frame threads, which made the reader's time vary on 2
    cores (issue 28 item 8): the reader asks for one thread per core it may run on, and the frames are the same."""
    import ego_adr.video.readers as readers

    path = tmp_path / "v.mp4"
    _write(path, "libx264", "yuv420p", 160, 120, n=40, gop=10)
    ref = _reference(path)
    monkeypatch.setattr(readers.os, "sched_getaffinity", lambda pid: set(cores), raising=False)
    reader = _PyAVReader(str(path))
    try:
        assert reader._st.codec_context.thread_count == len(cores)
        wanted = [0, 5, 11, 12, 23, 39]
        for i, d in zip(wanted, reader.read(wanted, lambda f: f), strict=True):
            assert d.index == i and np.array_equal(d.frame, ref[i])
    finally:
        reader.close()
