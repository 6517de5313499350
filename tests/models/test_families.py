"""The family contract: every architecture of ``ego_adr.models.families`` goes through the real code offline.

For each family, its tiny random model (built once per test session into the session cache) is loaded by the
same backend code as a hub checkpoint and taken through what a run does with it: the text-only probe, narration
from 8 and 32 frames with the family's video metadata, Ego-ADR's deep and shallow stages and the two one-pass
baselines, left-padded batching, the stage cache, ``serve`` + the OpenAI backend, and the memory planner's
numbers, which are checked against the token layout the family's processor actually produces.
"""

from __future__ import annotations

import numpy as np
import pytest

from ego_adr.models import Frames, GenerationConfig, Message, Request, load_model
from ego_adr.models.families import FAMILIES
from ego_adr.models.memory_planner import arch_for, arch_from_folder, estimate, plan

ARCHS = tuple(FAMILIES)
VLMS = tuple(a for a in ARCHS if FAMILIES[a].kind == "vlm")
TEXTS = tuple(a for a in ARCHS if FAMILIES[a].kind == "text")
CFG = GenerationConfig(max_new_tokens=12)


@pytest.fixture(scope="session")
def tiny():
    """arch -> the loaded tiny model (built on first use into the session's cache, loaded once)."""
    loaded: dict = {}

    def get(arch: str):
        if arch not in loaded:
            loaded[arch] = load_model(f"tiny-{arch}", device="cpu", batch_size=4)
        return loaded[arch]

    return get


def clip(n: int = 8, side: int = 112, fps: float = 1.0, seed: int = 0, h: int | None = None) -> Frames:
    rng = np.random.default_rng(seed)
    return Frames(rng.integers(0, 256, (n, h or side, side, 3), dtype=np.uint8), fps=fps)


def visual_token_count(model, encoded) -> int:
    """How many positions of the prompt stand for visual features (the ids the model config names)."""
    cfg = model.model.config
    ids = {getattr(cfg, k, None) for k in ("video_token_id", "video_token_index", "image_token_id",
                                            "image_token_index")} - {None}
    return int(sum(int(t) in ids for t in encoded["input_ids"][0].tolist()))


# ---- the folder ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ARCHS)
def test_tiny_folder_loads_as_its_family_through_the_auto_classes(arch, tiny):
    m = tiny(arch)
    fam = FAMILIES[arch]
    assert m.family == arch and m.family_spec is fam
    # the real config class of that architecture (its class attribute: 4.57's Qwen-VL configs forward reads)
    assert type(m.model.config).model_type in fam.model_types
    assert m.capabilities.text_only is fam.text_only
    assert m.capabilities.video is (fam.kind == "vlm")
    if fam.kind == "vlm":
        proc = m.processor
        token = proc.video_token
        assert len(proc.tokenizer(token, add_special_tokens=False)["input_ids"]) == 1  # a real special token
        text = proc.apply_chat_template([{"role": "user", "content": [{"type": "video"}, {"type": "text",
                                                                                          "text": "Q?"}]}],
                                        tokenize=False, add_generation_prompt=True)
        assert token in text and "Q?" in text
        assert type(proc.video_processor).__module__.startswith("transformers.models.")
    else:
        text = m.tokenizer.apply_chat_template([{"role": "user", "content": "Q?"}], tokenize=False,
                                               add_generation_prompt=True)
        assert "Q?" in text and text != "Q?"


# ---- probe ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ARCHS)
def test_probe_runs_text_only_where_the_family_allows_it(arch, tiny):
    from ego_adr.reasoning.probe import run_probe

    rec = Recorder(tiny(arch))
    res = run_probe(rec, trials=1, max_new_tokens=12)
    assert rec.requests  # the probe asked the real model
    if FAMILIES[arch].text_only:
        assert isinstance(res.stage1["answer"], str) and res.stage1["error"] is None
        assert res.route in ("deep", "shallow") and res.reason.startswith("stage")
        assert not any(r.has_frames for r in rec.requests)  # text only
    else:  # Video-LLaVA: no text-only input (Section 3.2): shallow; the black-image probe (6.4) is evidence only
        assert res.stage1["declared"] and res.route == "shallow" and "no text-only input" in res.reason
        assert isinstance(res.black_image["stage1"]["answer"], str)
        for r in rec.requests:
            f = r.messages[0].content[0]
            assert isinstance(f, Frames) and not f.array.any()


