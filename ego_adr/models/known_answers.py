"""Checks that the weights behind an alias are the model's: a known answer per packaged model, and a GGUF with the
same tokenizer and random weights that must fail it (issue 45 item 4).

Why: a test that passes on any weights proves nothing about the model. The known answers are raw continuations a
model of that size completes with confidence ("The capital of France is" -> " Paris" for SmolLM2, a counting
continuation for Gemma 3), scored by candidate likelihood (:mod:`ego_adr.models.likelihood`), so every backend
that gives token probabilities runs the same check; random weights spread their probability over the whole
vocabulary (1/49,152 or less per token) and fail it.

:func:`write_random_gguf` copies every key of a real llama-architecture GGUF (tokenizer, chat template, special
tokens) and writes random tensors of a small size (2 blocks, 64 wide; a few MB, seeded, F32): llama.cpp and
transformers load it like the real file and tokenise every text the same way; only what the weights know is gone.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

#: One known answer per packaged causal LM: the prefix and its options, the right one first.
KNOWN = {"smollm2-135m": ("The capital of France is", (" Paris", " London", " Berlin", " Rome", " Madrid")),
         "gemma3-270m": ("1, 2, 3, 4, 5,", (" 6", " 7", " 5", " 8", " 1"))}
KNOWN_P = 0.5  # the right option must also be at least this likely under the model


def known_answer(model, alias: str) -> tuple[bool, list[float]]:
    """(passed, the options' probabilities) of ``alias``'s known-answer check on ``model`` (any object with
    ``loglikelihood``); a ValueError when the model could not score."""
    from ego_adr.models.likelihood import LikelihoodRequest

    prefix, options = KNOWN[alias]
    res = model.loglikelihood([LikelihoodRequest(prefix, options)])[0]
    if not res.ok:
        raise ValueError(f"{alias}: the known-answer request failed: {res.error}")
    probs = [math.exp(x) for x in res.logprobs]
    return probs[0] == max(probs) and probs[0] >= KNOWN_P, probs


SMALL = {"block_count": 2, "embedding_length": 64, "feed_forward_length": 128, "attention.head_count": 4,
         "attention.head_count_kv": 2, "rope.dimension_count": 16}


def write_random_gguf(real: Path, out: Path, seed: int = 0) -> Path:
    """``out``: a llama-architecture GGUF with ``real``'s tokenizer and metadata and random small weights."""
    import gguf

    reader = gguf.GGUFReader(str(real))
    arch = reader.fields["general.architecture"].contents()
    if arch != "llama":
        raise ValueError(f"{real} is a {arch} model; this builder writes llama-architecture files")
    writer = gguf.GGUFWriter(str(out), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        short = key.removeprefix(f"{arch}.")
        value = SMALL.get(short, field.contents())
        if key == "general.file_type":
            value = int(gguf.LlamaFileType.ALL_F32)
        sub = field.types[1] if len(field.types) > 1 else None
        writer.add_key_value(key, value, field.types[0], sub_type=sub)
    n_vocab = len(reader.fields["tokenizer.ggml.tokens"].contents())
    d, ff, kv = SMALL["embedding_length"], SMALL["feed_forward_length"], SMALL["attention.head_count_kv"]
    head = d // SMALL["attention.head_count"]
    rng = np.random.default_rng(seed)

    def tensor(name: str, *shape: int, ones: bool = False) -> None:
        data = np.ones(shape, np.float32) if ones else rng.normal(0, 0.02, shape).astype(np.float32)
        writer.add_tensor(name, data)

    tensor("token_embd.weight", n_vocab, d)
    tensor("output_norm.weight", d, ones=True)
    for b in range(SMALL["block_count"]):
        tensor(f"blk.{b}.attn_norm.weight", d, ones=True)
        tensor(f"blk.{b}.attn_q.weight", d, d)
        tensor(f"blk.{b}.attn_k.weight", kv * head, d)
        tensor(f"blk.{b}.attn_v.weight", kv * head, d)
        tensor(f"blk.{b}.attn_output.weight", d, d)
        tensor(f"blk.{b}.ffn_norm.weight", d, ones=True)
        tensor(f"blk.{b}.ffn_gate.weight", ff, d)
        tensor(f"blk.{b}.ffn_up.weight", ff, d)
        tensor(f"blk.{b}.ffn_down.weight", d, ff)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
