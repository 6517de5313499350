"""The Hugging Face backend on a tiny random Qwen2.5-VL (same code path as a hub model), plus the registry."""

from __future__ import annotations

import numpy as np
import pytest

from ego_adr.models import Frames, Generation, GenerationConfig, Message, Request, load_model
from ego_adr.models.base import VLM
from ego_adr.models.registry import ALIASES, ModelSpec, resolve
from ego_adr.models.tiny import build_tiny

CFG = GenerationConfig(max_new_tokens=32)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "qwen25")


@pytest.fixture(scope="module")
def model(tiny_dir):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        return load_model(str(tiny_dir), device="cpu", batch_size=4)


def clip(n=8, h=240, w=320, fps=1.0, seed=0) -> Frames:
    return Frames(np.random.default_rng(seed).integers(0, 256, (n, h, w, 3), dtype=np.uint8), fps=fps)


def capture_forward_kwargs(model):
    """Record what reaches the network during generate: ``second_per_grid_ts`` of the first forward call
    (the prefill) and the ``grid_thw`` the vision tower encodes."""
    seen: dict = {}

    def top(_module, _args, kwargs):
        if "second_per_grid_ts" in kwargs and "second_per_grid_ts" not in seen:
            seen["second_per_grid_ts"] = kwargs["second_per_grid_ts"]

    def vision(_module, args, kwargs):
        grid = kwargs.get("grid_thw", args[1] if len(args) > 1 else None)
        seen.setdefault("video_grid_thw", grid)

    handles = [model.model.register_forward_pre_hook(top, with_kwargs=True),
               model.model.model.visual.register_forward_pre_hook(vision, with_kwargs=True)]

    class Handles:
        def remove(self):
            for h in handles:
                h.remove()

    return [seen], Handles()


def test_protocol_and_capabilities(model):
    assert isinstance(model, VLM)
    caps = model.capabilities
    assert caps.video and caps.text_only and caps.max_batch_size == 4
    assert model.fingerprint.startswith("hf:") and model.fingerprint == model.fingerprint
    assert str(model.model.dtype) == "torch.float32"


def test_text_only_and_video_generation(model):
    text, video = model.generate([
        Request([Message.user("List the steps to make tea.")], CFG),
        Request([Message.system("Describe videos."), Message.user(clip(), "What happens?")], CFG),
    ])
    for g in (text, video):
        assert isinstance(g, Generation) and g.ok, g.error
        assert isinstance(g.text, str) and g.text == g.text.strip()
        assert g.seconds > 0
    # New tokens only: the prompt is not echoed. (Counting the reply's tokens again is no test of that: decoding
    # and re-encoding a random model's byte-level tokens may give a few more, e.g. 36 for 32 under 4.57.)
    for g in (text, video):
        assert "List the steps" not in g.text and "What happens?" not in g.text and "<|im_start|>" not in g.text


def test_batched_equals_unbatched_with_left_padding(model):
    reqs = [
        Request([Message.user("Short.")], CFG),
        Request([Message.user(clip(seed=1), "Is there a procedural error in this step of the recipe?")], CFG),
        Request([Message.user(clip(n=4, h=200, w=300, fps=2.0, seed=2), "Error?")], CFG),
    ]
    assert model.tokenizer.padding_side == "left"
    batched = model.generate(reqs)
    single = [model.generate([r])[0] for r in reqs]
    # fp32 greedy decoding: padding is masked, so each row must decode exactly as it does alone.
    assert [g.text for g in batched] == [g.text for g in single]
    assert all(g.ok for g in batched)


def test_bad_requests_fail_alone(model):
    good = Request([Message.user(clip(), "What happens?")], CFG)
    reqs = [
        good,
        Request([Message.user(Frames(np.zeros((0, 8, 8, 3), np.uint8), fps=1.0), "x")], CFG),  # no frames
        Request([Message("narrator", ["who am I"])], CFG),  # unknown role
        Request([Message.user(42)], CFG),  # part of a wrong type
        # passes validation but the processor rejects it (aspect ratio > 200) inside the batch
        Request([Message.user(Frames(np.zeros((2, 2, 600, 3), np.uint8), fps=1.0), "x")], CFG),
        Request([Message.user("Text only, after the bad ones.")], CFG),
    ]
    out = model.generate(reqs)
    assert len(out) == len(reqs)
    assert out[0].ok and out[5].ok
    assert [g.ok for g in out[1:5]] == [False] * 4
    assert "no frames" in out[1].error and "role" in out[2].error and "int" in out[3].error
    assert "aspect ratio" in out[4].error
    assert out[0].text == model.generate([good])[0].text


@pytest.mark.parametrize("fps", [0.5, 4.0])
def test_video_metadata_fps_reaches_the_model(model, fps):
    seen, handle = capture_forward_kwargs(model)
    try:
        g = model.generate([Request([Message.user(clip(n=8, fps=fps), "?")], GenerationConfig(2))])[0]
    finally:
        handle.remove()
    assert g.ok, g.error
    # Qwen2.5-VL: seconds per temporal grid step = temporal_patch_size (2) / fps of the sampled frames
    assert seen[0]["second_per_grid_ts"].tolist() == pytest.approx([2.0 / fps])
    assert seen[0]["video_grid_thw"][0, 0].item() == 4  # 8 frames / temporal patch 2: all frames were used


