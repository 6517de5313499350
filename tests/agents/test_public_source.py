"""The public evaluator's source: fetched beside the annotations by the download script, found and read by the
green agent, and a clear one-line error when it is missing. Runs on ``file://`` copies of ../shared, no network."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ego_adr.agents.messages import ProtocolError
from ego_adr.agents.public_mc import find_public_root, read_guidance

REPO = Path(__file__).resolve().parents[2]
PUBLIC = REPO.parent / "shared" / "public-evaluator"
DATA = REPO.parent / "shared" / "egoerrorvqa"


def load_script():
    spec = importlib.util.spec_from_file_location("download_annotations", REPO / "scripts" / "download_annotations.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def mirror(tmp_path):
    if not PUBLIC.is_dir() or not DATA.is_dir():
        pytest.skip("needs ../shared/public-evaluator and ../shared/egoerrorvqa")
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "json").symlink_to(DATA)
    (repo / "src").symlink_to(PUBLIC / "src")
    (repo / "main.py").symlink_to(PUBLIC / "main.py")
    return repo


def test_download_puts_the_source_where_the_green_agent_finds_it(mirror, tmp_path, monkeypatch):
    monkeypatch.delenv("EGO_ADR_PUBLIC_EVALUATOR", raising=False)
    out = tmp_path / "annotations"
    mod = load_script()
    assert mod.main(["--out", str(out), "--base-url", (mirror / "data" / "json").as_uri(),
                     "--source-base-url", mirror.as_uri()]) == 0
    root = find_public_root(None, str(out))
    assert root == out / "public-evaluator"
    assert read_guidance(root) == read_guidance(PUBLIC) and "Wrong object" in read_guidance(root)


def test_a_broken_source_download_replaces_nothing(mirror, tmp_path):
    mod = load_script()
    bad = tmp_path / "bad"
    (bad / "src" / "green_agent").mkdir(parents=True)
    (bad / "src" / "green_agent" / "agent.py").write_text("<html>rate limited</html>")
    out = tmp_path / "annotations"
    with pytest.raises(RuntimeError, match="not the expected source file"):
        mod.download_source(out, bad.as_uri())
    assert not (out / "public-evaluator" / "src" / "green_agent" / "agent.py").exists()


def test_missing_source_is_one_line_naming_the_fix(tmp_path, monkeypatch):
    from ego_adr.data import public_source

    monkeypatch.delenv("EGO_ADR_PUBLIC_EVALUATOR", raising=False)
    monkeypatch.setattr(public_source, "_fallbacks", lambda: [])  # no development copy either
    with pytest.raises(ProtocolError) as e:
        find_public_root(None, str(tmp_path / "json"))
    msg = str(e.value)
    assert "\n" not in msg and "download_annotations.py" in msg and str(tmp_path / "json" / "public-evaluator") in msg
    other = tmp_path / "other" / "src" / "green_agent"
    other.mkdir(parents=True)
    (other / "agent.py").write_text("X = 1\n")
    with pytest.raises(ProtocolError, match="has no string PROCEDURAL_ERROR_GUIDANCE"):
        read_guidance(tmp_path / "other")
