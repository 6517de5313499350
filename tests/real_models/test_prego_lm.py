"""``prego-lm`` on real weights (issue 45 item 2): every step of the taxonomy scored as a raw continuation of the
step sequence, ``p_error = 1 - P(observed)``, the threshold chosen by cross-validation on the training recordings,
the top-1 next-step accuracy in ``metrics.json``; as symbols and as step names; resumable from the stage cache.

EPIC-Tent-O cut small (its two shortest training and two shortest test recordings) so a run is seconds of model
time; what the monitor scores on the whole benchmark is measured by ``scripts/bench_real_prego.py``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.real_models.test_real_text_paths import DATA, _small_root

pytestmark = pytest.mark.slow


@pytest.fixture()
def root(tmp_path) -> Path:
    if not (DATA / "dtgl" / "epic-tent" / "test.json").is_file():
        pytest.skip(f"the step-stream benchmark files are not at {DATA} (set EGO_ADR_ONLINE_MISTAKES)")
    root = _small_root(tmp_path)
    train = root / "dtgl" / "epic-tent" / "train.json"
    doc = json.loads(train.read_text())
    shortest = sorted(doc["annotations"], key=lambda v: (len(doc["annotations"][v]["segments"]), v))[:2]
    doc["annotations"] = {v: doc["annotations"][v] for v in shortest}
    train.write_text(json.dumps(doc))
    return root


def _args(root: Path, out: Path, *extra: str, quiet: bool = True) -> list[str]:
    return ["evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle-merged", "--monitor", "prego-lm",
            "--model", "smollm2-135m", "--backend", "llamacpp", "--data-root", str(root), "--out", str(out),
            "--cache-dir", str(out.parent / "cache"), *(["--quiet"] if quiet else []), *extra]


def _run(root: Path, out: Path, *extra: str, quiet: bool = True) -> dict:
    from ego_adr.monitoring.__main__ import main

    assert main(_args(root, out, *extra, quiet=quiet)) == 0
    return json.loads((out / "metrics.json").read_text())


@pytest.mark.parametrize("form", ["symbols", "names"])
def test_prego_lm_scores_every_step_and_alarms_at_a_cross_validated_threshold(form, root, tmp_path, capsys):
    out = tmp_path / form
    m = _run(root, out, "--monitor-option", f"form={form}")
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    prompts = json.loads((out / "prompts.json").read_text())
    assert len(prompts["candidates"]) == 12 and prompts["form"] == form
    if form == "names":
        assert "insert stake" in prompts["candidates"] and "Input Sequence:\n start, " in prompts["examples"]["None"]
    else:
        assert prompts["candidates"][:3] == ["0", "1,", "2"]  # 1 starts 10 and 11: it gets the separator
    sel = m["selection"]
    assert sel["chosen"]["score"] in ("surprisal", "margin") and sel["validation"]["episodes"] > 0
    for s in steps:
        ev = s["evidence"]
        assert s["p_error"] == pytest.approx(1 - ev["p_step"], abs=1e-4)
        assert s["flagged"] == (ev["value"] >= ev["threshold"])
        assert ev["expected"] in range(12) and 0 < ev["p_expected"] <= 1
    top = m["next_step_top1"]
    hits = sum(s["evidence"]["expected"] == s["step_id"] for s in steps if not s["label"])
    assert top["hits"] == hits and top["correct_steps"] == sum(not s["label"] for s in steps)
    assert m["stats"]["likelihood_calls"] > len(steps) and m["deviations"]
    assert not math.isnan(m["auroc"])
    if form == "symbols":  # the same run again, into another folder: every likelihood from the stage cache
        capsys.readouterr()
        again = _run(root, tmp_path / "again", "--monitor-option", f"form={form}", quiet=False)
        hits = m["stats"]["likelihood_calls"] + 1  # and the check that the model scores candidates at all
        assert again["stats"]["model_calls"] == 0 and again["stats"]["cache_hits"] == hits
        # without --quiet its progress shows on stderr, logged to a file too: the cross-validation's prefixes and
        # every test step (issue 46: the prefixes' bar showed only on a terminal)
        err = capsys.readouterr().err
        assert "prefix/s]" in err
        assert "prego-lm oracle-merged: 100%" in err and f"{len(steps)}/{len(steps)} [" in err
        assert (tmp_path / "again" / "steps.jsonl").read_text() == (out / "steps.jsonl").read_text()
        # a folder written before prego-lm had `candidates` (its identity lacks the key) is that run at the
        # default: read back and re-labelled, not refused; at the other value it is refused
        ident = json.loads((out / "identity.json").read_text())
        assert ident.pop("option.candidates") == "taxonomy"
        (out / "identity.json").write_text(json.dumps(ident))
        kept = (out / "metrics.json").stat().st_mtime_ns
        assert _run(root, out, "--monitor-option", f"form={form}") == m
        assert (out / "metrics.json").stat().st_mtime_ns == kept
        assert json.loads((out / "identity.json").read_text())["option.candidates"] == "taxonomy"
        from ego_adr.monitoring.__main__ import main

        assert main(_args(root, out, "--monitor-option", f"form={form}", "--monitor-option", "candidates=task")) == 2
        assert (out / "metrics.json").stat().st_mtime_ns == kept


def test_a_model_that_cannot_score_candidates_is_one_line_before_anything_is_written(root, tmp_path, capsys):
    from ego_adr.monitoring.__main__ import main

    out = tmp_path / "out"  # the tiny random video model: the HF backend scores candidates of text models only
    rc = main(["evaluate", "--benchmark", "epic-tent-o", "--monitor", "prego-lm", "--model", "tiny", "--data-root",
               str(root), "--out", str(out), "--cache-dir", str(tmp_path / "cache")])
    err = [x for x in capsys.readouterr().err.splitlines() if x.startswith("error")]
    assert rc == 2 and len(err) == 1 and "cannot score candidates" in err[0] and not out.exists()
