"""Every text path of ego_adr run by a real language model (issue 36): the routing probe, the procedure-bank
builder, deep classification over a narration, the two open-ended judges, the benchmark builder's LLM labelling,
PREGO on a step stream and HelpMeOut's LLM monitor.

Small real models are weak reasoners: no test asserts what they say. Each asserts what any reply must come to:
parsed, or counted as unparseable; recorded with the evidence; answered from the stage cache when asked again
(resumable). The models sit behind a real llama.cpp server (tests/real_models/conftest.py), the fast CPU path;
budgets are kept small so the whole file stays within seconds of model time on 2 cores."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ego_adr.models.cache import CachedModel, StageCache

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
DATA = Path(os.environ.get("EGO_ADR_ONLINE_MISTAKES") or SHARED / "online-mistakes")
PROCEDURE = ("1. Take out the pot. 2. Fill the pot with water. 3. Put the pot on the stove and boil the water. "
             "4. Add the pasta. 5. Drain the pasta. 6. Serve the pasta on a plate.")

pytestmark = pytest.mark.slow


def _cached(model, folder: Path) -> CachedModel:
    return CachedModel(model, StageCache(folder / "stage_cache.sqlite"), model.backend)


@pytest.mark.parametrize("name", ["smollm2", "gemma"])
def test_the_probe_routes_each_real_model_and_records_why(name, request, tmp_path):
    from ego_adr.reasoning.probe import DEEP, SHALLOW, cached_probe

    model = request.getfixturevalue(name)
    res = cached_probe(model, tmp_path)
    assert res.route in (DEEP, SHALLOW) and res.fingerprint == model.fingerprint
    assert res.stage1["prompt"] and res.stage1["error"] is None and "answer" in res.stage1
    if res.reason.startswith("stage 1"):  # abnormal at once: the reason names what, no trials were asked
        assert res.route == SHALLOW and res.stage1["abnormal"] and not res.trials
    else:  # the route follows from the recorded trials alone
        passed = sum(t["passed"] for t in res.trials)
        assert len(res.trials) == 3 and all(t["prompt"] and "answer" in t for t in res.trials)
        assert res.route == (DEEP if passed == 3 else SHALLOW) and f"{passed}/3" in res.reason
    assert cached_probe(model, tmp_path).to_dict() == res.to_dict()  # the verdict is kept with its evidence
    assert len(list((tmp_path / "probe").glob("*.json"))) == 1


def test_a_real_bank_model_builds_a_bank_or_falls_back_and_says_why(smollm2, tmp_path):
    from ego_adr.reasoning.banks import BankStore

    bank = BankStore(tmp_path, smollm2, budget=96).model("pasta", PROCEDURE)
    assert bank.steps and all(s.text.strip() for s in bank.steps) and bank.raw is not None
    if bank.builder.startswith("model:"):
        assert bank.builder == "model:smollm2-135m"
    else:  # an unusable reply is not a bank: the rule-based one, with the reason
        assert "rule-based fallback" in bank.note
    again = BankStore(tmp_path, smollm2, budget=96).model("pasta", PROCEDURE)
    assert [s.text for s in again.steps] == [s.text for s in bank.steps]  # from the bank cache


def test_deep_classification_over_a_narration_is_parsed_or_unparseable_and_resumes(smollm2_server, tmp_path):
    from ego_adr.run.cli import main

    out = tmp_path / "run"
    args = ["--model", "smollm2-135m", "--backend", "openai", "--base-url", smollm2_server.base_url, "--mode", "deep",
            "--narration-source", "reference", "--bank-builder", "rule", "--limit", "3", "--max-new-tokens", "24",
            "--output-dir", str(out), "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == 3
    for r in rows:
        cls = r["stages"]["classification"]
        assert r["stages"]["narration"] and cls["raw"] is not None  # what the classifier read and replied
        if cls["method"] == "llm":
            assert r["prediction"] is not None and r["failure"] is None
        else:
            assert cls["method"] == "unparseable" and r["failure"] == "unparseable" and r["prediction"] is None
    before = (out / "predictions.jsonl").read_text()
    assert main(args) == 0 and (out / "predictions.jsonl").read_text() == before  # resumed: nothing redone


def _answer_rows() -> list[dict]:
    qa = [("What did the person do wrong?", "They added the pasta before the water boiled.",
           "The pasta went into cold water."),
          ("Which step was skipped?", "Draining the pasta.", "They forgot to drain it."),
          ("What tool was used instead of the colander?", "A frying pan lid.", "A spoon."),
          ("Was the step done correctly?", "Yes, the pot was filled with water.", "")]
    return [{"sample_id": f"s{i}", "qa_index": 0, "source": "demo", "question": q, "reference": ref, "answer": a}
            for i, (q, ref, a) in enumerate(qa)]


def test_two_real_judges_each_score_or_count_a_parse_failure_and_resume(smollm2, gemma, tmp_path):
    from ego_adr.eval.open_end import score_open_end_rows
    from ego_adr.models.base import GenerationConfig
    from ego_adr.run.judging import judge_rows
    from ego_adr.store import JsonlStore

    store = JsonlStore(tmp_path / "judgements.jsonl")
    cache = StageCache(tmp_path / "stage_cache.sqlite")
    judges = {"smollm2": smollm2, "gemma": gemma}
    config = GenerationConfig(max_new_tokens=48)
    rows = judge_rows(_answer_rows(), judges, store, cache, config=config, progress=False)
    assert len(rows) == 4
    for r in rows:
        for n in judges:
            p = r["judges"][n]
            assert p["raw"] is not None and p["error"] is None  # every reply recorded
            assert (p["score"] is not None) or p["method"] != "parsed"
            if p["score"] is not None:
                assert 0 <= p["score"] <= 5
    metrics = score_open_end_rows(rows)
    for n in judges:  # the parse rate: every unscored reply is counted as a parse failure
        unscored = sum(r["judges"][n]["score"] is None for r in rows)
        assert metrics["per_judge"][n]["parse_failures"] == unscored
    before = store.path.read_text()
    judged_again = {n: CachedModel(j, cache, j.backend) for n, j in judges.items()}
    judge_rows(_answer_rows(), judged_again, store, cache, config=config, progress=False)
    assert store.path.read_text() == before and all(j.model_calls == 0 for j in judged_again.values())


def test_the_builders_llm_labelling_names_types_or_leaves_the_row_out(smollm2, tmp_path):
    from ego_adr.benchmark_builder.labelling import label_rows
    from ego_adr.data.build_input import Row
    from ego_adr.models.base import GenerationConfig
    from ego_adr.taxonomy import ERROR_OPTIONS

    rows = [Row(line=i + 2, source="mine", recording="r1", task="pasta", step=step, labels=[], own_labels=[own],
                description=desc)
            for i, (step, own, desc) in enumerate([("Drain the pasta", "spilled", "water spills on the floor"),
                                                   ("Add the pasta", "error", "pasta added to cold water")])]
    model = _cached(smollm2, tmp_path)
    kept, records, outage = label_rows(rows, model, GenerationConfig(max_new_tokens=32), model.fingerprint)
    assert not outage and len(records) == 2
    for rec in records:
        assert rec["raw"] is not None and rec["model"] == model.fingerprint
        assert set(rec["labels"]) <= set(ERROR_OPTIONS)
        assert bool(rec["labels"]) != (rec["failure"] == "the reply names no error type")
    assert len(kept) == sum(bool(r["labels"]) for r in records)
    again = _cached(smollm2, tmp_path)
    _, records2, _ = label_rows([Row(**{**r.__dict__, "labels": []}) for r in rows], again,
                                GenerationConfig(max_new_tokens=32), model.fingerprint)
    assert again.model_calls == 0 and [r["raw"] for r in records2] == [r["raw"] for r in records]


def _small_root(tmp_path: Path) -> Path:
    """EPIC-Tent-O with its two shortest test recordings: DTGL's files, the test file cut to two annotations (a
    stream must cover every test recording; the whole set is 168 steps, for the benchmark scripts)."""
    root = tmp_path / "online-mistakes"
    (root / "dtgl" / "epic-tent").mkdir(parents=True)
    src = DATA / "dtgl" / "epic-tent"
    (root / "dtgl" / "epic-tent" / "train.json").write_bytes((src / "train.json").read_bytes())
    doc = json.loads((src / "test.json").read_text())
    keep = sorted(doc["annotations"], key=lambda v: len(doc["annotations"][v]["segments"]))[:2]
    doc["annotations"] = {v: doc["annotations"][v] for v in keep}
    (root / "dtgl" / "epic-tent" / "test.json").write_text(json.dumps(doc))
    pred = Path("prego") / "predictions" / "output_miniROAD_Epic-tent-O.json"  # MiniRoad's, for the data check
    (root / pred).parent.mkdir(parents=True)
    (root / pred).write_text(json.dumps({v: x for v, x in json.loads((DATA / pred).read_text()).items() if v in keep}))
    return root


def test_prego_on_a_step_stream_records_every_prompt_and_reply_and_resumes(smollm2_server, tmp_path):
    if not (DATA / "dtgl" / "epic-tent" / "test.json").is_file():
        pytest.skip(f"the step-stream benchmark files are not at {DATA} (set EGO_ADR_ONLINE_MISTAKES)")
    from ego_adr.monitoring.__main__ import main

    out = tmp_path / "prego"
    args = ["evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle-merged", "--monitor", "prego",
            "--model", "smollm2-135m", "--backend", "openai", "--base-url", smollm2_server.base_url,
            "--data-root", str(_small_root(tmp_path)), "--out", str(out), "--cache-dir", str(tmp_path / "cache"),
            "--quiet"]
    assert main(args) == 0
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    prompts = json.loads((out / "prompts.json").read_text())
    assert prompts["examples"]["all"].count("Next Symbol:") == 13  # the 13 training sequences, once
    for s in steps:
        ev = s["evidence"]
        assert ev["query"].rstrip().endswith("Next Symbol:") and len(ev["replies"]) == 1
        assert ev["replies"][0] is not None and set(ev["anticipated"]) <= set(range(12))
    metrics = json.loads((out / "metrics.json").read_text())
    stats = json.dumps(metrics)
    assert '"unparseable"' in stats and '"calls"' in stats
    before = {f: (out / f).read_text() for f in ("steps.jsonl", "metrics.json")}
    assert main(args) == 0  # the finished folder is read back, not redone
    assert {f: (out / f).read_text() for f in before} == before
    args[args.index(str(out))] = str(tmp_path / "again")  # another folder: every reply from the stage cache
    assert main(args) == 0 and (tmp_path / "again" / "steps.jsonl").read_text() == before["steps.jsonl"]
    again = json.loads((tmp_path / "again" / "metrics.json").read_text())
    assert _find(again, "model_calls") == 0 and _find(again, "cache_hits") == len(steps)


def _find(doc, key):
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            found = _find(v, key)
            if found is not None:
                return found
    return None


def test_helpmeouts_llm_monitor_parses_or_counts_each_real_reply(smollm2, tmp_path):
    from ego_adr.helpmeout.generator.episodes import assign_splits, generate
    from ego_adr.helpmeout.monitors import build_monitor, run_monitor

    eps = generate(12, 21, progress=False)
    assign_splits(eps, 21)
    ep = min(eps, key=lambda e: len(e["observed"]))
    for model in (smollm2,):  # the instruction-tuned model: the base Gemma is the judges' and the probe's
        cache = str(tmp_path / f"{model.model_id}.sqlite")
        mon = build_monitor("llm", model=model, max_new_tokens=32, cache_path=cache)
        rows = run_monitor(mon, [ep], progress=False)
        st = mon.stats()
        n = len(ep["observed"])
        assert st["calls"] == n and st["failed"] == 0 and len(rows[0]["probs"]) == n
        assert all(0.0 <= p <= 1.0 for p in rows[0]["probs"])
        again = build_monitor("llm", model=model, max_new_tokens=32, cache_path=cache)
        assert run_monitor(again, [ep], progress=False)[0]["probs"] == rows[0]["probs"]
        assert again.stats()["cache_hits"] == n and again.stats()["unparseable"] == st["unparseable"]