# ---- narration, token layout, planner ------------------------------------------------------------------------
@pytest.mark.parametrize("arch", VLMS)
@pytest.mark.parametrize("frames", [8, 32])
def test_narration_tokens_match_the_planner_and_carry_the_clip_rate(arch, frames, tiny):
    m = tiny(arch)
    fam = FAMILIES[arch]
    side = 128 if arch == "qwen3-vl" else 112  # whole token cells at the tiny per-frame budget
    fps = frames / 16.0  # a 16-second window
    req = Request([Message.user(clip(frames, side, fps), "Describe what the person does.")], CFG)
    g = m.generate([req])[0]
    assert g.ok and isinstance(g.text, str), g.error

    enc = m.encode([req])
    arch_numbers = arch_from_folder(m.model_id)
    assert arch_numbers is not None
    assert visual_token_count(m, enc) == estimate(arch_numbers, frames, side * side).visual_tokens
    rendered = m.processor.tokenizer.decode(enc["input_ids"][0])
    if arch == "qwen2.5-vl":  # temporal position ids from the sampled rate: temporal_patch / fps
        assert enc["second_per_grid_ts"].tolist() == pytest.approx([2 / fps])
    if arch == "qwen3-vl":  # text timestamps per temporal patch, from fps and frame indices
        assert f"<{0.5 / fps:.1f} seconds>" in rendered and f"<{2.5 / fps:.1f} seconds>" in rendered
    assert fam.video_metadata(req.messages[0].content[0])["fps"] == pytest.approx(fps)


@pytest.mark.parametrize("arch", TEXTS)
def test_text_families_refuse_frames_per_request(arch, tiny):
    out = tiny(arch).generate([Request([Message.user(clip(), "x")], CFG), Request([Message.user("Score?")], CFG)])
    assert "cannot take video frames" in out[0].error and out[1].ok


@pytest.mark.parametrize("arch", ARCHS)
def test_planner_numbers_come_from_the_family(arch, tiny):
    fam = FAMILIES[arch]
    for hub in fam.hub:
        assert arch_for(hub.alias) is hub.arch and arch_for(hub.hub_id) is hub.arch
        p = plan(hub.hub_id, hub.arch, 24.0, 8)
        assert p.fits is (hub.arch.params_b < 10), p.reason  # the 32B/38B siblings need more than 24 GB
    if fam.max_frames:
        p = plan(fam.hub[0].hub_id, fam.hub[0].arch, 80.0, fam.max_frames * 4)
        assert not p.fits and f"at most {fam.max_frames} frames" in p.reason
    tiny_arch = arch_for(f"tiny-{arch}", tiny(arch).model_id)
    assert tiny_arch is not None and tiny_arch.dynamic is fam.pixel_budget


# ---- Ego-ADR stages and baselines ----------------------------------------------------------------------------
class Recorder:
    """Passes every request to the real model and keeps them (to see what each stage sent)."""

    def __init__(self, model):
        self.model, self.requests = model, []

    model_id = property(lambda self: self.model.model_id)
    fingerprint = property(lambda self: self.model.fingerprint)
    capabilities = property(lambda self: self.model.capabilities)

    def generate(self, requests):
        self.requests += requests
        return self.model.generate(requests)


def _items(n: int = 2):
    from ego_adr.data.sample import Sample
    from ego_adr.reasoning.pipeline import Item

    procedure = ("Fill the kettle with water. Boil the water. Put a tea bag in the cup. Pour the water into the "
                 "cup. Remove the tea bag.")
    out = []
    for i in range(n):
        s = Sample(source="demo", task="multiple-choice", sample_id=f"t/{i}", task_id="tea", procedure=procedure,
                   video_id=f"v{i}", video_path=None, start=0.0, end=8.0,
                   action=["Boil the water", "Pour the water into the cup"][i % 2], action_field="action",
                   ground_truth=["Correct"])
        out.append(Item(s, frames=clip(8, 112, 1.0, seed=i, h=84 + 28 * i)))
    return out


