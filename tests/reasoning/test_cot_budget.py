"""CoT's budget and its missing ``Answer:`` lines (issue 29 item 1): the protocol option raises CoT's budget (a
named deviation), the public 128 never cuts it, and replies without their answer line are counted per source in
metrics.json and the report while the public rule still scores them.

The model is a recording double (the tests are about the requests and rows the code around the model makes); the
samples are the embedded demo set's."""

import json

import pytest

from ego_adr.models.base import Generation
from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.run.config import RunConfig
from ego_adr.run.runner import execute

CUT = "Let me think step by step. The person reaches for the kettle, then"  # cut off before its Answer: line
WHOLE = "The kettle is filled before it is switched on.\nAnswer: correct"


class RecordingDouble(ScriptedModelDouble):
    """Answers every request with ``reply`` and keeps the requests it was sent."""

    def __init__(self, reply: str, fingerprint: str):
        super().__init__(answer=reply, fingerprint=fingerprint)
        self.requests = []

    def generate(self, requests):
        self.requests += requests
        return [Generation(self.answer) for _ in requests]


def _run(tmp_path, reply, **kw):
    model = RecordingDouble(reply, f"cot-double-{reply[:6]}")
    out = tmp_path / "out"
    cfg = RunConfig(model="double", mode="cot", limit=4, cache_dir=str(tmp_path / "cache"), output_dir=str(out), **kw)
    execute(cfg, progress=False, model=model)
    return model, out


@pytest.mark.parametrize("protocol, options, budget", [
    ("ego-adr", None, 256),  # the paper's budget (Appendix C)
    ("public", None, 256),  # the public white agent's 128 is for its direct question, not for reasoning first
    ("ego-adr", {"max_new_tokens": "512"}, 512),  # raised by the protocol option
    ("public", {"max_new_tokens": "640"}, 640),
    ("ego-adr", {"max_new_tokens": "64"}, 256),  # the option raises CoT's budget, never lowers it
])
def test_cot_budget_follows_the_protocol_option(tmp_path, demo_root, protocol, options, budget):
    if protocol == "public":
        pytest.importorskip("ego_adr.reasoning.public_text").find_green_agent()  # needs ../shared/public-evaluator
    model, out = _run(tmp_path, WHOLE, protocol=protocol, protocol_options=options or {})
    assert model.requests and {r.config.max_new_tokens for r in model.requests} == {budget}
    run = json.loads((out / "run.json").read_text())
    if options:  # a deviation from the preset: named in the run's record as every other
        assert run["protocol"]["settings"]["max_new_tokens"] == int(options["max_new_tokens"])


def test_cot_replies_without_their_answer_line_are_counted_per_source(tmp_path, demo_root):
    _, out = _run(tmp_path, CUT)
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["cot_no_answer_line"] == {"total": 4, "replies": 4,
                                             "per_source": {"demo": {"n": 4, "replies": 4}}}
    # the public rule still scores them: the whole reply is the answer, an error claim matching no option
    assert all(r["answer"] == CUT and r["extraction"] == "no-final-line" for r in rows)
    assert metrics["overall"]["n_unparseable"] == 4 and metrics["overall"]["tn"] == 0
    report = (out / "report.md").read_text()
    assert "CoT replies without their `Answer:` line: 4 of 4 (demo 4/4)" in report
    assert "--protocol-option max_new_tokens=N" in report


def test_cot_replies_with_their_answer_line_count_zero(tmp_path, demo_root):
    _, out = _run(tmp_path, WHOLE)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["cot_no_answer_line"]["total"] == 0 and metrics["cot_no_answer_line"]["replies"] == 4
    assert "CoT replies without their" in (out / "report.md").read_text()  # 0 of 4 is said too
