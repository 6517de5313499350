"""Candidate likelihoods on real weights (issue 45): llama.cpp and the HF backend give the same numbers for the same
GGUF within a stated tolerance; each model passes a known-answer check through each backend, and random weights of
the same tokenizer fail it; the packaged files are the pinned ones; every call goes through the stage cache. And
the HF backend reads the GGUF with its own chat template (the file that loads ``smollm2_hf``: loaded once a worker).

The tolerance: llama.cpp multiplies the quantised weights (Q4_1 blocks) by activations it quantises to 8 bits in
each dot product, while the HF backend dequantises the weights to fp32 and multiplies in fp32; the logits differ by
that rounding. Measured on the requests below (SmolLM2): 0.001-0.03 nats on the candidates the model finds likely,
up to 0.8 nats on ones below 1%. So the check is on what a monitor reads: the same tokens, the same most likely
candidate, and the candidates' renormalised probabilities within 0.05 of each other (total variation).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ego_adr.errors import UserError
from ego_adr.models.base import Message
from ego_adr.models.known_answers import KNOWN, known_answer, write_random_gguf
from ego_adr.models.likelihood import LikelihoodRequest, normalised, prefix_free
from tests.real_models.test_real_backends import _ask

pytestmark = pytest.mark.slow

TOLERANCE = 0.05  # total variation between the two backends' renormalised candidate probabilities

REQUESTS = [
    LikelihoodRequest("The capital of France is", (" Paris", " London", " the", " Madrid is big")),
    LikelihoodRequest("Input Sequence:\n -1, 1, 2, 3, 4, 5, 6, ", tuple(prefix_free([str(i) for i in range(14)], ","))),
    LikelihoodRequest([Message.user("What is the capital of France?")], ("Paris", "The capital", "London")),
]


def test_llamacpp_and_the_hf_backend_agree_on_one_gguf(smollm2_llamacpp, smollm2_hf):
    a, b = smollm2_llamacpp.loglikelihood(REQUESTS), smollm2_hf.loglikelihood(REQUESTS)
    for req, x, y in zip(REQUESTS, a, b):
        assert x.ok and y.ok, (x.error, y.error)
        assert x.tokens == y.tokens  # the same token split of prefix and candidates
        px, py = (normalised(x.logprobs), normalised(y.logprobs))
        assert px.index(max(px)) == py.index(max(py)), req.candidates
        tv = sum(abs(math.exp(p) - math.exp(q)) for p, q in zip(px, py)) / 2
        assert tv <= TOLERANCE, (req.candidates, tv)


@pytest.mark.parametrize("alias,backend", [("smollm2-135m", "llamacpp"), ("smollm2-135m", "hf"),
                                           ("smollm2-135m", "openai"), ("gemma3-270m", "llamacpp")])
def test_each_model_passes_its_known_answer_through_each_backend(alias, backend, request):
    if backend == "openai":  # our server over the HF backend: the protocol's echo + logprobs request
        from ego_adr.models.openai_api import OpenAIChatModel
        from ego_adr.models.serve import BackgroundServer

        with BackgroundServer(request.getfixturevalue("smollm2_hf"), model_name=alias) as srv:
            client = OpenAIChatModel(alias, base_url=srv.base_url, concurrency=1, max_retries=0)
            passed, probs = known_answer(client, alias)
            direct = request.getfixturevalue("smollm2_hf").loglikelihood([LikelihoodRequest(*KNOWN[alias])])[0]
            assert probs == pytest.approx([math.exp(x) for x in direct.logprobs], abs=1e-6)  # what the model says
    else:
        fixture = {("smollm2-135m", "llamacpp"): "smollm2_llamacpp", ("gemma3-270m", "llamacpp"): "gemma_llamacpp",
                   ("smollm2-135m", "hf"): "smollm2_hf"}[alias, backend]
        passed, probs = known_answer(request.getfixturevalue(fixture), alias)
    assert passed, probs


def test_random_weights_of_the_same_tokenizer_fail_the_known_answer(tmp_path, smollm2_hf):
    """The random GGUF through llama.cpp; through the HF backend, a folder holding SmolLM2's tokenizer (as
    ``smollm2_hf`` read it from the GGUF) and a network of the random GGUF's small shape, freshly initialised:
    loading the random GGUF itself through transformers parsed the whole file three times (20 s on a busy machine)
    to build that same tokenizer, and reading a GGUF is what ``smollm2_hf`` tests."""
    import copy

    import torch
    from transformers import AutoModelForCausalLM

    from ego_adr.models.hf_text import HFTextLM
    from ego_adr.models.llamacpp_backend import LlamaCppModel
    from tests.real_models.conftest import gguf

    fake = write_random_gguf(gguf("smollm2-135m"), tmp_path / "random-smollm2.gguf")
    model = LlamaCppModel(str(fake), threads=1)
    try:
        passed, probs = known_answer(model, "smollm2-135m")
        tokens = model.loglikelihood(REQUESTS[:1])[0].tokens
    finally:
        model.close()
    assert not passed and max(probs) < 0.01, probs
    assert tokens == [1, 1, 1, 3]  # the same tokenizer: the same split as the real weights'
    config = copy.deepcopy(smollm2_hf.model.config)  # the random GGUF's shape (known_answers.SMALL)
    config.update({"num_hidden_layers": 2, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
                   "num_key_value_heads": 2, "head_dim": 16})
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path / "random-hf")
    smollm2_hf.tokenizer.save_pretrained(tmp_path / "random-hf")
    hf = HFTextLM(str(tmp_path / "random-hf"), device="cpu")
    assert hf.tokenizer("The capital of France is Paris")["input_ids"] == \
        smollm2_hf.tokenizer("The capital of France is Paris")["input_ids"]
    passed, probs = known_answer(hf, "smollm2-135m")
    assert not passed and max(probs) < 0.01, probs


def test_the_packaged_files_are_the_pinned_ones_and_other_weights_are_refused(tmp_path):
    from ego_adr.models.packaged import PACKAGED, locate, sha256_of, verify

    for alias, p in PACKAGED.items():
        try:
            path = locate(alias)
        except UserError as e:  # a package this machine lacks: the other tests skip for it too
            pytest.skip(str(e))
        assert sha256_of(path / p.weights if p.weights else path) == p.sha256, alias
    other = tmp_path / "SmolLM2-135M-Instruct.Q4_1.gguf"
    other.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(UserError, match="not the pinned"):
        verify(PACKAGED["smollm2-135m"], other)


def test_likelihoods_go_through_the_stage_cache(smollm2_llamacpp, tmp_path):
    from ego_adr.models.cache import CachedModel, StageCache

    req = LikelihoodRequest("1, 2, 3,", (" 4", " 5"), {"stage": "test"})
    first = CachedModel(smollm2_llamacpp, StageCache(tmp_path / "c.sqlite"))
    a = first.loglikelihood([req, req])
    again = CachedModel(smollm2_llamacpp, StageCache(tmp_path / "c.sqlite"))
    b = again.loglikelihood([req])
    assert first.model_calls == 1 and first.cache_hits == 1  # the duplicate asked once
    assert again.model_calls == 0 and again.cache_hits == 1 and b[0].logprobs == a[0].logprobs


def test_a_chat_prefix_is_scored_after_the_template_and_a_bad_request_fails_alone(smollm2_llamacpp):
    chat, bad = smollm2_llamacpp.loglikelihood([REQUESTS[2], LikelihoodRequest("", ("x",))])
    assert chat.ok and chat.tokens == [1, 2, 1]
    assert not bad.ok and not bad.retryable  # an empty raw prefix without a start token: nothing to condition on
    with pytest.raises(ValueError, match="non-empty"):
        LikelihoodRequest("a", ("",))


def test_the_llamacpp_backend_takes_a_gguf_path_or_alias_and_refuses_anything_else(tmp_path):
    from ego_adr.models.loading import check_model_name

    check_model_name("smollm2-135m", "llamacpp")
    with pytest.raises(UserError, match="neither"):
        check_model_name(str(tmp_path / "absent.gguf"), "llamacpp")
    with pytest.raises(UserError, match="needs --model"):
        check_model_name(None, "llamacpp")
    fake = Path(tmp_path / "zip.gguf")
    fake.write_bytes(b"PK\x03\x04")
    with pytest.raises(UserError, match="is not a GGUF file"):
        check_model_name(str(fake), "llamacpp")


# --- the HF backend reading the GGUF itself: here, beside the other tests of smollm2_hf, so that README's
# --dist loadfile dequantises the GGUF (~30 s on 2 cores) on one worker only (issue 46 item 12)
def test_the_hf_backend_reads_a_gguf_checkpoint_with_its_own_chat_template(smollm2_hf, smollm2_server):
    from ego_adr.models.packaged import locate

    gguf = locate("smollm2-135m")
    assert smollm2_hf.model_id == str(gguf) and smollm2_hf.family == "llama" and not smollm2_hf.is_vlm
    assert smollm2_hf.fingerprint.startswith(f"{gguf.name}@sha:")
    enc = smollm2_hf.encode([_ask("Name one colour.")])
    text = smollm2_hf.tokenizer.decode(enc["input_ids"][0])
    assert "<|im_start|>user\nName one colour.<|im_end|>" in text and text.rstrip().endswith("assistant")
    gens = smollm2_hf.generate([_ask("Name one colour."), _ask("Name one animal.", 12)])
    assert all(g.ok and g.text and "<|im_end|>" not in g.text for g in gens), [g.error for g in gens]
    # the same weights behind llama.cpp: both backends read the GGUF's template, so the prompt tokens agree
    served = smollm2_server.chat({"messages": [{"role": "user", "content": "Name one colour."}], "max_tokens": 1,
                                  "temperature": 0})
    assert served["usage"]["prompt_tokens"] == enc["input_ids"].shape[1]
    json.dumps(served)  # a plain JSON reply
