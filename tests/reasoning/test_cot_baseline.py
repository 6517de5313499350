"""CoT is a baseline of its own (paper Table 5): its own prompt under both protocols, and its answer is the
method's reading of its final ``Answer:`` line (recorded as the row's ``extraction``), the reasoning kept in
``raw``. The model is a recording double: the tests are about the requests built and the answers read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ego_adr.models.base import Generation
from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.reasoning.answers import final_line_answer
from ego_adr.run.config import RunConfig
from ego_adr.run.runner import execute

PUBLIC = Path(os.environ.get("EGO_ADR_PUBLIC_EVALUATOR")
              or Path(__file__).resolve().parents[2].parent / "shared" / "public-evaluator")
REASONING = "The person fills the kettle, then skips pouring the water.\nAnswer: Omission"


class RecordingDouble(ScriptedModelDouble):
    def __init__(self, reply: str):
        super().__init__(answer=reply, fingerprint=f"recording-{hash(reply) & 0xffff}")
        self.texts: list[str] = []

    def generate(self, requests):
        self.texts += ["\n".join(p for m in r.messages for p in m.content if isinstance(p, str)) for r in requests]
        return [Generation(self.answer) for _ in requests]


def _run(tmp_path, mode, reply=REASONING, **kw):
    model = RecordingDouble(reply)
    out = tmp_path / f"{mode}-{kw.get('protocol', 'ego-adr')}"
    cfg = RunConfig(model="double", mode=mode, limit=4, cache_dir=str(tmp_path / "cache"), output_dir=str(out), **kw)
    execute(cfg, progress=False, model=model)
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return model, rows


def test_final_line_reading():
    assert final_line_answer("I think...\n**Answer:** Wrong order.").answer == "Wrong order"
    assert final_line_answer("Final answer: correct\n").extraction == "final-line"
    assert final_line_answer("Answer: Omission\nThe person skipped it.").option == "Omission"
    prose = final_line_answer("The person forgot the salt.")
    assert (prose.answer, prose.option, prose.extraction) == ("The person forgot the salt.", None, "no-final-line")
    assert final_line_answer("Answer: a mistake").option is None  # a tail naming no option is sent as it is


def test_cot_answers_its_final_line_and_keeps_the_reasoning(tmp_path):
    _, rows = _run(tmp_path, "cot")
    assert {r["answer"] for r in rows} == {"Omission"} and {r["extraction"] for r in rows} == {"final-line"}
    assert {r["raw"] for r in rows} == {REASONING}
    assert all(r["prediction"] == "Omission" for r in rows)
    assert {r["stages"]["prompt"]["name"] for r in rows} == {"cot_mc"}
    _, direct = _run(tmp_path, "direct")  # the one-pass direct baseline still sends the raw reply
    assert {r["answer"] for r in direct} == {REASONING} and {r["extraction"] for r in direct} == {"raw"}


@pytest.mark.skipif(not (PUBLIC / "src" / "green_agent" / "agent.py").is_file(), reason="needs the public source")
def test_cot_has_its_own_request_under_the_public_protocol(tmp_path):
    opts = {"public_source": str(PUBLIC)}
    cot, cot_rows = _run(tmp_path, "cot", protocol="public", protocol_options=opts)
    direct, _ = _run(tmp_path, "direct", protocol="public", protocol_options=opts)
    assert len(cot.texts) == len(direct.texts) == 4
    for c, d in zip(cot.texts, direct.texts):
        assert c != d
        assert "output ONLY" in d and "output ONLY" not in c  # the public closing instruction is replaced
        assert c.endswith(f'exactly one of: {", ".join(repr(o).replace(chr(39), chr(34)) for o in _options())}.')
        assert d.split("Instructions:")[0].strip() in c  # the public error definitions are kept
        assert d.split("Task Procedure:")[1].split("Current Step")[0] in c
    assert {r["answer"] for r in cot_rows} == {"Omission"} and {r["extraction"] for r in cot_rows} == {"final-line"}
    assert {r["stages"]["prompt"]["name"] for r in cot_rows} == {"public_cot"}


def _options():
    from ego_adr.taxonomy import OPTIONS

    return OPTIONS
