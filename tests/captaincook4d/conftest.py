"""Fixtures of the CaptainCook4D tests: the data root (``../shared/online-mistakes`` next to the checkout, or
``$EGO_ADR_ONLINE_MISTAKES``), with CaptainCook4D's annotations and DTGL's CaptainCook4D files in it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import step_streams_root


@pytest.fixture(scope="session")
def cc4d_root() -> Path:
    root = step_streams_root()  # the step streams' data root: CaptainCook4D's files are laid out in it
    if not (root / "sources" / "CaptainCook4D-annotations" / "annotation_json" / "error_annotations.json").is_file():
        pytest.skip(f"CaptainCook4D's annotation files are not at {root} (../shared/online-mistakes, or set "
                    "EGO_ADR_ONLINE_MISTAKES); `python -m ego_adr.monitoring download --out DIR` fetches them")
    return root


@pytest.fixture
def root_copy(cc4d_root, tmp_path) -> Path:
    """A writable copy of the CaptainCook4D parts of the data root (to plant bad input in)."""
    out = tmp_path / "root"
    for rel in ("sources/CaptainCook4D-annotations", "dtgl/captaincook4d"):
        shutil.copytree(cc4d_root / rel, out / rel)
    return out


#: the monitors the command tests run (cheap ones: a procedure monitor, the supervised one, a reference rule, a
#: blind baseline; the `all` run belongs to scripts/bench_captaincook4d.py); test_command.py's FEW
FEW = "procedure-official,supervised,unseen-transition,flag-all"


@pytest.fixture(scope="session")
def cc4d_few(cc4d_root, tmp_path_factory) -> Path:
    """``evaluate --benchmark captaincook4d-complete --monitor FEW`` run once, read only."""
    from ego_adr.monitoring.__main__ import main

    out = tmp_path_factory.mktemp("cc4d") / "few"
    assert main(["evaluate", "--benchmark", "captaincook4d-complete", "--monitor", FEW, "--data-root",
                 str(cc4d_root), "--out", str(out), "--jobs", "1", "--quiet"]) == 0
    return out
