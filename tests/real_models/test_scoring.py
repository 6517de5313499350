"""``--scoring likelihood`` on real weights (issue 45 item 3): the deep classifier's error type and the routing
probe's trial answers chosen by scoring every option as the start of the reply, a deviation named in the folder,
``run.json`` and the report; every score recorded; the probe's verdict kept apart from the paper's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ego_adr.taxonomy import OPTIONS

pytestmark = pytest.mark.slow
ANNOTATIONS = Path(__file__).resolve().parents[2].parent / "shared" / "egoerrorvqa"


def _args(out: Path, *extra: str) -> list[str]:
    return ["--model", "smollm2-135m", "--backend", "llamacpp", "--mode", "deep", "--narration-source", "reference",
            "--bank-builder", "rule", "--data-root", str(ANNOTATIONS), "--limit", "2", "--out", str(out),
            "--cache-dir", str(out.parent / "cache"), "--max-new-tokens", "16", "--quiet", *extra]


def test_the_deep_classifier_picks_the_most_likely_option_and_names_the_deviation(tmp_path):
    if not (ANNOTATIONS / "procedure.json").is_file():
        pytest.skip(f"the EgoErrorVQA annotations are not at {ANNOTATIONS}")
    from ego_adr.run.cli import main
    from ego_adr.run.config import RunConfig
    from ego_adr.run.runner import default_output_dir

    out = tmp_path / "likelihood"
    assert main(_args(out, "--scoring", "likelihood")) == 0
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 2  # each row scores every option over its whole prompt: 6.5 s a row on SmolLM2, one thread
    for r in rows:
        c = r["stages"]["classification"]
        assert c["method"] == "likelihood" and list(c["scores"]) == list(OPTIONS)
        assert r["prediction"] == max(c["scores"], key=c["scores"].get) and r["extraction"] == "likelihood"
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["scoring"] == "likelihood" and json.loads((out / "identity.json").read_text())["scoring"]
    assert "Deviation --scoring likelihood" in (out / "report.md").read_text()
    assert "-scoring=likelihood" in str(default_output_dir(RunConfig(model="smollm2-135m", scoring="likelihood")))
    assert "scoring" not in str(default_output_dir(RunConfig(model="smollm2-135m")))


def test_the_probe_scores_each_trials_answers_and_passes_only_on_the_right_one(smollm2_llamacpp, tmp_path):
    from ego_adr.models.cache import CachedModel, StageCache
    from ego_adr.reasoning.probe import cached_probe, trial_options

    model = CachedModel(smollm2_llamacpp, StageCache(tmp_path / "c.sqlite"))
    res = cached_probe(model, tmp_path, scoring="likelihood")
    assert res.scoring == "likelihood" and len(res.trials) == 3 and res.stage1["abnormal"] is None
    for t in res.trials:
        opts = trial_options(t["step"], t["value"])
        assert list(t["options"]) == opts and t["answer"] == max(t["options"], key=t["options"].get)
        assert t["passed"] == (t["answer"] == opts[0] == f"STEP:{t['step']} RESULT:{t['value']}")
    assert res.route == ("deep" if all(t["passed"] for t in res.trials) else "shallow")
    assert cached_probe(model, tmp_path).scoring == "generate"  # the paper's probe: its own verdict, kept apart
