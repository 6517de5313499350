"""What of the vLLM backend runs without vLLM: request → vLLM input conversion (checked against the real HF
processor that vLLM calls, with the tiny model), the missing-package error, and per-request error isolation."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ego_adr.models.base import Frames, GenerationConfig, Message, Request
from ego_adr.models.vllm_engine import (
    VLLM_MISSING,
    VLLMModel,
    limit_pixels,
    sampling_kwargs,
    to_vllm_input,
)

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.fixture(scope="module")
def tiny_processor():
    from transformers import AutoProcessor

    from ego_adr.models.tiny import ensure_tiny

    return AutoProcessor.from_pretrained(ensure_tiny("qwen2.5-vl"))


def _clip(n=8, h=360, w=640, fps=8 / 30, seed=0):
    rng = np.random.default_rng(seed)
    return Frames(rng.integers(0, 256, (n, h, w, 3), dtype=np.uint8), fps=fps)


@pytest.mark.skipif(HAS_VLLM, reason="vllm is installed here")
def test_missing_vllm_gives_install_hint():
    with pytest.raises(ImportError) as e:
        VLLMModel("tiny")
    assert "pip install 'ego-adr[vllm]'" in str(e.value) and str(e.value) == VLLM_MISSING


def test_limit_pixels_keeps_aspect_and_never_upscales():
    a = np.zeros((2, 360, 640, 3), np.uint8)
    out = limit_pixels(a, 112 * 112)
    n, h, w, _ = out.shape
    assert n == 2 and h * w <= 112 * 112 and abs(w / h - 640 / 360) < 0.05
    assert limit_pixels(a, 10**7) is a


def test_video_input_matches_processor_without_resampling(tiny_processor):
    clip = _clip(n=8, fps=8 / 30)
    req = Request([Message.system("Be brief."), Message.user(clip, "What went wrong?")], GenerationConfig(64))
    inp = to_vllm_input(req, tiny_processor, max_pixels_per_frame=112 * 112)

    prompt = inp["prompt"]
    assert prompt.count("<|video_pad|>") == 1 and "What went wrong?" in prompt and "Be brief." in prompt
    assert prompt.rstrip().endswith("assistant")
    (video, meta), *rest = inp["multi_modal_data"]["video"]
    assert rest == []
    assert video.dtype == np.uint8 and video.shape[0] == 8 and video.shape[1] * video.shape[2] <= 112 * 112
    assert meta["total_num_frames"] == 8 and meta["frames_indices"] == list(range(8))
    assert meta["fps"] == pytest.approx(8 / 30)
    assert inp["mm_processor_kwargs"] == {"do_sample_frames": False, "fps": pytest.approx(8 / 30)}

    # What vLLM does with it: metadata (minus its do_sample_frames flag) and kwargs go to the HF processor.
    hf_meta = {k: v for k, v in meta.items() if k != "do_sample_frames"}
    out = tiny_processor(
        text=[prompt],
        videos=[video],
        video_metadata=[hf_meta],
        return_tensors="pt",
        **inp["mm_processor_kwargs"],
    )
    t, _, _ = out["video_grid_thw"][0].tolist()
    temporal_patch = tiny_processor.video_processor.temporal_patch_size
    assert t == 8 // temporal_patch  # all 8 frames kept: nothing re-sampled
    assert float(out["second_per_grid_ts"][0]) == pytest.approx(temporal_patch / (8 / 30), rel=1e-3)


def test_two_clips_and_text_only(tiny_processor):
    req = Request([Message.user(_clip(4, 64, 64, fps=1.0), "then", _clip(4, 64, 64, fps=0.5, seed=1), "?")])
    inp = to_vllm_input(req, tiny_processor)
    assert inp["prompt"].count("<|video_pad|>") == 2
    assert [m["fps"] for _, m in inp["multi_modal_data"]["video"]] == [1.0, 0.5]
    assert "fps" not in inp["mm_processor_kwargs"]  # HF wants a scalar: differing rates travel in metadata

    text = to_vllm_input(Request([Message.user("Is this step correct?")]), tiny_processor)
    assert set(text) == {"prompt"} and "Is this step correct?" in text["prompt"]


def test_sampling_is_greedy_by_default():
    assert sampling_kwargs(Request([Message.user("x")], GenerationConfig(max_new_tokens=17))) == {
        "temperature": 0.0,
        "max_tokens": 17,
    }


# --- batch failure falls back to one-by-one: the engine is replaced by a double, the code around it is real ---
class _Out:
    def __init__(self, text):
        self.outputs = [type("C", (), {"text": text})()]


class LLMEngineDouble:
    """Fails any batch holding a prompt with 'poison', like an engine that raises on one bad input."""

    def __init__(self):
        self.calls = []

    def generate(self, inputs, params, use_tqdm=False):
        self.calls.append(len(inputs))
        if any("poison" in i["prompt"] for i in inputs):
            raise RuntimeError("bad input in batch")
        return [_Out(f"ok:{p.max_tokens}") for p in params]


class _Params:
    def __init__(self, temperature, max_tokens):
        self.temperature, self.max_tokens = temperature, max_tokens


def test_batch_failure_is_isolated(tiny_processor):
    m = VLLMModel.__new__(VLLMModel)
    m.processor = tiny_processor
    m.max_pixels_per_frame = 112 * 112
    m.llm = LLMEngineDouble()
    m._SamplingParams = _Params
    reqs = [
        Request([Message.user(_clip(4, 64, 64), "fine")], GenerationConfig(5)),
        Request([Message.user("poison")], GenerationConfig(6)),
        Request([Message.user("also fine")], GenerationConfig(7)),
        Request([Message("user", [object()])], GenerationConfig(8)),  # cannot be converted
    ]
    gens = m.generate(reqs)
    assert [g.text for g in gens] == ["ok:5", None, "ok:7", None]
    assert "bad input" in gens[1].error and gens[3].error.startswith("prepare:")
    assert m.llm.calls == [3, 1, 1, 1]
