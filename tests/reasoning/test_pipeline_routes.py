"""Pipeline behaviour that depends on the model's capabilities and the ablation switches (model doubles: the
tests are about the pipeline around the model)."""

import json

from ego_adr.models.base import Capabilities
from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.run.config import RunConfig
from ego_adr.run.runner import execute


class FrameRecordingDouble(ScriptedModelDouble):
    def __init__(self, text_only: bool):
        super().__init__(fingerprint=f"frame-recording-{text_only}")
        self.capabilities = Capabilities(video=True, text_only=text_only, max_batch_size=4)
        self.seen: list[tuple[str, bool]] = []

    def generate(self, requests):
        self.seen += [(r.meta.get("stage"), r.has_frames) for r in requests]
        return super().generate(requests)


def _run(tmp_path, model, **kw):
    out = tmp_path / "out"
    execute(RunConfig(model="double", limit=3, cache_dir=str(tmp_path / "cache"), output_dir=str(out), **kw),
            progress=False, model=model)
    return [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]


def test_deep_mode_text_calls_are_text_only_for_a_text_capable_model(tmp_path, demo_root):
    m = FrameRecordingDouble(text_only=True)
    rows = _run(tmp_path, m, mode="deep")
    stages = {s for s, _ in m.seen}
    assert {"bank", "match", "narrate", "classify"} <= stages
    assert all(has == (s == "narrate") for s, has in m.seen)
    assert all(r["prediction"] == "Wrong order" for r in rows)  # the double's classification answer
    assert all(r["stages"]["match"]["method"] == "model" for r in rows)


def test_forced_deep_mode_gives_a_model_without_text_only_input_a_black_clip(tmp_path, demo_root):
    m = FrameRecordingDouble(text_only=False)
    _run(tmp_path, m, mode="deep")
    assert m.seen and all(has for _, has in m.seen)  # Section 6.4: a black image alongside the text


def test_auto_mode_routes_a_model_without_text_only_input_to_shallow(tmp_path, demo_root):
    m = FrameRecordingDouble(text_only=False)
    rows = _run(tmp_path, m, mode="auto")
    assert {r["route"] for r in rows} == {"shallow"}
    # the probe's black-image evidence (Section 6.4), then shallow: rule bank, TF-IDF match, keyword classification
    assert {s for s, _ in m.seen} == {"probe", "narrate"}
    assert all(has for s, has in m.seen if s == "probe")


def test_ablation_switches_change_the_calls(tmp_path, demo_root):
    m = FrameRecordingDouble(text_only=True)
    _run(tmp_path / "a", m, mode="deep", match=False, narration=False)
    assert {s for s, _ in m.seen} == {"direct"}  # Table 6 row 1 is the one-pass baseline
    m = FrameRecordingDouble(text_only=True)
    _run(tmp_path / "b", m, mode="deep", match=True, narration=False)
    assert ("classify", True) in m.seen and "narrate" not in {s for s, _ in m.seen}
