"""Issue 28, item 9: ``scripts/gpu_check.py --device cpu`` reported batched != one-at-a-time for the three Qwen
families and still exited 0 without saying why. The script now runs the same batch in float32 too: equal there
means bf16 rounding (reported, exit 0), different there is a batching defect (exit 1)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gpu_check.py"


def _script():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # builds and runs a tiny model twice (see tests/README.md)
def test_cpu_rehearsal_checks_batching_in_float32_and_says_what_a_bf16_difference_is(tmp_path, capsys):
    out = tmp_path / "gc.jsonl"
    # the script's main in this process: the same code as `python scripts/gpu_check.py`, a torch start less (issue 46)
    assert _script().main(["--device", "cpu", "--archs", "qwen2.5-vl", "--out", str(out)]) == 0
    (row,) = [json.loads(x) for x in out.read_text().splitlines()]
    assert row["all_ok"] and row["batch_equals_single_fp32"] is True and row["padding_side"] == "left"
    if row["batch_equals_single"] is False:  # bf16 on the CPU: the note says it is rounding, exit stays 0
        assert "bf16 only (qwen2.5-vl): equal in float32, so bf16 rounding" in capsys.readouterr().out


def test_a_float32_difference_is_a_defect_and_fails_the_script(capsys):
    verdict = _script().verdict
    ok = {"arch": "a", "all_ok": True, "batch_equals_single": False, "batch_equals_single_fp32": True}
    assert verdict([ok]) == 0
    assert verdict([ok, {**ok, "arch": "b", "batch_equals_single_fp32": False}]) == 1
    out = capsys.readouterr().out
    assert "DEFECT: batch != single in float32 for b" in out
    assert verdict([{**ok, "all_ok": False}]) == 1
