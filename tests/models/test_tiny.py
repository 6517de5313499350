"""The tiny offline models: deterministic builds, a normal HF folder, loadable through the HF backend."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from ego_adr.models import Frames, Message, Request, load_model
from ego_adr.models.base import GenerationConfig
from ego_adr.models.families import FAMILIES
from ego_adr.models.tiny import ARCHS, SPECIAL_TOKENS, build_tiny, ensure_tiny, main


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_same_seed_same_weights_other_seed_differs(tmp_path):
    a = build_tiny(tmp_path / "a", seed=0)
    b = build_tiny(tmp_path / "b", seed=0)
    c = build_tiny(tmp_path / "c", seed=1)
    assert _sha(a / "model.safetensors") == _sha(b / "model.safetensors")
    assert _sha(a / "tokenizer.json") == _sha(b / "tokenizer.json")
    assert _sha(a / "model.safetensors") != _sha(c / "model.safetensors")
    from ego_adr.models.compat import is_v4

    processor_file = "preprocessor_config.json" if is_v4() else "processor_config.json"  # 4.57 writes per part
    for name in ("config.json", processor_file, "tokenizer.json", "chat_template.jinja"):
        assert (a / name).exists(), name


@pytest.mark.parametrize("arch", [a for a in ARCHS if a != "qwen2.5-vl"])
def test_every_arch_builds_deterministically(arch, tmp_path):
    a, b = build_tiny(tmp_path / "a", arch), build_tiny(tmp_path / "b", arch)
    assert _sha(a / "model.safetensors") == _sha(b / "model.safetensors")
    assert _sha(a / "tokenizer.json") == _sha(b / "tokenizer.json")
    assert json.loads((a / "config.json").read_text())["model_type"] in FAMILIES[arch].model_types


def test_unknown_arch_is_refused_with_the_choices(tmp_path):
    with pytest.raises(ValueError, match="video-llava"):
        build_tiny(tmp_path / "x", "qwen9-vl")


def test_refuses_non_empty_folder(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        build_tiny(tmp_path / "x")


def test_cli_builds_qwen2_vl_and_it_generates_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    main([str(tmp_path / "q2"), "--arch", "qwen2-vl"])
    assert "built tiny qwen2-vl" in capsys.readouterr().out
    model = load_model(str(tmp_path / "q2"), device="cpu")
    assert model.family == "qwen2-vl"
    clip = Frames(np.random.default_rng(0).integers(0, 256, (8, 240, 320, 3), dtype=np.uint8), fps=1.0)
    g = model.generate([Request([Message.user(clip, "What is the person doing?")], GenerationConfig(24))])[0]
    assert g.ok, g.error
    assert isinstance(g.text, str) and g.seconds > 0


def test_tokenizer_knows_the_special_tokens_and_real_words(tmp_path):
    from transformers import AutoProcessor

    proc = AutoProcessor.from_pretrained(build_tiny(tmp_path / "t"))
    tok = proc.tokenizer
    for t in SPECIAL_TOKENS:
        ids = tok.convert_tokens_to_ids(t)
        assert isinstance(ids, int) and ids < len(tok)
        assert tok.decode([ids]) == t
    assert 500 <= len(tok) <= 2100
    sentence = "The person picks up the knife: Wrong object."
    assert tok.decode(tok(sentence)["input_ids"]) == sentence
    # the chat template renders text, video and system parts
    text = proc.apply_chat_template(
        [{"role": "system", "content": [{"type": "text", "text": "S"}]},
         {"role": "user", "content": [{"type": "video"}, {"type": "text", "text": "Q"}]}],
        tokenize=False, add_generation_prompt=True,
    )
    assert text.count("<|video_pad|>") == 1 and "S<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")
    assert "You are a helpful assistant." not in text  # an explicit system message replaces the default


def test_ensure_tiny_builds_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EGO_ADR_CACHE", str(tmp_path / "cache"))
    p1 = ensure_tiny()
    stamp = (p1 / "model.safetensors").stat().st_mtime_ns
    p2 = ensure_tiny()
    from ego_adr.models.compat import tiny_suffix

    name = f"tiny-qwen2.5-vl-v1{tiny_suffix()}"  # one folder per transformers line
    assert p1 == p2 == tmp_path / "cache" / name
    assert (p2 / "model.safetensors").stat().st_mtime_ns == stamp
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [name]  # no temp dirs left