def test_pixel_budget_bounds_tokens_per_frame(tiny_dir, model):
    small = load_model(str(tiny_dir), device="cpu", max_pixels_per_frame=56 * 56 + 100)
    assert small.fingerprint != model.fingerprint
    grids = []
    for m in (model, small):
        seen, handle = capture_forward_kwargs(m)
        try:
            m.generate([Request([Message.user(clip(), "?")], GenerationConfig(1))])
        finally:
            handle.remove()
        _, gh, gw = seen[0]["video_grid_thw"][0].tolist()
        grids.append(gh * gw * 14 * 14)  # pixels per frame after resize
    assert grids[1] <= 56 * 56 < grids[0]


def test_family_decides_text_only_capability(tiny_dir):
    vl = load_model(str(tiny_dir), device="cpu")
    from ego_adr.models.hf import HFVideoLM

    as_video_llava = HFVideoLM(str(tiny_dir), spec=ModelSpec("x/y", "video-llava"), device="cpu")
    assert vl.capabilities.text_only is True
    assert as_video_llava.capabilities.text_only is False  # paper Section 3.2: Video-LLaVA needs visual input


def test_alias_resolution(tiny_dir):
    assert resolve("qwen2.5-vl") == ("Qwen/Qwen2.5-VL-7B-Instruct", ALIASES["qwen2.5-vl"])
    assert resolve("Qwen2.5-VL")[0] == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert resolve("Qwen/Qwen2-VL-7B-Instruct")[1].family == "qwen2-vl"
    assert resolve("someone/unknown-model") == ("someone/unknown-model", None)
    assert resolve(str(tiny_dir)) == (str(tiny_dir.resolve()), None)
    for alias in ("qwen2-vl", "qwen3-vl", "llava-onevision", "video-llava", "internvl3.5"):
        assert "/" in ALIASES[alias].hub_id


@pytest.mark.parametrize("name", ["qwen9-vl", "someone/not-downloaded-model"])
def test_unknown_model_offline_is_a_clear_error(name, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))  # an empty hub cache
    with pytest.raises(ValueError) as e:
        load_model(name, device="cpu")
    msg = str(e.value)
    assert name in msg and "qwen2.5-vl" in msg and "local folder" in msg


def test_tiny_alias_builds_offline(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("EGO_ADR_CACHE", str(tmp_path))
    m = load_model("tiny", device="cpu")
    from ego_adr.models.compat import tiny_suffix

    assert m.model_id == str(tmp_path / f"tiny-qwen2.5-vl-v1{tiny_suffix()}")
    assert m.generate([Request([Message.user("hi")], GenerationConfig(4))])[0].ok


def test_unknown_backend_and_bad_batch_size(tiny_dir):
    with pytest.raises(ValueError, match="backend"):
        load_model(str(tiny_dir), backend="onnx")
    with pytest.raises(ValueError, match="batch_size"):
        load_model(str(tiny_dir), batch_size=0)


def test_second_family_llava_onevision_goes_through_the_same_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    m = load_model(str(build_tiny(tmp_path / "lov", "llava-onevision")), device="cpu", batch_size=3,
                   max_pixels_per_frame=10_000)  # ignored (fixed resolution), with a warning
    assert m.family == "llava-onevision" and m.capabilities.text_only
    assert "size" not in m.describe()["video_kwargs"]
    reqs = [Request([Message.user(clip(), "What happens?")], CFG), Request([Message.user("Hi.")], CFG),
            Request([Message.user(Frames(np.zeros((0, 8, 8, 3), np.uint8), fps=1.0))], CFG)]
    out = m.generate(reqs)
    assert out[0].ok and out[1].ok and not out[2].ok, [g.error for g in out]
    assert out[0].text == m.generate([reqs[0]])[0].text


def test_text_only_causal_lm_path(tmp_path, monkeypatch):
    """Text-only judges (paper Section 4.2) load through AutoModelForCausalLM; frames are refused per request."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    from ego_adr.models.tiny import build_tokenizer

    tok = build_tokenizer()
    eos = tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen2Config(vocab_size=len(tok) + (-len(tok) % 64), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, eos_token_id=eos,
                      pad_token_id=tok.pad_token_id, bos_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(cfg).save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    m = load_model(str(tmp_path / "lm"), device="cpu", batch_size=2)
    assert m.family == "qwen2" and m.capabilities == m.capabilities.__class__(False, True, 2)  # by model_type
    out = m.generate([Request([Message.system("Judge."), Message.user("Score 0-5.")], CFG),
                      Request([Message.user(clip(), "x")], CFG),
                      Request([Message.user("Another answer to score, longer than the first one.")], CFG)])
    assert out[0].ok and out[2].ok and "cannot take video frames" in out[1].error
    assert out[2].text == m.generate([Request([Message.user("Another answer to score, longer than the first one.")],
                                              CFG)])[0].text


def test_known_alias_not_downloaded_offline_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path))  # an empty hub cache
    with pytest.raises(ValueError, match="hf download Qwen/Qwen2.5-VL-7B-Instruct"):
        load_model("qwen2.5-vl", device="cpu")
