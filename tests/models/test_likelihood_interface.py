"""The candidate-likelihood interface around a model (issue 45 item 1), with no real weights: the context /
continuation split, prefix-free candidates, the stage cache (hits, duplicates, failures never stored) and the
OpenAI protocol's side against our own server, whose ``/v1/completions`` only scores prompts. The numbers
themselves are checked on real weights in ``tests/real_models/test_likelihood.py``."""

from __future__ import annotations

import math

import httpx
import pytest

from ego_adr.models.base import Message
from ego_adr.models.cache import CachedModel, StageCache
from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.models.likelihood import LikelihoodRequest, Likelihoods, normalised, prefix_free, split
from ego_adr.models.openai_likelihood import read


def test_the_continuation_starts_where_the_tokens_stop_agreeing_with_the_prefix():
    assert split([1, 2, 3], [1, 2, 3, 4, 5]) == ([1, 2, 3], [4, 5])
    assert split([1, 2, 3], [1, 2, 7, 8]) == ([1, 2], [7, 8])  # the last prefix token merged into the candidate


def test_a_candidate_that_starts_another_gets_the_separator_and_the_rest_stay():
    assert prefix_free(["1", "10", "11", "2"], ",") == ["1,", "10", "11", "2"]
    assert prefix_free(["insert support", "insert support tab"], ",") == ["insert support,", "insert support tab"]
    got = normalised([-1.0, -2.0, -3.0])
    assert sum(math.exp(x) for x in got) == pytest.approx(1.0) and got[0] > got[1] > got[2]


def test_a_request_needs_non_empty_candidates_and_text_only_prefix():
    with pytest.raises(ValueError, match="non-empty"):
        LikelihoodRequest("a", ())
    with pytest.raises(ValueError, match="raw text or a list of chat messages"):
        LikelihoodRequest(["not a message"], ("x",))
    assert LikelihoodRequest([Message.user("hi")], ("x",)).form == "chat"


def test_likelihoods_go_through_the_stage_cache_and_a_failure_is_not_stored(tmp_path):
    class Failing(ScriptedModelDouble):
        def loglikelihood(self, requests):
            return [Likelihoods(None, error="connection refused", kind="infrastructure") for _ in requests]

    req = LikelihoodRequest("1, 2,", (" 3", " 4"), {"stage": "t"})
    cache = StageCache(tmp_path / "c.sqlite")
    bad = CachedModel(Failing(), cache).loglikelihood([req])[0]
    assert bad.retryable and len(cache) == 0
    first = CachedModel(ScriptedModelDouble(), cache)
    a = first.loglikelihood([req, req])
    assert first.model_calls == 1 and first.cache_hits == 1 and a[0].logprobs == a[1].logprobs
    again = CachedModel(ScriptedModelDouble(), cache)
    assert again.loglikelihood([req])[0].logprobs == a[0].logprobs and again.model_calls == 0
    class WritesOnly:  # a backend that generates and gives no token probabilities
        model_id, fingerprint = "writes-only", "writes-only-v1"

    with pytest.raises(ValueError, match="gives no token probabilities"):
        CachedModel(WritesOnly(), cache).loglikelihood([req])


def test_an_echoed_prompt_is_read_from_the_candidates_first_character_to_its_end():
    body = {"choices": [{"logprobs": {"tokens": ["The", " cap", "ital", " Paris", "."],
                                      "token_logprobs": [None, -1.0, -0.5, -0.25, -3.0],
                                      "text_offset": [0, 3, 7, 11, 17]}}]}
    assert read(body, 11, 17) == (-0.25, 1)  # " Paris"; the generated "." is not the candidate's
    assert read(body, 9, 17) == (-0.75, 2)  # a token spanning the boundary belongs to the candidate
    with pytest.raises(ValueError):
        read({"choices": [{"logprobs": {"tokens": [], "token_logprobs": [], "text_offset": []}}]}, 0, 1)


def test_our_server_scores_prompts_only_and_the_client_says_why_a_server_cannot():
    from ego_adr.models.openai_api import OpenAIChatModel
    from ego_adr.models.serve import BackgroundServer

    with BackgroundServer(ScriptedModelDouble(), model_name="double") as srv:
        r = httpx.post(f"{srv.base_url}/completions", json={"model": "double", "prompt": "hi", "max_tokens": 4})
        assert r.status_code == 400 and "only to score a prompt" in r.text
        client = OpenAIChatModel("double", base_url=srv.base_url, concurrency=1, max_retries=0)
        raw, chat = client.loglikelihood([LikelihoodRequest("a b", (" c",)),
                                          LikelihoodRequest([Message.user("a")], ("b",))])
        assert not raw.ok and not raw.retryable and "gives no token probabilities" in raw.error
        assert not chat.ok and "chat template" in chat.error
        client.close()
