"""The package under the public white agent's runtime (transformers 4.57.3, pyproject's ``public-runtime``
extra) as well as 5.x (issue 19 item 1): the model tests, where every difference between the two lines is
handled (``ego_adr/models/compat.py``), run again in a subprocess with ``.ci/public-runtime`` first on the path.
The whole suite passes there too (run it with ``PYTHONPATH=.ci/public-runtime python -m pytest -q``); CI runs
this part (``tests/models`` but for ``AGAIN_NOT_NEEDED``), and the reply-identity test (tests/agents/test_public_white_replies.py).
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
# tests/models files that do not run again here (they run under 5.x with the rest of the suite): none reaches a
# difference between the two lines that another file does not reach here already, and they are the three slowest
# of tests/models (about 80 of its 300 s under 4.57 on a busy 2-core machine; issue 38): a backend plugin's entry
# points (no transformers code of its own), scripts/gpu_check.py's batching verdict (test_families.py checks
# left-padded batches against one-at-a-time for every family here) and a served run of the demo (test_families.py
# and test_openai_backend.py check served against local answers here)
AGAIN_NOT_NEEDED = ("test_backend_plugin.py", "test_gpu_check.py", "test_served_equals_local.py")


def test_model_tests_pass_under_transformers_4_57(missing_environment):
    if not (RUNTIME / "transformers").is_dir():
        missing_environment(f"the public runtime in {RUNTIME}")
    env = dict(os.environ, PYTHONPATH=str(RUNTIME), HF_HUB_OFFLINE="1")
    skip = [f"--ignore=tests/models/{name}" for name in AGAIN_NOT_NEEDED]
    # one interpreter says which transformers it imports and runs the tests (a second one only to ask the version
    # cost a torch + transformers import, seconds on a busy machine: issue 46)
    run = ("import sys, pytest, transformers; print('transformers', transformers.__version__, flush=True); "
           "sys.exit(pytest.main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", run, "-q", "-p", "no:cacheprovider", *skip, "tests/models"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("transformers 4.57."), lines[0]  # the runtime really is the 4.57 line
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert " passed" in lines[-1] and " skipped" not in lines[-1]
