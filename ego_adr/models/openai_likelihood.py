"""Candidate likelihoods over the OpenAI-compatible protocol (:mod:`ego_adr.models.likelihood`): ``/completions``
with ``echo`` and ``logprobs``, the request lm-eval's ``local-completions`` model sends for a ``loglikelihood``.

Why this request: it is the protocol's only way to the probabilities of given text. vLLM answers it, and so does
our own :mod:`ego_adr.models.serve` (for any model with ``prompt_logprobs``); llama.cpp's server ignores ``echo``
(use ``--backend llamacpp`` for it), and a server that returns no prompt log-probabilities fails the request,
saying so. Each candidate is one request for the prefix and the candidate together; the candidate's tokens are
those that end after the prefix's last character (a token spanning the boundary belongs to the candidate, as in
the token split of the other backends), up to the candidate's end (a generated token is never counted). A chat
prefix needs the model's chat template, which the protocol does not expose: such a request fails alone. The
requests are sent by :meth:`ego_adr.models.openai_api.OpenAIChatModel.loglikelihood`; what a reply means is read
here.
"""

from __future__ import annotations


def read(body: dict, start: int, end: int) -> tuple[float, int]:
    """(sum of the log-probabilities, token count) of the tokens of ``body``'s echoed prompt that end after
    character ``start`` and begin before ``end``; a ValueError when the reply holds no prompt log-probabilities."""
    lp = body["choices"][0]["logprobs"]
    tokens, values, offsets = lp["tokens"], lp["token_logprobs"], lp["text_offset"]
    if not (isinstance(tokens, list) and len(tokens) == len(values) == len(offsets) and tokens):
        raise ValueError("no echoed prompt tokens")
    ends = [*offsets[1:], offsets[-1] + len(tokens[-1])]
    picked = [v for o, e, v in zip(offsets, ends, values) if e > start and o < end]
    if not picked or any(v is None for v in picked):
        raise ValueError("the candidate's tokens carry no log-probability")
    return float(sum(picked)), len(picked)
