"""HelpMeOut monitors and metrics: streaming contract, Random ≈ chance, symbolic monitors, deep mode."""

import numpy as np
import pytest

from ego_adr.helpmeout.evaluation.scoring import score_outputs as compute_metrics
from ego_adr.helpmeout.generator.episodes import assign_splits, generate
from ego_adr.helpmeout.monitors import EpisodeContext, Monitor, StepOutput, build_monitor, run_monitor
from ego_adr.helpmeout.monitors.egoadr_stream import HELPMEOUT_CLASSIFY_PROMPT, parse_category
from ego_adr.models.base import Capabilities, Generation
from ego_adr.monitoring.ranking import auroc, average_precision


@pytest.fixture(scope="module")
def split():
    eps = generate(300, 11, progress=False)
    assign_splits(eps, 11, test_size=75)
    return [e for e in eps if e["split"] == "train"], [e for e in eps if e["split"] == "test"]


def test_metric_primitives_against_sklearn():
    from sklearn.metrics import average_precision_score, roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.random(300) < 0.1
    s = np.round(rng.random(300), 1)  # ties
    assert average_precision(y, s) == pytest.approx(average_precision_score(y, s))
    assert auroc(y, s) == pytest.approx(roc_auc_score(y, s))


class FutureSpy(Monitor):
    """Records what it saw; probability 1 only at the task end."""

    name = "spy"

    def reset(self, ctx: EpisodeContext) -> None:
        self.seen = []

    def step(self, t, action):
        self.seen.append(action)
        assert len(self.seen) == t + 1
        return StepOutput(1.0 if action == "(task-end)" else 0.0, t, "omission")


def test_harness_streams_one_step_at_a_time(split):
    _, test = split
    rows = run_monitor(FutureSpy(), test[:5], progress=False)
    assert [len(r["probs"]) for r in rows] == [len(e["observed"]) for e in test[:5]]


def test_random_monitor_is_chance(split):
    _, test = split
    runs = [compute_metrics(test, run_monitor(build_monitor("random", seed=s), test, progress=False), bootstrap=0)
            for s in range(5)]
    m1 = np.mean([r["M1"] for r in runs])
    m2 = np.mean([r["M2"]["all"] for r in runs])
    rate = runs[0]["M2"]["positive_rate_all"]
    assert abs(m1 - 0.5) < 0.08
    assert m2 < 3 * rate


def test_symbolic_monitors_beat_random_and_privileged_references_know_more(split):
    train, test = split
    eg = compute_metrics(test, run_monitor(build_monitor("egoadr"), test, progress=False), bootstrap=50)
    priv = compute_metrics(test, run_monitor(build_monitor("egoadr-privileged"), test, progress=False), bootstrap=0)
    pre = compute_metrics(test, run_monitor(build_monitor("precondition"), test, progress=False), bootstrap=0)
    assert eg["M1"] > 0.6 and eg["M2"]["end"] > 0.4  # the procedure text alone still catches omissions
    assert priv["M1"] > eg["M1"]  # the grounded goal and the generator's planner are worth something
    assert eg["ci95"]["M1"][0] <= eg["M1"] <= eg["ci95"]["M1"][1]
    assert pre["M3"]["false_alarm"] == 0.0  # every generated trajectory is executable
    rp = compute_metrics(test, run_monitor(build_monitor("replanner"), test, progress=False), bootstrap=0)
    assert rp["M1"] > 0.6
    cu = build_monitor("cusum")
    cu.fit(train)
    cm = compute_metrics(test, run_monitor(cu, test, progress=False), bootstrap=0)
    assert cm["M1"] > 0.5  # a 195-episode training split; on the 500-episode benchmark split it is 0.74


class ScriptedModelDouble:
    """A stand-in VLM that answers every request with a scripted text and records the requests."""

    def __init__(self, answer):
        self.answer, self.requests = answer, []

    model_id = "scripted"
    fingerprint = "scripted-0"
    capabilities = Capabilities(video=False)

    def generate(self, requests):
        self.requests.extend(requests)
        return [Generation(self.answer) for _ in requests]


def test_deep_mode_asks_the_model_with_a_text_only_request(split):
    _, test = split
    shallow_rows = run_monitor(build_monitor("egoadr"), test, progress=False)
    i = next(k for k, r in enumerate(shallow_rows)
             if any(p >= 0.5 and c != "omission" for p, c in zip(r["probs"], r["categories"])))
    ep = test[i]
    model = ScriptedModelDouble("The person repeats it. Category: perseveration")
    rows = run_monitor(build_monitor("egoadr-deep", model=model), [ep], progress=False)
    assert model.requests, "no alarm reached the model"
    req = model.requests[0]
    assert not req.has_frames
    assert req.meta == {"stage": "helpmeout_classify", "prompt": HELPMEOUT_CLASSIFY_PROMPT.name,
                        "prompt_version": HELPMEOUT_CLASSIFY_PROMPT.version}
    flagged = [c for p, c in zip(rows[0]["probs"], rows[0]["categories"]) if p >= 0.5 and c != "omission"]
    assert flagged and set(flagged) == {"perseveration"}
    # an unparseable answer falls back to the rule-based type
    rows2 = run_monitor(build_monitor("egoadr-deep", model=ScriptedModelDouble("no idea")), [ep], progress=False)
    assert rows2[0]["categories"] == shallow_rows[i]["categories"]


def test_parse_category():
    assert parse_category("Category: tool substitution") == "tool_substitution"
    assert parse_category("I think this is an omission.") == "omission"
    assert parse_category("sequence or anticipation") is None


@pytest.mark.parametrize("arch", ["seq2seq", "seq2seq-sg", "sgt"])
def test_learned_monitors_train_and_cache(split, tmp_path, arch):
    train, test = split
    m = build_monitor(arch, cache_dir=str(tmp_path), epochs=1)
    m.fit(train[:120])
    assert (tmp_path / f"learned_{arch}.pt").is_file()
    rows = run_monitor(m, test[:6], progress=False)
    assert all(0.0 <= p <= 1.0 for r in rows for p in r["probs"])
    again = build_monitor(arch, cache_dir=str(tmp_path), epochs=1)
    again.fit(train[:120])  # loads the cache
    assert run_monitor(again, test[:3], progress=False)[0]["probs"] == rows[0]["probs"]
