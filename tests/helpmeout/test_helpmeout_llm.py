"""The LLM-prompting monitor: the paper's input per prefix, strict parsing, the stage cache, tiny models end to end."""

import pytest

from ego_adr.helpmeout.evaluation.evalrun import evaluate, subset_ids
from ego_adr.helpmeout.generator.episodes import assign_splits, generate
from ego_adr.helpmeout.monitors import MONITORS, build_monitor, run_monitor
from ego_adr.helpmeout.monitors.llm import parse_reply
from ego_adr.models.base import Capabilities, Generation
from ego_adr.reasoning.prompts import HELPMEOUT_MONITOR_PROMPT


@pytest.fixture(scope="module")
def test_split():
    eps = generate(80, 21, progress=False)
    assign_splits(eps, 21)
    return [e for e in eps if e["split"] == "test"]


class ScriptedModelDouble:
    """Answers every request with the same text and records the requests (a stand-in for the model)."""

    model_id = "scripted"
    fingerprint = "scripted-0"
    capabilities = Capabilities(video=False)

    def __init__(self, answer):
        self.answer, self.requests = answer, []

    def generate(self, requests):
        self.requests.extend(requests)
        return [Generation(self.answer) for _ in requests]


def test_parse_reply_is_strict():
    assert parse_reply("error_probability: 0.8\nonset_step: 3\nerror_type: tool substitution") == \
        {"prob": 0.8, "onset": 3, "category": "tool_substitution"}
    assert parse_reply("error_probability: 35%\nonset_step: none\nerror_type: none")["prob"] == 0.35
    assert parse_reply("I think there were 2 errors") is None
    assert parse_reply("error_probability: 7") is None


def test_a_real_replys_fractional_onset_is_no_step():
    # SmolLM2-135M-Instruct's reply to the monitor prompt behind llama.cpp (scripts/bench_real_helpmeout.py): a
    # probability on the onset line and repeated lines; the first probability counts, the onset is none, not 0
    real = "error_probability: 0.01\nonset_step: 0.01\nerror_type: 1\nerror_type: 1\nerror_probability: 0"
    assert parse_reply(real) == {"prob": 0.01, "onset": None, "category": None}
    assert parse_reply("error_probability: 0.4\nonset_step: 12\nerror_type: omission")["onset"] == 12


def test_one_call_per_step_on_the_prefix_only_and_cached(test_split, tmp_path):
    ep = test_split[0]
    model = ScriptedModelDouble("error_probability: 0.25\nonset_step: none\nerror_type: none")
    mon = build_monitor("llm", model=model, cache_path=str(tmp_path / "c.sqlite"))
    rows = run_monitor(mon, [ep], progress=False)
    assert len(model.requests) == len(ep["observed"]) and rows[0]["probs"] == [0.25] * len(ep["observed"])
    for t, req in enumerate(model.requests):
        text = req.messages[0].content[0]
        assert req.meta["prompt"] == HELPMEOUT_MONITOR_PROMPT.name and req.config.max_new_tokens == 512
        assert ep["initial_scene"][0] in text and ep["task"].replace("_", " ") in text
        assert f"{t}: {ep['observed'][t]}" in text and f"{t + 1}: " not in text  # never a later step
        assert "goal" not in text.lower() or "(goal" not in text  # the grounded goal is not given
    again = build_monitor("llm", model=model, cache_path=str(tmp_path / "c.sqlite"))
    run_monitor(again, [ep], progress=False)
    assert len(model.requests) == len(ep["observed"])  # every call answered from the stage cache
    assert again.stats()["cache_hits"] == len(ep["observed"])
    # an unparseable reply is counted and keeps the last probability, never a number read from prose
    odd = build_monitor("llm", model=ScriptedModelDouble("step 3 looks wrong"))
    rows = run_monitor(odd, [ep], progress=False)
    assert set(rows[0]["probs"]) == {0.0} and odd.stats()["unparseable"] == len(ep["observed"])


def _run_on_subset(model, episodes, tmp_path):
    ids = set(subset_ids(episodes, size=6, n_correct=3))
    sub = [ep for ep in episodes if ep["id"] in ids]
    spec = MONITORS["llm"]
    metrics, rows, _ = evaluate(spec, sub, build=lambda s: build_monitor("llm", model=model, max_new_tokens=8,
                                                                           cache_path=str(tmp_path / "c.sqlite")),
                                val=None, train=None, threshold=0.5, tolerance=0, bootstrap=50, seeds=1, subset=None)
    return metrics, rows


def test_tiny_model_locally_and_behind_serve(test_split, tmp_path):
    from ego_adr.models import load_model
    from ego_adr.models.openai_api import OpenAIChatModel
    from ego_adr.models.serve import BackgroundServer

    model = load_model("tiny", backend="hf", device="cpu")
    local, rows = _run_on_subset(model, test_split, tmp_path / "local")
    assert local["episodes"] == 6 and local["model_stats"]["calls"] == sum(len(r["probs"]) for r in rows)
    assert "M1" in local["ci95"] and len(local["ci95"]["M1"]) == 2
    with BackgroundServer(model, model_name="tiny") as srv:
        served, _ = _run_on_subset(OpenAIChatModel("tiny", base_url=srv.base_url), test_split, tmp_path / "served")
    assert served["model_stats"]["failed"] == 0
    assert served["model_stats"]["calls"] == local["model_stats"]["calls"]
