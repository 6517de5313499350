"""Fixtures of the step-stream benchmark tests: the data root (``../shared/online-mistakes`` next to the checkout,
or ``$EGO_ADR_ONLINE_MISTAKES`` for a checkout elsewhere, e.g. a git worktree) and the command line in-process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SEEDS = "1"  # the outer-fold seed of tent_all's nested selection (one: each seed is a whole nested selection)
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "online-mistakes"


def data_root() -> Path:
    return Path(os.environ.get("EGO_ADR_ONLINE_MISTAKES") or SHARED)


@pytest.fixture(scope="session")
def online_root() -> Path:
    root = data_root()
    if not (root / "dtgl" / "assembly101" / "test.json").is_file():
        pytest.skip(f"the step-stream benchmark files are not at {root} (../shared/online-mistakes, or set "
                    "EGO_ADR_ONLINE_MISTAKES); `python -m ego_adr.monitoring download --out DIR` fetches them")
    return root


@pytest.fixture
def cli(capsys):
    """``python -m ego_adr.monitoring ARGS`` in this process: (exit code, stdout, stderr)."""
    from ego_adr.monitoring.__main__ import main

    def call(*argv) -> tuple[int, str, str]:
        try:
            code = main([str(a) for a in argv])
        except SystemExit as e:  # argparse's own exits
            code = e.code if isinstance(e.code, int) else 2
        out = capsys.readouterr()
        return code, out.out, out.err

    return call


@pytest.fixture(scope="session")
def tent_all_seeds() -> str:
    """The ``--selection-seeds`` of :func:`tent_all` (a run that is to read its selection back gives the same)."""
    return SEEDS


@pytest.fixture(scope="session")
def tent_all(online_root) -> Path:
    """``evaluate --monitor all`` on EPIC-Tent-O's oracle stream, run once for every test that reads it (the
    learned monitors' fits and the nested selection take tens of seconds), into the session's cache folder, which
    both xdist workers share (:func:`ego_adr.store.build_once`: the second worker finds the first one's folder);
    read only. Its nested selection runs the outer-fold seed :data:`SEEDS` alone (the default five cost five times
    as much; ``test_selection.py`` checks the choice over several seeds on a few cheap monitors)."""
    from ego_adr.monitoring.__main__ import main
    from ego_adr.store import build_once, cache_root

    def build(out: Path) -> None:
        assert main(["evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle", "--monitor", "all",
                     "--data-root", str(online_root), "--out", str(out), "--selection-seeds", SEEDS, "--quiet"]) == 0

    return build_once(cache_root() / "tests" / "tent-all", build, lambda p: (p / "summary.json").is_file())
