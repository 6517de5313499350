"""The shallow keyword classifier reads negation, counts a phrase once and breaks ties as documented.
Every narration here was written for these tests (none is an annotation string)."""

import pytest

from ego_adr.reasoning.classify import classify_keywords, vocabulary_hits
from ego_adr.taxonomy import CORRECT


def n(obj: str, action: str, anomaly: str) -> str:
    return f"Object/Tool: {obj}\nAction: {action}\nAnomaly: {anomaly}"


@pytest.mark.parametrize("anomaly", [
    "no step was skipped",
    "the person did not use the wrong tool",
    "she finishes without any extra steps",
    "the blade isn't broken",
])
def test_negated_error_phrases_are_not_evidence(anomaly):
    c = classify_keywords(n("whisk", "beats the eggs in the bowl", anomaly))
    assert c.option == CORRECT, c
    assert any("negated" in e for e in c.evidence)


def test_negation_stops_at_the_clause():
    c = classify_keywords(n("sponge", "wipes the table", "nothing unusual at first, but then she skips the rinse"))
    assert c.option == "Omission"


def test_a_phrase_that_contains_its_own_negation_is_read_as_written():
    assert classify_keywords(n("drill", "presses the trigger", "the drill is not working")).option == \
        "Equipment failure"
    assert classify_keywords(n("pan", "fries the onion", "he does not add the garlic")).option == "Omission"


def test_one_phrase_is_counted_once():
    hits = vocabulary_hits("the screws go in out of order")
    assert hits == {"Wrong order": ["out of order"]}  # not also 'order'
    hits = vocabulary_hits("the glue gun fails to work")
    assert hits == {"Equipment failure": ["fails to work"]}  # not also Wrong action's 'fails to'
    c = classify_keywords(n("ladle", "serves the soup", "she uses a ladle instead of a spoon"))
    assert c.option == "Wrong object"
    assert c.scores["Wrong object"] == 2.0  # the contrast rule alone; its 'instead of' is no second keyword


def test_tie_break_prefers_anomaly_evidence_then_taxonomy_order():
    # one Wrong-order phrase in the anomaly (2.0) against two Wrong-action phrases elsewhere (1.0 each)
    c = classify_keywords(n("jug", "pours the water incorrectly and spills it", "the lid goes on too early"))
    assert c.scores["Wrong order"] == c.scores["Wrong action"] == 2.0
    assert c.option == "Wrong order"
    # equal scores, both in the anomaly: the taxonomy's order (Wrong object before Wrong action)
    c = classify_keywords(n("tray", "slides the tray", "uses the wrong tool and places it upside down"))
    assert c.scores["Wrong object"] == c.scores["Wrong action"]
    assert c.option == "Wrong object"


def test_an_empty_narration_is_no_answer_not_an_error_prediction(tmp_path, demo_root):
    import json

    from ego_adr.models.base import Generation
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.run.config import RunConfig
    from ego_adr.run.runner import execute

    class SilentNarratorDouble(ScriptedModelDouble):
        """Narrates nothing (the test is about what the pipeline records then)."""

        def generate(self, requests):
            return [Generation("") for _ in requests]

    out = tmp_path / "out"
    execute(RunConfig(model="double", mode="shallow", limit=2, output_dir=str(out), cache_dir=str(tmp_path / "c")),
            progress=False, model=SilentNarratorDouble(fingerprint="silent-narrator"))
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    assert rows and all(r["failure"] == "no answer (empty)" and r["answer"] is None for r in rows)
