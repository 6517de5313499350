"""``scripts/table5.py --tiny``: every row of the grid runs on the tiny model of the row's own architecture, into
``-tiny`` folders, and the printed table says it comes from tiny random models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ego_adr.run.experiments import cell_configs, load_experiment, main

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "experiments"


def test_each_table5_row_maps_to_the_tiny_model_of_its_architecture(tmp_path):
    exp = load_experiment(CONFIGS / "table5.yaml")
    cells = cell_configs(exp, {}, tmp_path, tiny=True)
    assert len(cells) == len(exp["cells"])
    for (_cell, cfg), raw in zip(cells, exp["cells"]):
        assert cfg.model == f"tiny-{raw['model']}"  # qwen2-vl -> tiny-qwen2-vl, video-llava -> tiny-video-llava
        assert cfg.mode == raw["mode"] and cfg.max_new_tokens == 64
    assert Path(cell_configs(exp, {}, None, tiny=True)[0][1].output_dir).parts[:3] == ("runs", "experiments",
                                                                                       "table5-tiny")


def test_table5_tiny_runs_each_row_on_its_own_family(tmp_path, demo_root, capsys):
    grid = {"name": "t5", "title": "Table 5", "table": "table5", "base": {"frames": 8},
            "cells": [{"label": "q2_deep", "method": "Qwen2-VL", "model": "qwen2-vl", "mode": "deep"},
                      {"label": "vl_deep", "method": "Video-LLaVA", "model": "video-llava", "mode": "deep"},
                      {"label": "vl_cot", "method": "Video-LLaVA", "model": "video-llava", "mode": "cot"}]}
    path = tmp_path / "t5.yaml"
    path.write_text(json.dumps(grid))  # JSON is YAML
    rc = main([str(path), "--tiny", "--limit", "2", "--max-new-tokens", "8", "--device", "cpu",
               "--out", str(tmp_path / "cells"), "--quiet"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "## Table 5 (tiny random models of each row's architecture" in out
    for label, family in (("q2_deep", "qwen2-vl"), ("vl_deep", "video-llava"), ("vl_cot", "video-llava")):
        run = json.loads((tmp_path / "cells" / label / "run.json").read_text())
        assert f"tiny-{family}-" in run["model"]["fingerprint"]
        rows = [json.loads(x) for x in (tmp_path / "cells" / label / "predictions.jsonl").read_text().splitlines()]
        assert len(rows) == 2 and all(r["failure"] in (None, "unparseable") for r in rows)


def test_tiny_with_model_is_a_user_mistake(capsys):
    assert main([str(CONFIGS / "table5.yaml"), "--tiny", "--model", "tiny"]) == 2
    assert "drop --model" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["someone/unknown-model"])
def test_tiny_for_an_unknown_architecture_says_so(name, tmp_path):
    from ego_adr.run.config import ConfigError

    exp = {"name": "x", "table": "table5", "base": {}, "cells": [{"label": "a", "model": name}]}
    with pytest.raises(ConfigError, match="no tiny model"):
        cell_configs(exp, {}, tmp_path, tiny=True)
