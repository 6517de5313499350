"""Deep decoupling as Section 5.2 describes it: the procedure bank is built by the bank model, not by the
evaluated model, and the annotated action stays in the narrator's and the classifier's context beside the
matched steps."""

import json

from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.reasoning.bank_model import PAPER_BANK_MODEL, resolve_bank_model
from ego_adr.run.config import RunConfig
from ego_adr.run.runner import default_output_dir, execute


def test_a_deep_run_builds_its_bank_with_the_bank_model(tmp_path, tiny_model_dir, demo_root):
    from ego_adr.models.tiny import build_tiny

    bank_dir = build_tiny(tmp_path / "bank-tiny", seed=1)  # a second tiny model, other weights
    out = tmp_path / "out"
    cfg = RunConfig(model=str(tiny_model_dir), bank_model=str(bank_dir), mode="deep", limit=2, max_new_tokens=8,
                    batch_size=2, output_dir=str(out), cache_dir=str(tmp_path / "cache"))
    execute(cfg, progress=False)
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    run = json.loads((out / "run.json").read_text())
    assert run["pipeline"]["bank_model"] == str(bank_dir)
    assert "bank" not in run["cache"]["model_calls_by_stage"]  # the evaluated model built no bank
    assert run["cache"]["model_calls_by_stage"].get("narrate")
    banks = {r["stages"]["bank"] for r in rows}
    assert banks and all(b == f"model:{bank_dir}" or b == "rule" for b in banks), banks
    notes = [r["stages"].get("bank_note") for r in rows]
    assert all(n for n in notes)  # a random model writes no END line / no steps: the note says what happened
    # cached per (task, bank model): one file per task, in the bank model's folder (not the evaluated model's)
    from ego_adr.reasoning.banks import _h

    cached = list((tmp_path / "cache" / "banks").rglob("*.json"))
    assert cached and {p.parent.name for p in cached} == {_h(f"bank-model:{bank_dir}")}
    assert len(cached) == len({r["task_id"] for r in rows})
    assert "-bank=bank-tiny" in str(default_output_dir(cfg))


def test_bank_model_defaults():
    assert resolve_bank_model(None, "qwen2-vl", injected=False) == PAPER_BANK_MODEL  # every deep model
    assert resolve_bank_model(None, "qwen2.5-vl", injected=False) == "evaluated"  # it is the bank model
    assert resolve_bank_model(None, None, injected=False) == "evaluated"  # the offline tiny demo
    assert resolve_bank_model("rule", "qwen2-vl", injected=False) == "rule"
    assert resolve_bank_model("evaluated", "qwen2-vl", injected=False) == "evaluated"


class ContextRecordingDouble(ScriptedModelDouble):
    def __init__(self):
        super().__init__(fingerprint="context-recording")
        self.texts: list[tuple[str, str]] = []

    def generate(self, requests):
        for r in requests:
            self.texts.append((r.meta.get("stage"), r.messages[0].content[-1]))
        return super().generate(requests)


def test_the_annotated_action_stays_beside_the_matched_steps(tmp_path, demo_root):
    model = ContextRecordingDouble()
    out = tmp_path / "out"
    execute(RunConfig(model="double", mode="deep", limit=3, output_dir=str(out), cache_dir=str(tmp_path / "c")),
            progress=False, model=model)
    rows = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    for stage in ("narrate", "classify"):
        texts = [t for s, t in model.texts if s == stage]
        assert len(texts) == len(rows)
        for r in rows:
            step = r["stages"]["match"]["step"]
            assert any(r["action"] in t and step in t and "Previous step:" in t and "Next step:" in t
                       for t in texts), (stage, r["action"])


def test_the_bank_store_needs_no_pipeline(tmp_path):
    """The store is given what it uses (bank model or its loader, budget, cache folder; issue 30 item 2): a loader
    is called once, for the banks not in the cache, and its name-based fingerprint keeps keying them after it
    loaded; a second store over the same cache never loads at all."""
    from ego_adr.reasoning.banks import BankStore

    procedure = "1. Fill the kettle\n2. Pour the water into the cup"
    loads: list[ScriptedModelDouble] = []

    class Loader:  # what reasoning/bank_model.py hands the pipeline
        fingerprint = "bank-model:scripted"

        def __call__(self):
            loads.append(ScriptedModelDouble(fingerprint="other-identity-once-loaded"))
            return loads[-1]

    store = BankStore(tmp_path, Loader(), budget=64)
    bank = store.for_task("tea", procedure)
    assert len(loads) == 1 and [s.text for s in bank.steps] == ["Fill the kettle", "Pour the water into the cup"]
    assert bank.builder == "model:scripted-double" and bank.steps[1].objects == ["cup"]
    assert [stage for stage, _, _ in loads[0].asked] == ["bank"]
    assert store.for_task("tea", procedure) is bank and len(loads[0].asked) == 1  # built once, in memory
    again = BankStore(tmp_path, Loader(), budget=64)
    assert [s.text for s in again.for_task("tea", procedure).steps] == [s.text for s in bank.steps]
    assert len(loads) == 1  # read from the cache, keyed by the loader's fingerprint: no second load
    assert BankStore(tmp_path, None).for_task("tea", procedure).builder == "rule"  # no bank model: rules
