"""A GGUF with a real model's tokenizer and architecture and random weights: the wrong weights, to show that the
real-model checks would catch them (issue 45 item 4).

Every key of the real file is copied (tokenizer, chat template, special tokens, architecture name); the sizes are
made small (2 blocks, 64-wide) so the file is a few MB, and every tensor is random (seeded), in F32. llama.cpp and
transformers load it like the real one and tokenise every text the same way; only what the weights know is gone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

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
