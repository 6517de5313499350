"""The package under the public white agent's runtime (transformers 4.57.3, pyproject's ``public-runtime``
extra) as well as 5.x (issue 19 item 1): the model tests, where every difference between the two lines is
handled (``ego_adr/models/compat.py``), run again in a subprocess with ``.ci/public-runtime`` first on the path.
The whole suite passes there too (run it with ``PYTHONPATH=.ci/public-runtime python -m pytest -q``); CI runs
this part, which takes about half a minute, and the reply-identity test (tests/agents/test_public_white_replies.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNTIME = Path(os.environ.get("EGO_ADR_PUBLIC_RUNTIME") or REPO / ".ci" / "public-runtime")

pytestmark = pytest.mark.slow


def test_model_tests_pass_under_transformers_4_57(missing_environment):
    if not (RUNTIME / "transformers").is_dir():
        missing_environment(f"the public runtime in {RUNTIME}")
    env = dict(os.environ, PYTHONPATH=str(RUNTIME), HF_HUB_OFFLINE="1")
    version = subprocess.run([sys.executable, "-c", "import transformers; print(transformers.__version__)"],
                             env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert version.startswith("4.57."), version  # the runtime really is the 4.57 line
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/models"], cwd=REPO,
                       env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in r.stdout.splitlines()[-1] and " skipped" not in r.stdout.splitlines()[-1]
