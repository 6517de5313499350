"""Key-step matching on the real procedures: TF-IDF above tau, difflib fallback below it."""

import json
from pathlib import Path

import pytest

from ego_adr.reasoning.matching import TAU, KeyStepMatcher
from ego_adr.reasoning.procedures import parse_model_bank, rule_based_bank, split_steps

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "egoerrorvqa"


@pytest.fixture(scope="module")
def procedures():
    p = SHARED / "procedure.json"
    if not p.exists():
        pytest.skip(f"real annotations not found at {SHARED} (see README: getting the annotations)")
    return json.loads(p.read_text())


def test_tau_is_the_papers_threshold():
    assert TAU == 0.25


def test_every_real_procedure_splits_into_several_steps(procedures):
    for task, text in procedures.items():
        steps = split_steps(text)
        assert len(steps) >= 3, task
        assert all(len(s.split()) >= 2 for s in steps), task


def test_tfidf_match_on_real_procedure(procedures):
    bank = rule_based_bank("Coffee", procedures["Coffee"])
    m = KeyStepMatcher(bank.texts).match("pour the remaining water in a circular motion")
    assert m.method == "tfidf" and m.score >= TAU
    assert "pour" in m.step.lower()
    assert m.previous == bank.texts[m.index - 1]
    assert m.next == (bank.texts[m.index + 1] if m.index + 1 < len(bank.texts) else None)


def test_difflib_fallback_below_tau(procedures):
    bank = rule_based_bank("tent assembly", procedures["tent assembly"])
    matcher = KeyStepMatcher(bank.texts)
    q = "stakebg"  # a typo: no shared TF-IDF term, but close character-wise
    m = matcher.match(q)
    assert max(matcher.tfidf_scores(q)) < TAU
    assert m.method == "difflib"
    assert "stakebag" in m.step.lower()


def test_case_insensitive(procedures):
    bank = rule_based_bank("toy car assembly", procedures["toy car assembly"])
    matcher = KeyStepMatcher(bank.texts)
    assert matcher.match("ATTACH THE WINDSHIELD TO THE CHASSIS").index == matcher.match(
        "attach the windshield to the chassis").index


def test_threshold_is_configurable(procedures):
    bank = rule_based_bank("Coffee", procedures["Coffee"])
    q = "pour water"
    assert KeyStepMatcher(bank.texts, tau=0.99).match(q).method == "difflib"
    assert KeyStepMatcher(bank.texts, tau=0.0).match(q).method == "tfidf"


def test_model_bank_parsing_and_fallback():
    text = "Here are the steps:\n1. Boil the water [objects: kettle, water]\n2. Pour water into the cup [objects: cup]\n" \
           "3) Add the tea bag - objects: tea bag, cup\n"
    bank = parse_model_bank("tea", text, "model:x")
    assert bank is not None and [s.text for s in bank.steps][0] == "Boil the water"
    assert bank.steps[0].objects == ["kettle", "water"]
    assert bank.steps[2].objects == ["tea bag", "cup"]
    assert parse_model_bank("tea", "I cannot help with that.", "model:x") is None
    js = '[{"step": "Boil water", "objects": ["kettle"]}, {"step": "Steep the tea", "objects": ["cup"]}]'
    assert [s.text for s in parse_model_bank("tea", js, "m").steps] == ["Boil water", "Steep the tea"]
