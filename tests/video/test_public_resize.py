"""The public protocol's frames are qwen-vl-utils 0.0.14's, value for value and dtype for dtype: our restatement
(``resize_like_qwen_vl_utils``) against the library itself (from the public runtime ``.ci/run`` installs in
``.ci/public-runtime``; only its ``qwen_vl_utils`` is imported from there), on frames where both passes act."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from ego_adr.video.public_policy import qwen_vl_utils_list_size, resize_like_qwen_vl_utils

RUNTIME = Path(os.environ.get("EGO_ADR_PUBLIC_RUNTIME") or Path(__file__).resolve().parents[2] / ".ci" / "public-runtime")


def _frames(n: int, h: int, w: int) -> np.ndarray:
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, size=(n, h // 8, w // 8, 3), dtype=np.uint8)
    return np.ascontiguousarray(base.repeat(8, axis=1).repeat(8, axis=2))  # blocky: edges for bicubic to ring


@pytest.fixture(scope="module")
def qvu():
    try:
        yield importlib.import_module("qwen_vl_utils")
        return
    except ImportError:
        pass
    if not (RUNTIME / "qwen_vl_utils").is_dir():
        pytest.skip(f"qwen-vl-utils 0.0.14 not installed (.ci/run puts it in {RUNTIME})")
    sys.path.append(str(RUNTIME))  # appended: only what the system lacks (qwen_vl_utils) comes from there
    try:
        yield importlib.import_module("qwen_vl_utils")
    finally:
        # and taken away again: left on the path, the worker's later tests saw qwen-vl-utils installed (its version
        # is part of every run's recorded library versions, so the step streams' fold cache missed: issue 46)
        sys.path.remove(str(RUNTIME))
        for name in [m for m in sys.modules if m == "qwen_vl_utils" or m.startswith("qwen_vl_utils.")]:
            del sys.modules[name]
        importlib.invalidate_caches()


@pytest.mark.parametrize("shape", [(7, 720, 1280), (8, 1080, 1920), (8, 360, 640)])
def test_frames_equal_qwen_vl_utils_output(qvu, shape):
    from PIL import Image

    arr = _frames(*shape)
    ours = resize_like_qwen_vl_utils(arr)
    messages = [{"role": "user", "content": [{"type": "video", "video": [Image.fromarray(f) for f in arr],
                                              "fps": 1.0}, {"type": "text", "text": "q"}]}]
    _, videos = qvu.process_vision_info(messages)
    theirs = videos[0].numpy()
    assert ours.dtype == theirs.dtype == np.float32
    assert ours.shape[0] == shape[0] + shape[0] % 2 and ours.shape[1:3] == qwen_vl_utils_list_size(*shape[1:], shape[0])[-1]
    assert np.array_equal(ours.transpose(0, 3, 1, 2), theirs)


def test_the_second_pass_is_not_pillows():
    """Why the restatement uses torchvision: Pillow's bicubic for the second pass gives other values."""
    from PIL import Image

    arr = _frames(2, 720, 1280)
    ours = resize_like_qwen_vl_utils(arr)
    (h1, w1), (h2, w2) = qwen_vl_utils_list_size(720, 1280, 2)
    pillow = np.stack([np.asarray(Image.fromarray(f).resize((w1, h1)).resize((w2, h2), Image.BICUBIC)) for f in arr])
    assert ours.shape[1:3] == pillow.shape[1:3] and not np.array_equal(ours, pillow.astype(np.float32))
    assert np.array_equal(ours, np.rint(ours))  # whole levels: torchvision rounds uint8 results
