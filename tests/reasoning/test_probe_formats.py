"""The text-only probe reads what able models write, refuses copying, draws formulas per model, and records a
declared non-text backend with the paper's black-image probe as evidence (Section 5.1, 6.4, Appendix G).

The models are scripted doubles: the tests are about the probe's logic, not about a model."""

import re

import pytest

from ego_adr.models.base import Capabilities, Generation
from ego_adr.reasoning.probe import DEEP, SHALLOW, check_trial, run_probe

FORMATS = {
    "plain": "STEP:{s} RESULT:{v}",
    "markdown": "**STEP:** {s}\n**RESULT:** {v}",
    "angle": "STEP:<{s}> RESULT:<{v}>",
    "restated": "STEP: {s}\nRESULT: {f} = {v}",
    "prose": "Sure! STEP: {s}. The formula {f} equals {v}.",
}


class ScriptedProbeDouble:
    """Follows the probe's instructions in one fixed writing style (``fmt``); ``copy_step`` answers the step
    number for the value as well (follows the format, does not compute)."""

    model_id = "scripted-probe-double"

    def __init__(self, fmt: str, copy_step: bool = False, text_only: bool = True, fingerprint: str | None = None):
        self.fmt, self.copy_step = fmt, copy_step
        self.fingerprint = fingerprint or f"probe-double-{fmt}-{copy_step}"
        self.capabilities = Capabilities(video=True, text_only=text_only)
        self.requests = []

    def generate(self, requests):
        out = []
        for r in requests:
            self.requests.append(r)
            text = r.messages[0].content[-1]
            m = re.search(r"STEP:(\d+), and compute the formula ([\d +\-*]+)\.", text)
            if not m:
                out.append(Generation("Each step prepares what the next one needs, so order matters."))
                continue
            s, f = m.group(1), m.group(2).strip()
            v = s if self.copy_step else str(eval(f, {"__builtins__": {}}))
            out.append(Generation(FORMATS[self.fmt].format(s=s, f=f.replace(" ", ""), v=v)))
        return out


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_an_able_model_is_promoted_whatever_format_it_writes(fmt):
    res = run_probe(ScriptedProbeDouble(fmt), trials=4)
    assert res.route == DEEP, res.trials


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_model_that_only_copies_the_step_number_is_refused(fmt):
    res = run_probe(ScriptedProbeDouble(fmt, copy_step=True), trials=4)
    assert res.route == SHALLOW and not any(t["passed"] for t in res.trials)


def test_formulas_are_drawn_per_model():
    a = run_probe(ScriptedProbeDouble("plain", fingerprint="model-a"), trials=3)
    b = run_probe(ScriptedProbeDouble("plain", fingerprint="model-b"), trials=3)
    again = run_probe(ScriptedProbeDouble("plain", fingerprint="model-a"), trials=3)
    assert [t["formula"] for t in a.trials] != [t["formula"] for t in b.trials]
    assert [t["formula"] for t in a.trials] == [t["formula"] for t in again.trials]  # seeded: reproducible


def test_check_trial_reads_the_value_not_the_restated_formula():
    assert check_trial("RESULT: 15*2-9 = 21 STEP:14", 14, 21)["value_ok"] is False  # the step comes first
    assert check_trial("STEP:14 RESULT: 15*2-9 = 21", 14, 21) == {"step_ok": True, "value_ok": True}
    assert check_trial("STEP:14 RESULT: 15*2-9", 14, 21)["value_ok"] is False  # restated, never computed
    assert check_trial("STEP:<14>", 14, 21) == {"step_ok": True, "value_ok": False}
    assert check_trial("STEP:2 RESULT:-2", 2, -2) == {"step_ok": True, "value_ok": True}  # a negative value


def test_a_declared_non_text_backend_is_shallow_with_black_image_evidence():
    m = ScriptedProbeDouble("plain", text_only=False)
    res = run_probe(m, trials=2)
    assert res.route == SHALLOW and res.reason.startswith("declared")
    assert res.black_image["would_route"] == DEEP and len(res.black_image["trials"]) == 2
    assert m.requests and all(r.has_frames for r in m.requests)
    frames = m.requests[0].messages[0].content[0]
    assert frames.array.max() == 0  # a completely black image beside the text