@pytest.mark.parametrize("arch", VLMS)
@pytest.mark.parametrize("mode", ["deep", "shallow", "direct", "cot"])
def test_pipeline_modes_run_through_the_backend(arch, mode, tiny):
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig

    rec = Recorder(tiny(arch))
    pipe = EgoADR(rec, PipelineConfig(mode=mode, max_new_tokens=12))
    rows = pipe.process(_items())
    for row in rows:
        assert row["route"] == mode
        assert row["failure"] in (None, "unparseable"), row["failure"]  # the model answered every call
        assert isinstance(row["raw"], str)
    stages = {r.meta["stage"] for r in rec.requests}
    expected = {"deep": {"bank", "match", "narrate", "classify"}, "shallow": {"narrate"}, "direct": {"direct"},
                "cot": {"cot"}}[mode]
    assert expected <= stages, stages
    for r in rec.requests:
        if r.meta["stage"] in ("narrate", "direct", "cot"):
            assert r.has_frames
        elif not FAMILIES[arch].text_only:  # Section 6.4: a black clip stands in for "no visual input"
            f = r.messages[0].content[0]
            assert isinstance(f, Frames) and not f.array.any()
        else:
            assert not r.has_frames


# ---- batching, cache, serve ----------------------------------------------------------------------------------
def _mixed_requests(arch: str) -> list[Request]:
    if FAMILIES[arch].kind == "text":
        return [Request([Message.user(q)], CFG) for q in
                ("Short.", "Score this answer from 0 to 5 against the reference, with one line of reasons.", "5?")]
    return [Request([Message.user(clip(8, 112, seed=1), "Is there a procedural error in this step?")], CFG),
            Request([Message.user(clip(4, 112, 2.0, seed=2, h=84), "Error?")], CFG),
            Request([Message.user(clip(8, 112, 0.5, seed=3), "What is the person holding in the left hand?")], CFG)]


@pytest.mark.parametrize("arch", ARCHS)
def test_batch_with_left_padding_equals_one_at_a_time(arch, tiny, caplog):
    m = tiny(arch)
    reqs = _mixed_requests(arch)  # clips of 8 and 4 frames, of two sizes, and prompts of different lengths
    assert m.tokenizer.padding_side == "left"
    with caplog.at_level("WARNING", logger="ego_adr.models.hf"):
        batched = m.generate(reqs)
    assert "retrying one by one" not in caplog.text  # batches really ran as batches
    single = [m.generate([r])[0] for r in reqs]
    assert [g.error for g in batched] == [None] * len(reqs)
    assert [g.text for g in batched] == [g.text for g in single]


@pytest.mark.parametrize("arch", ARCHS)
def test_stage_cache_key_is_per_model_and_hits_on_repeat(arch, tiny, tmp_path):
    from ego_adr.models.cache import CachedModel, StageCache, request_key

    m = tiny(arch)
    other = tiny("qwen2.5-vl" if arch != "qwen2.5-vl" else "qwen2-vl")
    req = _mixed_requests(arch)[0]
    assert request_key(m, req, "hf") == request_key(m, req, "hf")
    assert request_key(m, req, "hf") != request_key(other, req, "hf")  # the fingerprint names the folder's hash
    assert f"tiny-{arch}-" in m.fingerprint
    with StageCache(tmp_path / "c.sqlite") as cache:
        cm = CachedModel(m, cache, "hf")
        first, again = cm.generate([req])[0], cm.generate([req])[0]
        assert first.ok and again.text == first.text
        assert cm.stats()["cache_hits"] == 1


@pytest.mark.parametrize("arch", ARCHS)
def test_served_answer_equals_local_answer(arch, tiny):
    from ego_adr.models.openai_api import OpenAIChatModel
    from ego_adr.models.serve import BackgroundServer

    m = tiny(arch)
    reqs = _mixed_requests(arch)[:2]
    local = m.generate(reqs)
    with BackgroundServer(m, model_name=arch) as srv:
        # lossless frames at full size, so the served model sees exactly the local frames
        remote = OpenAIChatModel(arch, base_url=srv.base_url, image_format="png", max_side=None).generate(reqs)
    assert [g.error for g in remote] == [None, None]
    assert [g.text for g in remote] == [g.text for g in local]


def test_qwen3_vl_per_frame_budget_is_its_token_cap_not_the_clip_budget():
    """Qwen3-VL reads ``size.longest_edge`` as the whole clip's budget; a per-frame budget must become its
    ``max_video_tokens`` so that 8 and 32 frames get the same per-frame resolution."""
    m = load_model("tiny-qwen3-vl", device="cpu", max_pixels_per_frame=64 * 64)
    assert m.describe()["video_kwargs"]["max_video_tokens"] == 4 and m.fingerprint.endswith("px=4cells")
    for n in (8, 32):
        enc = m.encode([Request([Message.user(clip(n, 128), "x")], CFG)])
        assert visual_token_count(m, enc) == (n // 2) * 4  # 2x2 cells per temporal patch at 64x64 px
