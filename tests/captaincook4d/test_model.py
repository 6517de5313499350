"""A monitor that needs a model on the CaptainCook4D command (issue 45): ``prego-lm`` with the real packaged
SmolLM2-135M on llama.cpp, on the recordings of one recipe (``spicedhotchocolate``, the shortest: its training
recordings, and the two validation and two test recordings ``captaincook4d-o`` keeps), so a run is a few
likelihood calls; what it scores on the whole benchmark is measured by ``scripts/bench_real_prego.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.captaincook4d.test_command import ANN

RECIPE = "spicedhotchocolate"
SPLIT = f"{ANN}/data_splits/recordings_data_split_combined.json"


@pytest.fixture(scope="module")
def small_root(cc4d_root, tmp_path_factory) -> Path:
    """The data root with the split cut to one recipe's recordings."""
    import shutil

    from ego_adr.captaincook4d import sources as S

    out = tmp_path_factory.mktemp("cc4d_small") / "root"
    for rel in ("sources/CaptainCook4D-annotations", "dtgl/captaincook4d"):
        shutil.copytree(cc4d_root / rel, out / rel)
    src = S.load(out)
    doc = {k: [r for r in ids if src.recordings[r].recipe == RECIPE] for k, ids in src.splits.items()}
    (out / SPLIT).write_text(json.dumps(doc))
    return out


@pytest.fixture(scope="module")
def smollm2(small_root):
    from ego_adr.models.packaged import locate

    try:
        locate("smollm2-135m")
    except Exception as e:  # noqa: BLE001 - the packaged weights or llama.cpp are not installed here
        pytest.skip(f"SmolLM2's packaged GGUF is not installed ({e}); scripts/test_envs.sh installs it")
    pytest.importorskip("xllamacpp")
    return "smollm2-135m"


def _run(cli, root: Path, out: Path, *extra: str) -> tuple[int, str, str]:
    return cli("evaluate", "--benchmark", "captaincook4d-o", "--data-root", root, "--out", out, "--quiet",
               "--cache-dir", out.parent / "cache", *extra)


@pytest.mark.slow
def test_prego_lm_runs_with_a_model_records_it_and_resumes_without_asking_it(cli, small_root, smollm2, tmp_path,
                                                                            monkeypatch):
    monkeypatch.setenv("EGO_ADR_LLAMACPP_THREADS", "1")
    model = ("--monitor", "prego-lm", "--model", smollm2, "--backend", "llamacpp")
    out = tmp_path / "plm"
    rc, _, err = _run(cli, small_root, out, *model, "--monitor-option", "candidates=task")
    assert rc == 0, err
    ident = json.loads((out / "identity.json").read_text())
    assert (ident["model"], ident["backend"], ident["base_url"]) == (smollm2, "llamacpp", None)
    assert ident["option.candidates"] == "task" and ident["option.form"] == "symbols"
    m = json.loads((out / "metrics.json").read_text())
    assert m["given_options"]["candidates"] == "task"
    assert m["selection"]["hyper_parameters"]["candidates"] == "task"
    assert any("recording's task" in d for d in m["deviations"]) and "(candidates=task)" in (out / "report.md").read_text()
    assert m["stats"]["candidates"][RECIPE] == 8  # its 7 steps and END
    rows = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    val = [json.loads(x) for x in (out / "validation_steps.jsonl").read_text().splitlines()]
    assert m["stats"]["likelihood_calls"] == len(rows) + len(val) > 0  # no cross-validation here: one call a step
    top = m["next_step_top1"]
    assert top["correct_steps"] == sum(not r["label"] for r in rows) and 0 <= top["hits"] <= top["correct_steps"]
    for r in rows:
        assert r["p_error"] == pytest.approx(1 - r["evidence"]["p_step"], abs=1e-4)
        assert r["flagged"] == (r["p_error"] >= m["validation"]["points"]["objective"]["threshold"])
    prompts = json.loads((out / "prompts.json").read_text())
    assert prompts["candidates"][RECIPE][0] == "0" and len(prompts["candidates"][RECIPE]) == 8
    # the same command again: read back from the finished folder, the model never loaded
    before = (out / "metrics.json").read_bytes()
    with monkeypatch.context() as mp:
        mp.setattr("ego_adr.models.loading.load_vlm", lambda *a, **k: pytest.fail("a finished folder loaded the model"))
        rc, _, err = _run(cli, small_root, out, *model, "--monitor-option", "candidates=task")
    assert rc == 0 and (out / "metrics.json").read_bytes() == before
    # without --quiet, into a folder of its own (the stage cache answers): a bar over the validation steps and one
    # over the test steps on stderr, which a run logged to a file keeps too (issue 46: these showed nothing)
    rc, _, err = cli("evaluate", "--benchmark", "captaincook4d-o", "--data-root", small_root, "--out",
                     tmp_path / "shown", "--cache-dir", out.parent / "cache", *model, "--monitor-option",
                     "candidates=task")
    assert rc == 0, err
    assert f"{len(val)}/{len(val)} [" in err and f"{len(rows)}/{len(rows)} [" in err and "step/s" in err
    # another model in the same folder refuses, in one line
    rc, _, err = _run(cli, small_root, out, "--monitor", "prego-lm", "--model", "gemma3-270m", "--backend",
                      "llamacpp", "--monitor-option", "candidates=task")
    assert rc == 2 and "model" in err


def test_a_monitor_that_needs_a_model_without_one_is_not_run(cli, small_root, tmp_path):
    from ego_adr.monitoring.benchmarks import BENCHMARKS
    from ego_adr.monitoring.settings import EvalSettings

    rc, _, err = _run(cli, small_root, tmp_path / "one", "--monitor", "prego-lm")
    assert rc == 2 and "--monitor prego-lm needs --model" in err and not (tmp_path / "one").exists()
    bench = BENCHMARKS.get("captaincook4d-o").make_driver()  # what `all` lists as not run, with why
    why = bench.not_run(EvalSettings("captaincook4d-o", "all"), bench.registry.names())
    assert {n for n, w in why.items() if w.startswith("needs --model")} == {"prego", "prego-lm"}


def test_a_monitor_with_a_model_is_never_the_headline():
    from ego_adr.captaincook4d import evaluate as E

    assert E.group("prego-lm") == E.group("prego") == "language model" and E.group("ngram-oneclass") != "language model"
    rows = [{"monitor": n, "group": E.group(n), "validation": {"objective": v}}
            for n, v in (("prego-lm", 0.9), ("ngram-oneclass", 0.5), ("flag-all", 0.95))]
    assert E.headline(rows) == "ngram-oneclass"
