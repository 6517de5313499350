"""``python -m ego_adr.run --dry-run``: what it predicts from container headers must be what the real sampler
then does, it loads no model, and it reports missing videos, short clips and the planner's verdict."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ego_adr.run.config import RunConfig
from ego_adr.run.preflight import preflight, render

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_dry_run_prints_the_preflight_and_imports_no_model_library(demo_root, tiny_model_dir):
    code = ("import sys; from ego_adr.run.cli import main; rc = main(['--dry-run', '--frames', '32']); "
            "print('LOADED', [m for m in ('torch', 'transformers') if m in sys.modules]); sys.exit(rc)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=_env(),
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "LOADED []" in r.stdout
    assert "| demo | 16 | 0 | 6 | 6 | 0 |" in r.stdout  # samples, unusable, videos, found, missing
    assert "Memory plan for tiny" in r.stdout and "-> indices [" in r.stdout


@pytest.mark.parametrize("frames", [8, 32])
def test_predicted_indices_and_short_clips_match_the_real_sampler(demo_root, frames):
    from ego_adr.run.runner import load_dataset
    from ego_adr.video.sampler import FrameSampler

    cfg = RunConfig(frames=frames)
    rep = preflight(cfg)
    demo = rep["per_source"]["demo"]
    samples = {s.sample_id: s for s in load_dataset(cfg)[0]}
    short = set()
    with FrameSampler() as sampler:
        for sid, s in samples.items():
            _, info = sampler.sample_with_info(s.video_path, s.start, s.end, frames)
            if info.duplicated:
                short.add(sid)
            for e in demo["examples"]:
                if e["sample_id"] == sid:
                    assert e["indices"] == info.indices
                    assert e["effective_fps"] == pytest.approx(frames / max(info.window_seconds, 1 / info.video_fps))
    assert len(demo["examples"]) == 3
    assert set(demo["short"]) == short
    assert bool(short) == (frames == 32)  # the demo clips hold 26-48 frames: none short at 8, some at 32


def test_missing_videos_are_counted_and_shown(tmp_path, demo_root):
    videos = tmp_path / "videos"
    shutil.copytree(demo_root / "videos", videos)
    gone = sorted((videos / "demo").glob("*.mp4"))[0]
    gone.unlink()
    (videos / "demo" / "tea_02.mp4").write_bytes(b"not a video")
    cfg = RunConfig(data_root=str(demo_root / "annotations"), video_root=str(videos), sources=["demo"])
    rep = preflight(cfg)
    d = rep["per_source"]["demo"]
    assert len(d["videos"]) == 6 and len(d["found"]) == 4
    assert d["missing"] == {str(gone)} and list(d["unreadable"]) == [str(videos / "demo" / "tea_02.mp4")]
    text = render(rep)
    assert f"1 video(s) missing, e.g. {gone}" in text and "unreadable" in text


def test_memory_plan_refusal_exits_1_with_the_reason(capsys, demo_root):
    from ego_adr.run.cli import main

    assert main(["--dry-run", "--model", "video-llava", "--frames", "32"]) == 1
    out = capsys.readouterr().out
    assert "family video-llava" in out and "The run would stop here: " in out and "at most 8 frames" in out
    assert main(["--dry-run", "--model", "qwen2.5-vl", "--gpu-memory", "lots"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --gpu-memory") and err.count("\n") == 1


def test_real_annotations_with_stand_in_videos(tmp_path, shared_data):
    from ego_adr.run.runner import load_dataset
    from ego_adr.video.synth import make_public_layout_videos

    picked, _ = load_dataset(RunConfig(data_root=str(shared_data), video_root=str(tmp_path), limit=8).validate())
    made = make_public_layout_videos(picked, tmp_path)
    cfg = RunConfig(model="qwen2.5-vl", data_root=str(shared_data), video_root=str(tmp_path))
    rep = preflight(cfg)
    everything, _ = load_dataset(RunConfig(data_root=str(shared_data), video_root=str(tmp_path)).validate())
    per = rep["per_source"]
    assert rep["n_samples"] == len(everything) == sum(s["samples"] for s in per.values())
    assert set(per) == {"captaincook4d", "epic_tent", "assembly101", "egooops"}
    assert sum(len(s["found"]) for s in per.values()) == len(made)
    assert sum(len(s["missing"]) for s in per.values()) == len({s.video_path for s in everything}) - len(made)
    assert rep["family"] == "qwen2.5-vl" and rep["plan"].fits
    assert all(s["visual_tokens"] == 96 for s in per.values())  # 160x120 stand-ins: 4x6 cells x 4 frame pairs
    assert "| **total** | " in render(rep)


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.parametrize("device", ["cuda", "cuda:99"])
def test_a_dry_run_plans_for_the_device_named_even_when_this_machine_lacks_it(capsys, demo_root, device):
    """Issue 28, item 2: the plan a user makes on a laptop before renting a GPU. It says this machine has no such
    device and exits 0 when the plan is fine; the real run still refuses the absent device with exit 2."""
    from ego_adr.models.tiny import ensure_tiny
    from ego_adr.run.cli import main

    ensure_tiny("qwen2.5-vl")  # a dry run never builds it, and its plan reads the built folder's config
    absent = device == "cuda:99" or not _has_cuda()
    assert main(["--dry-run", "--model", "tiny", "--device", device]) == 0
    out = capsys.readouterr().out
    assert "Memory plan for tiny" in out
    assert (f"Device: planned for --device {device}, but this machine has" in out) == absent
    if absent:
        assert main(["--model", "tiny", "--device", device, "--limit", "1", "--output-dir", "unused"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: --device {device} asked for, but this machine has") and err.count("\n") == 1
    with pytest.raises(SystemExit) as stop:  # not a device at all is still a mistake, found as the line is read
        main(["--dry-run", "--device", "gpu"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--device: 'gpu' is not a device" in err and err.count("\n") == 1


def test_the_public_white_agent_config_dry_runs_on_a_machine_without_a_gpu(capsys, demo_root, shared_data):
    """The config hard-codes ``device: cuda`` (the public white agent's run): its dry run plans for that."""
    from ego_adr.run.cli import main

    assert main(["--config", str(REPO / "configs" / "public-white-agent.yaml"), "--model", "tiny", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "| demo | " in out and ("this machine has no usable CUDA GPU" in out) == (not _has_cuda())


def test_run_help_says_what_the_dry_run_exits_with():
    """Issue 28, item 9: ``run --help`` names the dry run's exit 1 (the run would stop), not only 0/2/3/130."""
    from ego_adr.run.cli import build_parser

    text = " ".join(build_parser().format_help().split())
    assert "With --dry-run: 0 the run would start" in text
    assert "1 it would stop before any sample (the memory plan refuses it, or the model is not available)" in text


def test_a_dry_run_of_a_registered_model_absent_from_this_machine_plans_it(capsys, demo_root, tmp_path, monkeypatch):
    """Issue 28, item 2: on a laptop without the weights and without the hub, the README's own dry run of
    ``--model qwen2.5-vl`` still plans (exit 0) and says the weights are not here; a hub id nobody registered
    cannot be confirmed offline, so that plan fails (exit 1)."""
    from ego_adr.run.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hf-home" / "hub"))
    assert main(["--dry-run", "--model", "qwen2.5-vl", "--device", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "Memory plan for qwen2.5-vl" in out
    assert "Model: --model qwen2.5-vl (Qwen/Qwen2.5-VL-7B-Instruct) is not in the local Hugging Face cache" in out
    assert "The run would stop before loading" not in out
    assert main(["--dry-run", "--model", "someone/unregistered-vlm"]) == 1
    assert "The run would stop before loading: --model someone/unregistered-vlm" in capsys.readouterr().out
