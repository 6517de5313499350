"""Tiny randomly initialised models of every supported architecture, built offline.

Why: tests, the demo and CI must exercise the *same* Hugging Face code path as a 7B hub model (processor chat
template, video processor, ``AutoModelForImageTextToText`` / ``AutoModelForCausalLM.from_pretrained``, batched
``generate``) without network or GPU. For each family of :mod:`ego_adr.models.families` (Qwen2-VL, Qwen2.5-VL,
Qwen3-VL, LLaVA-OneVision, Video-LLaVA, InternVL3.5, and the judges' Qwen2 and Llama text architectures) the
family's recipe gives the real config class with small sizes (text hidden 64, 2 layers; vision depth 2), a
byte-level BPE tokenizer trained here on a small built-in English corpus with the special tokens that family's
processor looks for, a chat template in that family's style and the family's own image/video processor classes;
this module seeds, instantiates and saves it as a normal Hugging Face folder.

Their outputs are random words: the pipeline records them as unparseable answers, which is the point (the code
around the model is what is under test). Building is deterministic: the same ``seed`` gives byte-identical
weights. ``tiny`` (the demo model) is the tiny Qwen2.5-VL.

    python -m ego_adr.models.tiny OUT_DIR [--arch ARCH] [--seed 0]      # ARCH: see --help
"""

from __future__ import annotations

import os
from pathlib import Path

from ego_adr.errors import OneLineParser
from ego_adr.models.families._qwen import TINY_MAX_PIXELS, TINY_MIN_PIXELS  # noqa: F401 (re-exported)
from ego_adr.models.families.tokenizer import (  # noqa: F401 (re-exported)
    CHAT_TEMPLATE,
    SPECIAL_TOKENS,
    TINY_TEXT_DIMS,
    build_tokenizer,
    tiny_vocab_size,
)


def _archs() -> tuple[str, ...]:
    from ego_adr.models.families import FAMILIES

    return tuple(FAMILIES)


ARCHS = _archs()  # every family of ego_adr.models.families has a tiny model
TINY_VERSION = "v1"

def build_tiny(out_dir: str | os.PathLike, arch: str = "qwen2.5-vl", seed: int = 0) -> Path:
    """Build the tiny model of family ``arch`` into ``out_dir`` (created; must be empty or absent) and return its
    path. The recipe (config, tokenizer, chat template, processor) is the family's
    (:mod:`ego_adr.models.families`); this function only seeds, instantiates and saves."""
    from ego_adr.models.families import FAMILIES

    if arch not in FAMILIES:
        raise ValueError(f"unknown tiny arch {arch!r}; choose one of {', '.join(ARCHS)}")
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, GenerationConfig

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; pick a new folder or delete it first")
    out.mkdir(parents=True, exist_ok=True)

    family = FAMILIES[arch]
    config, processor = family.tiny_parts()
    text = getattr(config, "text_config", None) or config
    auto = AutoModelForImageTextToText if family.kind == "vlm" else AutoModelForCausalLM
    torch.manual_seed(seed)
    if family.kind == "vlm" and not _in_auto_mapping(config):  # 4.57's mapping lacks Video-LLaVA: its own class
        from ego_adr.models.compat import image_text_model_class

        model = image_text_model_class(config)(config)
    else:
        model = auto.from_config(config, dtype=torch.float32)
    model.eval()
    model.generation_config = GenerationConfig(
        bos_token_id=text.bos_token_id,
        eos_token_id=text.eos_token_id,
        pad_token_id=text.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    (out / "TINY_MODEL.txt").write_text(
        f"Randomly initialised {arch} built by ego_adr.models.tiny (seed={seed}, {TINY_VERSION}). "
        "Outputs are random text; for tests and demos only.\n"
    )
    return out


def _in_auto_mapping(config) -> bool:
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES as ITT

    return type(config).model_type in ITT


def tiny_folder_name(arch: str) -> str:
    """The cache folder of a tiny model: one per architecture, version and transformers line."""
    from ego_adr.models.compat import tiny_suffix

    return f"tiny-{arch}-{TINY_VERSION}{tiny_suffix()}"


def ensure_tiny(arch: str = "qwen2.5-vl") -> Path:
    """Build the tiny model once into the cache root (atomically, :func:`ego_adr.store.build_once`) and return
    its path."""
    from ego_adr.store import build_once, cache_root

    final = cache_root() / tiny_folder_name(arch)
    return build_once(final, lambda dest: build_tiny(dest, arch=arch), lambda f: (f / "config.json").exists())


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    return run_cli(lambda: _build(argv), interrupted="interrupted; nothing was kept (rerun the command)")


def _build(argv) -> int:
    from ego_adr.errors import UserError

    ap = OneLineParser(
        prog="python -m ego_adr.models.tiny", description="Build a tiny random model of one architecture offline."
    )
    ap.add_argument("out_dir")
    ap.add_argument("--arch", choices=ARCHS, default="qwen2.5-vl", help="architecture (default: qwen2.5-vl)")
    ap.add_argument("--seed", type=int, default=0, help="weights seed (default: 0)")
    a = ap.parse_args(argv)
    try:
        path = build_tiny(a.out_dir, arch=a.arch, seed=a.seed)
    except (FileExistsError, NotADirectoryError, PermissionError, OSError) as e:
        raise UserError(f"cannot write the model to {a.out_dir} ({e.strerror or e}); pick a folder you can "
                        "write to") from None
    size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    print(f"built tiny {a.arch} (seed {a.seed}) in {path} ({size / 1e6:.2f} MB)")
    return 0


def build_tiny_text_lm(out_dir: str | os.PathLike, seed: int = 0, tokenizer=None) -> Path:
    """A tiny random Qwen2 causal LM (hidden 64, 2 layers) with the tokenizer of :mod:`ego_adr.models.tiny`, saved
    as a normal HF folder: the demo's stand-in judges (their bytes are kept: the demo's judgements depend on
    them). Pass ``tokenizer`` (from ``ego_adr.models.tiny.build_tokenizer()``) to skip re-training it."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer if tokenizer is not None else build_tokenizer()
    pad, eos = tok.convert_tokens_to_ids("<|endoftext|>"), tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen2Config(
        vocab_size=tiny_vocab_size(tok),
        **TINY_TEXT_DIMS,
        max_position_embeddings=4096,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
        tie_word_embeddings=False,  # tied random embeddings just repeat the last prompt token
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    model.generation_config = GenerationConfig(bos_token_id=pad, eos_token_id=eos, pad_token_id=pad, do_sample=False)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out


if __name__ == "__main__":
    import sys

    sys.exit(main())
