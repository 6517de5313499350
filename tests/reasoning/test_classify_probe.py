"""Shallow keyword classification and the text-only probe's routing."""

import re

from ego_adr.models.base import Capabilities, Generation
from ego_adr.reasoning.classify import classify_answer, classify_keywords, parse_three_part
from ego_adr.reasoning.probe import DEEP, SHALLOW, cached_probe, check_trial, is_abnormal, run_probe
from ego_adr.taxonomy import CORRECT


def test_three_part_narration_parsing():
    n = "Object/Tool: a kettle\nAction: pours water into the cup\nAnomaly: none"
    assert parse_three_part(n) == {"object": "a kettle", "action": "pours water into the cup", "anomaly": "none"}


def test_keywords_classify_each_kind_of_anomaly():
    cases = {
        "Object/Tool: fork\nAction: stirs the tea\nAnomaly: uses a fork instead of a spoon": "Wrong object",
        "Object/Tool: cup\nAction: pours milk\nAnomaly: the milk is poured before the tea, out of order": "Wrong order",
        "Object/Tool: tent pole\nAction: bends pole\nAnomaly: the pole snaps and is broken": "Equipment failure",
        "Object/Tool: salt\nAction: none\nAnomaly: the person skips adding salt": "Omission",
        "Object/Tool: knife\nAction: cuts\nAnomaly: searches the drawer, an unnecessary extra action":
            "Unintended and unnecessary action",
    }
    for narration, expected in cases.items():
        c = classify_keywords(narration, step_objects=None)
        assert c.option == expected, (narration, c)
        assert c.method == "keywords" and c.evidence


def test_no_error_evidence_is_correct_and_says_why():
    c = classify_keywords("Object/Tool: kettle\nAction: pours water into the cup\nAnomaly: none", ["kettle", "cup"])
    assert c.option == CORRECT and c.method == "no-error-keywords"


def test_object_mismatch_against_expected_step_is_wrong_object():
    c = classify_keywords("Object/Tool: hammer\nAction: hits the nail\nAnomaly: none", ["screwdriver", "screw"])
    assert c.option == "Wrong object"


def test_empty_narration_is_a_failure_not_correct():
    assert classify_keywords("").option is None
    assert classify_keywords(None).method == "empty"


def test_llm_answer_parsing_records_unparseable():
    assert classify_answer("Answer: Omission").option == "Omission"
    c = classify_answer("purple monkey dishwasher")
    assert c.option is None and c.method == "unparseable" and c.raw == "purple monkey dishwasher"


class ArithmeticModelDouble:
    """A model double that follows the probe's instructions exactly (the test is about the probe's logic)."""

    model_id = "arithmetic-double"
    fingerprint = "arithmetic-double-v1"
    capabilities = Capabilities(video=True, text_only=True)

    def __init__(self):
        self.calls = 0

    def generate(self, requests):
        self.calls += len(requests)
        out = []
        for r in requests:
            text = r.messages[0].content[-1]
            m = re.search(r"STEP:(\d+), and compute the formula ([\d +\-*]+)\.", text)
            if m:
                value = eval(m.group(2), {"__builtins__": {}})
                out.append(Generation(f"STEP:{m.group(1)} RESULT:{value}"))
            else:
                out.append(Generation("Because later steps depend on the results of earlier ones."))
        return out


class WrongStepModelDouble(ArithmeticModelDouble):
    fingerprint = "wrong-step-double"

    def generate(self, requests):
        return [Generation((g.text or "").replace("STEP:", "STEP:1")) for g in super().generate(requests)]


class NoTextModelDouble(ArithmeticModelDouble):
    fingerprint = "no-text-double"
    capabilities = Capabilities(video=True, text_only=False)


class FailingModelDouble(ArithmeticModelDouble):
    fingerprint = "failing-double"

    def generate(self, requests):
        return [Generation(None, error="RuntimeError: text-only input not supported") for _ in requests]


def test_probe_promotes_a_model_that_follows_instructions_and_computes(tmp_path):
    res = run_probe(ArithmeticModelDouble(), trials=4, seed=3)
    assert res.route == DEEP and len(res.trials) == 4 and all(t["passed"] for t in res.trials)


def test_probe_demotes_wrong_steps_exceptions_and_no_text_input():
    assert run_probe(WrongStepModelDouble()).route == SHALLOW
    r = run_probe(FailingModelDouble())
    assert r.route == SHALLOW and "exception" in r.reason
    r = run_probe(NoTextModelDouble())
    assert r.route == SHALLOW and "text-only" in r.reason


def test_probe_is_cached_per_model_with_its_evidence(tmp_path):
    m = ArithmeticModelDouble()
    first = cached_probe(m, tmp_path, trials=3)
    calls = m.calls
    again = cached_probe(m, tmp_path, trials=3)
    assert m.calls == calls and again.to_dict() == first.to_dict()
    assert again.trials[0]["prompt"].startswith("Answer STEP:")


def test_abnormal_output_detection():
    p = "Explain why order matters."
    assert is_abnormal(p, "", None) == "empty output"
    assert "degenerate" in is_abnormal(p, "the the the the the the the the the the", None)
    assert is_abnormal(p, "Explain why order matters.", None) == "echo of the prompt"
    assert is_abnormal(p, "Because each step builds on the previous one.", None) is None


def test_trial_checking():
    assert check_trial("STEP:7 RESULT:12", 7, 12) == {"step_ok": True, "value_ok": True}
    assert check_trial("STEP: 7, the answer is 12", 7, 12) == {"step_ok": True, "value_ok": True}
    assert check_trial("STEP:8 RESULT:12", 7, 12)["step_ok"] is False
    assert check_trial("12", 7, 12)["step_ok"] is False


def test_but_should_contrast_separates_object_from_action():
    assert classify_keywords("use switch s1 but should use switch s2").option == "Wrong object"
    assert classify_keywords("put two copper plates on the top row but should put them on the left column"
                             ).option == "Wrong action"
    assert classify_keywords("pour much water but should pour about 15 ml").option == "Wrong action"
    assert classify_keywords("microwaved it for 2 minutes instead of 1 minute").option == "Wrong action"
    assert classify_keywords("used a fork instead of a spoon").option == "Wrong object"


def test_the_tiny_random_model_fails_the_probe_with_evidence(tiny_model_dir, tmp_path):
    from ego_adr.models import load_model

    model = load_model(str(tiny_model_dir), device="cpu")
    res = cached_probe(model, tmp_path, trials=2)
    assert res.route == SHALLOW
    assert res.stage1["answer"] is not None or res.stage1["error"]
    # either stage 1 saw abnormal output, or stage 2 recorded trials that were not all right
    assert res.stage1.get("abnormal") or (res.trials and not all(t["passed"] for t in res.trials))
