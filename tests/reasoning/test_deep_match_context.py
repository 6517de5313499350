"""Deep decoupling uses what key-step matching found (paper Appendix G): the matched step's expected
objects/tools from the procedure bank and the match confidence reach the narrator and the classifier, and the
row records them. The model is a recording double (the bank it "builds" lists one object per step)."""

import json

from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.run.config import RunConfig
from ego_adr.run.runner import execute


class Recording(ScriptedModelDouble):
    def __init__(self):
        super().__init__(fingerprint="match-context-recording")
        self.texts: list[tuple[str, str]] = []

    def generate(self, requests):
        self.texts += [(r.meta.get("stage"), r.messages[0].content[-1]) for r in requests]
        return super().generate(requests)


def _run(tmp_path, mode):
    model = Recording()
    out = tmp_path / mode
    execute(RunConfig(model="double", mode=mode, limit=3, output_dir=str(out), cache_dir=str(tmp_path / "c")),
            progress=False, model=model)
    return model, [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


def test_narrator_and_classifier_get_the_matched_objects_and_confidence(tmp_path, demo_root):
    model, rows = _run(tmp_path, "deep")
    for r in rows:
        m = r["stages"]["match"]
        assert m["method"] == "model" and m["step"] == "Pour the water into the cup"  # the double picks step 2
        assert m["expected_objects"] == ["cup"]
        conf = m["confidence"]
        assert conf["value"] == round(m["score"], 4) and 0.0 <= conf["value"] < 1.0  # a cosine, not a fixed 1.0
        for stage in ("narrate", "classify"):
            texts = [t for s, t in model.texts if s == stage and r["action"] in t]
            assert texts, (stage, r["action"])
            assert all("Objects and tools the current step expects: cup" in t for t in texts)
            assert all(f"Match confidence: {conf['value']:.2f} (" in t for t in texts)


def test_shallow_context_is_unchanged(tmp_path, demo_root):
    model, rows = _run(tmp_path, "shallow")
    assert all("expected_objects" not in r["stages"]["match"] for r in rows)
    assert not any("Match confidence" in t for _, t in model.texts)
