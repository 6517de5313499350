#!/usr/bin/env bash
# The test environments the suite needs beside the package (README "Two commands"; .ci/run calls this too).
# Each is built once and kept (rerunning is a no-op); none downloads a torch build; after this the tests need
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
# 4-5 minutes to install). --system-site-packages and the constraints reuse the torch, torchvision and
# transformers installed with the package (no second torch download). tests/integrations/test_lmms_eval_cli.py
# finds its CLI at .ci/lmms-venv/bin/lmms-eval (or $EGO_ADR_LMMS_EVAL).
if [ ! -x .ci/lmms-venv/bin/lmms-eval ]; then
  python3 -m venv --system-site-packages .ci/lmms-venv
  python3 -m pip freeze | grep -iE '^(torch|torchvision|transformers)==' > .ci/lmms-constraints.txt
  .ci/lmms-venv/bin/pip install -c .ci/lmms-constraints.txt -e '.[lmms-eval]'
fi
