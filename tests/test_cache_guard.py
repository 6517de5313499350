"""Issue 46, item 9: the suite never writes into the user's real cache (``~/.cache/ego_adr``). ``tests/conftest.py``
points ``$XDG_CACHE_HOME`` -- where ``ego_adr.store.cache_root`` goes when ``$EGO_ADR_CACHE`` is not seen -- at
a folder of the session's and fails the session when anything lands under its ``ego_adr/``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = '''
def test_a_path_that_escapes_the_suites_cache(monkeypatch):
    monkeypatch.delenv("EGO_ADR_CACHE")
    from ego_adr.store import cache_root

    (cache_root() / "tiny-escaped").mkdir(parents=True)
    (cache_root() / "tiny-escaped" / "config.json").write_text("{}")


def test_the_suites_own_cache_is_fine():
    from ego_adr.store import cache_root

    (cache_root() / "kept.txt").write_text("x")
'''


def test_the_users_cache_root_is_the_sessions_guard_here(monkeypatch):
    """Within this session an escape from ``$EGO_ADR_CACHE`` lands in the guard, never in ``~/.cache``."""
    from ego_adr.store import cache_root

    guard = os.environ["EGO_ADR_TEST_CACHE_GUARD"]
    monkeypatch.delenv("EGO_ADR_CACHE")
    assert cache_root() == Path(guard) / "ego_adr"
    assert not str(cache_root()).startswith(os.path.expanduser("~/.cache"))


def test_a_session_that_writes_into_the_users_cache_fails_and_names_the_files(tmp_path):
    """A pytest session of its own (this conftest as its plugin), started as a user whose shell exports
    ``$EGO_ADR_CACHE`` (their real cache): one test writes through ``cache_root()``, another after losing
    ``$EGO_ADR_CACHE``. The tests pass, the user's cache stays empty (the suite used it as its own), the session
    fails, and the line names the file that escaped."""
    (tmp_path / "test_probe.py").write_text(PROBE)
    users = tmp_path / "users-cache"
    users.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("EGO_ADR_TEST_CACHE_GUARD", "XDG_CACHE_HOME", "PYTEST_XDIST_WORKER")}
    env["EGO_ADR_CACHE"] = str(users)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests"), str(ROOT), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                        "--rootdir", str(tmp_path), "-c", os.devnull, str(tmp_path / "test_probe.py")],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert "2 passed" in r.stdout, r.stdout + r.stderr
    assert r.returncode == 1, r.stdout
    assert ("the suite wrote 1 file(s) into the user's cache, outside $EGO_ADR_CACHE: tiny-escaped/config.json"
            in r.stdout)
    assert list(users.iterdir()) == []
