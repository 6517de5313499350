"""Sampled decoding in the one model protocol (issue 27, PREGO's sampled setting): what a sampled config is, that a
greedy config's cache key is exactly what it was before sampling existed, and that every backend honours
temperature, top-p and the per-request seed -- the HF backend on the tiny model (the same request gives the same
reply alone and inside any batch; two seeds give two replies), the OpenAI-compatible payload, vLLM's
``SamplingParams`` keywords. The served-equals-local check for sampled requests is in
``test_served_equals_local.py``."""

from __future__ import annotations

import hashlib
import json

import pytest

from ego_adr.models.base import Capabilities, Generation, GenerationConfig, Message, Request
from ego_adr.models.cache import KEY_SCHEMA, CachedModel, StageCache, messages_digest, request_key

META = {"stage": "narrate", "prompt": "narration", "prompt_version": "1"}


class FingerprintDouble:
    """A model double with a fixed fingerprint, for keys only."""

    fingerprint = "pin-double:0"


def _req(config: GenerationConfig, text: str = "describe") -> Request:
    return Request([Message.system("You watch videos."), Message.user(text)], config, meta=dict(META))


# ---- the config and its cache key ----------------------------------------------------------------------------
def test_a_greedy_configs_cache_key_is_exactly_what_it_was_before_sampling():
    greedy = GenerationConfig(max_new_tokens=17)
    assert greedy.key() == {"max_new_tokens": 17, "do_sample": False}
    # the key recipe of ego_adr/models/cache.py as it was, written out here (no shared code) ...
    canon = {"schema": KEY_SCHEMA, "model": "pin-double:0", "backend": "hf", "stage": "narrate",
             "prompt": "narration", "prompt_version": "1", "messages": messages_digest(_req(greedy)),
             "generation": {"max_new_tokens": 17, "do_sample": False}}
    blob = json.dumps(canon, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    key = request_key(FingerprintDouble(), _req(greedy), "hf")
    assert key == hashlib.sha256(blob.encode()).hexdigest()
    # ... and the key main's code (476003f, before sampling) gave this very request: old caches still hit
    assert key == "faf54076ea934a865412b112a96f83a9849bb7e94567d6315591be3b0ac11247"


def test_every_sampling_setting_is_in_the_key_of_a_sampled_config():
    base = GenerationConfig.sampled(0.6, top_p=0.9, seed=0, max_new_tokens=8)
    assert base.key() == {"max_new_tokens": 8, "do_sample": True, "temperature": 0.6, "top_p": 0.9, "seed": 0}
    variants = [GenerationConfig.sampled(0.7, top_p=0.9, seed=0, max_new_tokens=8),
                GenerationConfig.sampled(0.6, top_p=1.0, seed=0, max_new_tokens=8),
                GenerationConfig.sampled(0.6, top_p=0.9, seed=1, max_new_tokens=8),
                GenerationConfig(max_new_tokens=8)]
    keys = {request_key(FingerprintDouble(), _req(c), "hf") for c in [base, *variants]}
    assert len(keys) == 1 + len(variants)


def test_a_sampled_config_refuses_what_cannot_be_sampled_and_temperature_0_is_greedy():
    assert GenerationConfig.sampled(0, top_p=0.9, seed=4, max_new_tokens=5) == GenerationConfig(max_new_tokens=5)
    for bad in ({"temperature": 0.0}, {"temperature": -1.0}, {"temperature": float("inf")}, {"top_p": 0.0},
                {"top_p": 1.5}, {"seed": -1}, {"seed": 1.5}, {"seed": True}):
        with pytest.raises(ValueError):
            GenerationConfig(do_sample=True, **bad)
    with pytest.raises(ValueError, match="do_sample=True"):  # a temperature on a greedy config is a mistake
        GenerationConfig(temperature=0.6)


class SeedEchoDouble:
    """A model double that answers with the seed it was asked with, counting the requests that reach it."""

    model_id = fingerprint = "seed-echo-double"
    capabilities = Capabilities(video=False, text_only=True)

    def __init__(self):
        self.seen = 0

    def generate(self, requests):
        self.seen += len(requests)
        return [Generation(f"seed {r.config.seed}") for r in requests]


def test_each_seed_is_its_own_cache_entry(tmp_path):
    double = SeedEchoDouble()
    cm = CachedModel(double, StageCache(tmp_path), "hf")
    reqs = [_req(GenerationConfig.sampled(0.6, top_p=0.9, seed=s, max_new_tokens=8)) for s in (0, 1, 2, 1)]
    assert [g.text for g in cm.generate(reqs)] == ["seed 0", "seed 1", "seed 2", "seed 1"]
    assert double.seen == 3 and len(cm.cache) == 3  # the repeated seed is asked once
    assert [g.text for g in cm.generate(reqs[:3])] == ["seed 0", "seed 1", "seed 2"] and double.seen == 3


# ---- the HF backend on the tiny model --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    from ego_adr.models import load_model

    return load_model(str(tiny_model_dir), device="cpu", batch_size=4)


def _sampled(text: str, seed: int, temperature: float = 1.0) -> Request:
    return _req(GenerationConfig.sampled(temperature, top_p=0.95, seed=seed, max_new_tokens=10), text)


def test_hf_a_sampled_request_gives_the_same_reply_alone_and_inside_any_batch(tiny):
    import torch

    target = _sampled("What is the next step?", seed=7)
    alone = tiny.generate([target])[0]
    assert alone.ok, alone.error
    greedy = _req(GenerationConfig(max_new_tokens=10), "Name a step.")
    greedy_alone = tiny.generate([greedy])[0].text
    torch.manual_seed(123)
    state = torch.get_rng_state()
    batches = [[_sampled("Which step?", 3), target, greedy, _sampled("What is the next step?", 8)],
               [greedy, _sampled("x", 7), _sampled("y", 7), target]]
    outs = [tiny.generate(b) for b in batches]
    assert outs[0][1].text == alone.text and outs[1][3].text == alone.text
    assert outs[0][2].text == greedy_alone == outs[1][0].text  # greedy requests keep their batched path and reply
    assert torch.equal(torch.get_rng_state(), state)  # the process's random state is left as it was


def test_hf_two_seeds_give_different_replies_and_the_settings_reach_generate(tiny, monkeypatch):
    q = "What is the next step?"
    a, b = (g.text for g in tiny.generate([_sampled(q, 0), _sampled(q, 1)]))
    assert a != b
    seen = []  # what transformers' generate is given (it is not under test; our translation to it is)
    real = tiny.model.generate
    monkeypatch.setattr(tiny.model, "generate", lambda **kw: (seen.append(kw["generation_config"]), real(**kw))[1])
    tiny.generate([_sampled(q, 0, temperature=0.7), _req(GenerationConfig(max_new_tokens=10), q)])
    assert [(c.do_sample, c.temperature, c.top_p, c.top_k, c.max_new_tokens) for c in seen] == [
        (True, 0.7, 0.95, None, 10), (False, None, None, None, 10)]


# ---- OpenAI-compatible payload and vLLM's SamplingParams ---------------------------------------------------
def test_openai_payload_sends_temperature_top_p_and_seed_and_greedy_is_unchanged():
    from ego_adr.models.openai_api import OpenAIChatModel

    m = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1")  # loopback: no key needed; nothing is sent here
    greedy = m.payload(_req(GenerationConfig(max_new_tokens=33)))
    assert set(greedy) == {"model", "messages", "max_tokens", "temperature"} and greedy["temperature"] == 0.0
    sampled = m.payload(_req(GenerationConfig.sampled(0.6, top_p=0.9, seed=11, max_new_tokens=8)))
    assert {k: sampled[k] for k in ("temperature", "top_p", "seed", "max_tokens")} == {
        "temperature": 0.6, "top_p": 0.9, "seed": 11, "max_tokens": 8}


def test_vllm_sampling_params_carry_the_seed():
    from ego_adr.models.vllm_engine import sampling_kwargs

    assert sampling_kwargs(_req(GenerationConfig(max_new_tokens=17))) == {"temperature": 0.0, "max_tokens": 17}
    assert sampling_kwargs(_req(GenerationConfig.sampled(0.6, top_p=0.9, seed=4, max_new_tokens=8))) == {
        "temperature": 0.6, "top_p": 0.9, "seed": 4, "max_tokens": 8}


def test_vllm_generate_builds_one_seeded_sampling_params_per_request(tiny_model_dir):
    from transformers import AutoProcessor

    from ego_adr.models.vllm_engine import VLLMModel

    class ParamsRecord:  # stands in for vllm.SamplingParams: records its keywords
        def __init__(self, **kw):
            self.kw = kw

    class EngineDouble:  # stands in for vllm.LLM: the code around it (VLLMModel.generate) is real
        def __init__(self):
            self.params = []

        def generate(self, inputs, params, use_tqdm=False):
            self.params += params
            return [type("O", (), {"outputs": [type("C", (), {"text": f"seed {p.kw.get('seed')}"})()]})()
                    for p in params]

    m = VLLMModel.__new__(VLLMModel)
    m.processor = AutoProcessor.from_pretrained(str(tiny_model_dir))
    m.max_pixels_per_frame = None
    m.llm, m._SamplingParams = EngineDouble(), ParamsRecord
    gens = m.generate([_sampled("q", 5), _req(GenerationConfig(max_new_tokens=3)), _sampled("q", 6)])
    assert [g.text for g in gens] == ["seed 5", "seed None", "seed 6"]
    assert [p.kw for p in m.llm.params] == [
        {"temperature": 1.0, "top_p": 0.95, "seed": 5, "max_tokens": 10}, {"temperature": 0.0, "max_tokens": 3},
        {"temperature": 1.0, "top_p": 0.95, "seed": 6, "max_tokens": 10}]
