"""Candidate likelihoods on the HF backend (:mod:`ego_adr.models.likelihood`), from a causal LM's logits.

Why here and not in :mod:`ego_adr.models.hf`: the generation path is about chat templates, processors and
batching for video; this one is a forward pass and a log-softmax. The tokenisation rules are llama.cpp's, so the
two backends score the same tokens (``tests/real_models/``): a raw prefix gets the tokenizer's start-of-text
token where the model wants one and its text is read literally (a special token's spelling is plain text); a
chat prefix is rendered by the chat template, whose special tokens are read as such and nothing is added.

The prefix runs once (its key/value cache kept for the next request whose prefix extends it: a monitor asking at
every step of a recording pays only for the new steps), then every candidate's tokens run in one batch on copies
of that cache. A GGUF loads dequantised to fp32: its numbers differ from llama.cpp's, which computes on the
quantised weights (tests state the tolerance).
"""

from __future__ import annotations

import copy
import time
from contextlib import contextmanager

from ego_adr.models.hf_inputs import render_text_prompt
from ego_adr.models.likelihood import LikelihoodRequest, Likelihoods, split


def loglikelihood(lm, requests: list[LikelihoodRequest]) -> list[Likelihoods]:
    """``lm``: an :class:`~ego_adr.models.hf.HFVideoLM` holding a text causal LM (``lm.is_vlm`` false)."""
    out = []
    for r in requests:
        t0 = time.perf_counter()
        try:
            out.append(_score(lm, r, t0))
        except ValueError as e:
            out.append(Likelihoods(None, error=f"bad request: {e}", seconds=time.perf_counter() - t0))
        except RuntimeError as e:  # out of memory and the like: the request's own failure, the kind from its text
            out.append(Likelihoods(None, error=f"{type(e).__name__}: {str(e)[:300]}", seconds=time.perf_counter() - t0))
    return out


def tokens(lm, text: str, special: bool) -> list[int]:
    """Token ids of ``text``: with ``special``, the start-of-text rule applied and special-token spellings read as
    plain text (a raw prefix); without, nothing added and special tokens parsed (a rendered chat template)."""
    return list(lm.tokenizer(text, add_special_tokens=special, split_special_tokens=special)["input_ids"])


def _score(lm, request: LikelihoodRequest, t0: float) -> Likelihoods:
    if lm.is_vlm:
        raise ValueError("candidate likelihoods need a text causal LM on this backend")
    if request.form == "chat":
        prefix, special = render_text_prompt(lm.tokenizer, request.chat()), False
    else:
        prefix, special = request.prefix, True
    context = tokens(lm, prefix, special)
    parts = [split(context, tokens(lm, prefix + c, special)) for c in request.candidates]
    if any(not cont for _, cont in parts):
        raise ValueError("a candidate adds no token to the prefix")
    if any(not base for base, _ in parts):
        raise ValueError("the prefix has no token to condition on (an empty prefix of a model without a "
                         "start-of-text token)")
    logprobs: list[float] = [0.0] * len(parts)
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, (base, _) in enumerate(parts):
        groups.setdefault(tuple(base), []).append(i)
    for base, idx in groups.items():
        for i, lp in zip(idx, _candidates(lm, list(base), [parts[i][1] for i in idx])):
            logprobs[i] = lp
    return Likelihoods(logprobs, [len(c) for _, c in parts], seconds=time.perf_counter() - t0)


def _candidates(lm, base: list[int], conts: list[list[int]]) -> list[float]:
    import torch

    with torch.inference_mode(), cpu_threads(lm._cpu_threads):
        past, last = _prefix(lm, base)
        first = torch.log_softmax(last.float(), dim=-1)
        out = [float(first[c[0]]) for c in conts]
        longer = [j for j, c in enumerate(conts) if len(c) > 1]
        if not longer:
            return out
        width = max(len(conts[j]) - 1 for j in longer)
        pad = lm.tokenizer.pad_token_id or 0
        ids = torch.tensor([conts[j][:-1] + [pad] * (width + 1 - len(conts[j])) for j in longer], device=lm.model.device)
        mask = torch.ones(len(longer), len(base) + width, dtype=torch.long, device=lm.model.device)
        for row, j in enumerate(longer):
            mask[row, len(base) + len(conts[j]) - 1:] = 0
        cache = copy.deepcopy(past)
        cache.batch_repeat_interleave(len(longer))
        pos = torch.arange(len(base), len(base) + width, device=lm.model.device).expand(len(longer), -1)
        logits = lm.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                          **_cache_kw(lm, cache)).logits
        lsm = torch.log_softmax(logits.float(), dim=-1)
        for row, j in enumerate(longer):
            c = conts[j]
            out[j] += sum(float(lsm[row, k - 1, c[k]]) for k in range(1, len(c)))
        return out


def _prefix(lm, base: list[int]):
    """(key/value cache after ``base``, logits of the token after it); the cache of the last prefix is extended
    when ``base`` starts with it, else the prefix runs from the start."""
    import torch

    state = getattr(lm, "_likelihood_prefix", None)
    if state is not None and state[0] == tuple(base):
        return state[1], state[2]
    start, past = 0, None
    if state is not None and len(state[0]) < len(base) and tuple(base[: len(state[0])]) == state[0]:
        start, past = len(state[0]), state[1]
    ids = torch.tensor([base[start:]], device=lm.model.device)
    pos = torch.arange(start, len(base), device=lm.model.device)[None]
    mask = torch.ones(1, len(base), dtype=torch.long, device=lm.model.device)
    res = lm.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True, logits_to_keep=1,
                   **_cache_kw(lm, past))
    cache = res.get("cache") if res.get("cache") is not None else res.get("past_key_values")
    lm._likelihood_prefix = (tuple(base), cache, res.logits[0, -1])
    return cache, res.logits[0, -1]


def _cache_kw(lm, cache) -> dict:
    """The key/value cache argument under its name in this transformers (``cache`` from 5.25, before that
    ``past_key_values``)."""
    import inspect

    takes = inspect.signature(lm.model.forward).parameters
    return {"cache": cache} if "cache" in takes else {"past_key_values": cache}


def prompt_logprobs(lm, text: str) -> tuple[list[str], list[int], list[float | None]]:
    """(token texts, start offsets in ``text``, log-probability of each given the ones before; None for the first)
    of a raw ``text``, tokenised by the raw rule (:func:`tokens`)."""
    import torch

    enc = lm.tokenizer(text, add_special_tokens=True, split_special_tokens=True, return_offsets_mapping=True)
    ids = list(enc["input_ids"])
    if len(ids) < 1:
        raise ValueError("an empty prompt")
    with torch.inference_mode(), cpu_threads(lm._cpu_threads):
        logits = lm.model(input_ids=torch.tensor([ids], device=lm.model.device)).logits[0]
        lsm = torch.log_softmax(logits.float(), dim=-1)
    lps = [None] + [float(lsm[i - 1, ids[i]]) for i in range(1, len(ids))]
    return ([lm.tokenizer.decode([t]) for t in ids], [int(a) for a, _ in enc["offset_mapping"]], lps)


@contextmanager
def cpu_threads(n: int | None):
    """Temporarily limit torch's intra-op threads (process-global, so restored afterwards)."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
