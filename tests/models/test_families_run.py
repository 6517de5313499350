"""``python -m ego_adr.run --model tiny-<arch>`` on the embedded demo for every architecture, ``--mode auto``:
each run routes as its own probe says, and ``run.json`` keeps the probe's evidence."""

from __future__ import annotations

import json

import pytest

from ego_adr.models.families import FAMILIES


@pytest.mark.parametrize("arch", tuple(FAMILIES))
def test_run_cli_on_the_demo_routes_each_arch_by_its_probe(arch, tmp_path, demo_root, capsys):
    from ego_adr.run.cli import main

    out = tmp_path / "run"
    argv = ["--model", f"tiny-{arch}", "--mode", "auto", "--limit", "2", "--max-new-tokens", "8", "--device",
            "cpu", "--output-dir", str(out), "--quiet"]
    if FAMILIES[arch].kind == "text":  # a text LM reasons over the annotations' descriptions instead of a clip
        argv += ["--narration-source", "reference"]
    assert main(argv) == 0, capsys.readouterr().err
    run = json.loads((out / "run.json").read_text())
    probe = run["pipeline"]["probe"]
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["route"] for r in rows} == {probe["route"]} == {run["pipeline"]["route"]}
    assert f"tiny-{arch}-" in probe["fingerprint"] and probe["reason"]
    if FAMILIES[arch].text_only:
        assert isinstance(probe["stage1"]["answer"], str)  # the evidence: what the model said to the probe
    else:
        assert probe["stage1"]["declared"] and probe["route"] == "shallow"
        assert isinstance(probe["black_image"]["stage1"]["answer"], str)  # Section 6.4 stand-in, as evidence
    for r in rows:
        assert r["failure"] in (None, "unparseable"), r  # every model call answered
