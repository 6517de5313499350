"""Memory planner: monotone estimates, largest fitting budget, up-front refusals, token counts that match
what the real processor produces."""

from __future__ import annotations

import numpy as np
import pytest

from ego_adr.models.memory_planner import (
    KNOWN,
    MAX_CELLS,
    MemoryPlanError,
    arch_for,
    arch_from_folder,
    estimate,
    main,
    parse_memory,
    plan,
)

QWEN25 = KNOWN["Qwen/Qwen2.5-VL-7B-Instruct"]


def test_parse_memory():
    assert parse_memory("24GB") == 24
    assert parse_memory("40 GiB") == 40
    assert parse_memory("81920MB") == 80
    with pytest.raises(ValueError, match="24GB"):
        parse_memory("lots")


def test_estimates_grow_with_frames_pixels_and_batch():
    px = 300 * 784
    by_frames = [estimate(QWEN25, f, px).total_gib for f in (8, 16, 24, 32)]
    by_pixels = [estimate(QWEN25, 32, c * 784).total_gib for c in (64, 128, 256, 512, 768)]
    by_batch = [estimate(QWEN25, 16, px, b).total_gib for b in (1, 2, 4, 8)]
    for seq in (by_frames, by_pixels, by_batch):
        assert all(a < b for a, b in zip(seq, seq[1:])), seq
    e = estimate(QWEN25, 32, 300 * 784)
    assert e.visual_tokens == 16 * 300  # 32 frames -> 16 temporal patches x 300 merged cells
    assert 15 < e.weights_gib < 16  # 8.29 B parameters in bf16


def test_plan_picks_the_largest_budget_that_fits():
    for frames in (8, 16, 24, 32):
        p = plan("qwen2.5-vl", QWEN25, 22.0, frames, batch_size=4)
        assert p.fits and p.estimate.total_gib <= 22.0
        cells = p.estimate.pixels_per_frame // QWEN25.unit
        if cells < MAX_CELLS:
            assert estimate(QWEN25, frames, (cells + 1) * QWEN25.unit, 4).total_gib > 22.0
    budgets = [plan("q", QWEN25, 22.0, f, 4).estimate.pixels_per_frame for f in (8, 16, 24, 32)]
    assert all(a >= b for a, b in zip(budgets, budgets[1:])) and budgets[0] > budgets[-1]


def test_frame_size_caps_the_budget():
    p = plan("q", QWEN25, 24.0, 8, frame_size=(640, 360))
    assert p.estimate.pixels_per_frame <= 644 * 364


@pytest.mark.parametrize(
    "model,frames,batch,words",
    [("qwen3-vl-32b", 8, 1, "weights alone"), ("qwen2.5-vl", 32, 64, "fewer frames"),
     ("video-llava", 16, 1, "at most 8 frames")],
)
def test_refuses_impossible_configs_with_a_reason(model, frames, batch, words):
    p = plan(model, arch_for(model), parse_memory("24GB"), frames, batch)
    assert not p.fits and words in p.reason


def test_cli_prints_table_and_exit_code(capsys):
    assert main(["--model", "qwen2.5-vl", "--gpu-memory", "24GB", "--frames", "8", "16", "24", "32"]) == 0
    out = capsys.readouterr().out
    assert out.count("| yes |") == 4 and "visual tokens" in out
    assert main(["--model", "qwen3-vl-32b", "--frames", "8"]) == 1
    assert "weights alone" in capsys.readouterr().out


def test_visual_tokens_match_the_real_processor(tmp_path):
    from transformers import AutoProcessor

    from ego_adr.models.base import Frames
    from ego_adr.models.hf_inputs import qwen_pixel_kwargs, video_metadata
    from ego_adr.models.tiny import build_tiny

    folder = build_tiny(tmp_path / "t")
    arch = arch_from_folder(folder)
    assert (arch.hidden, arch.layers, arch.kv_heads, arch.patch, arch.merge) == (64, 2, 2, 14, 2)
    proc = AutoProcessor.from_pretrained(folder)
    budget = 100 * arch.unit
    frames = Frames(np.zeros((8, 280, 280, 3), np.uint8), fps=1.0)
    text = proc.apply_chat_template([{"role": "user", "content": [{"type": "video"}]}], tokenize=False)
    out = proc(text=[text], videos=[frames.array], video_metadata=[video_metadata(frames)], return_tensors="pt",
               videos_kwargs=qwen_pixel_kwargs(proc.video_processor, budget))
    n_video_tokens = int((out["input_ids"] == proc.video_token_id).sum())
    assert n_video_tokens == estimate(arch, 8, budget).visual_tokens == 400


def test_load_model_refuses_before_loading_and_caps_the_budget(tmp_path):
    from ego_adr.models import load_model
    from ego_adr.models.tiny import TINY_MAX_PIXELS, build_tiny

    folder = build_tiny(tmp_path / "t")
    with pytest.raises(MemoryPlanError, match="will not fit"):
        load_model(str(folder), device="cpu", gpu_memory="0.001GB")
    m = load_model(str(folder), device="cpu", gpu_memory="24GB", frames=32)
    # the planner's budget is an upper bound: the tiny model keeps its own smaller default
    assert m.describe()["video_kwargs"]["size"]["longest_edge"] == TINY_MAX_PIXELS


def test_a_cpu_load_prints_no_gpu_table_but_keeps_the_plans_frame_size(capsys, tmp_path):
    """Issue 38: the demo printed a 24 GB GPU plan for a 1 MB model on a CPU. On the CPU the same pixel budget is
    returned (a CPU run sees a GPU run's frames), with one line instead of the GPU table."""
    from ego_adr.models.memory_planner import plan_for_load
    from ego_adr.models.tiny import build_tiny

    folder = str(build_tiny(tmp_path / "t"))
    on_gpu = plan_for_load(folder, folder, "24GB", frames=8, device="cuda:0")
    gpu_text = capsys.readouterr().err
    on_cpu = plan_for_load(folder, folder, "24GB", frames=8, device="cpu")
    cpu_text = capsys.readouterr().err
    assert on_cpu == on_gpu and "| frames | batch |" in gpu_text and "memory plan for" in gpu_text
    assert cpu_text.startswith("device cpu: no GPU memory plan; frames are sized as on a 24GB GPU")
    assert "| frames |" not in cpu_text and len(cpu_text.strip().splitlines()) == 1
