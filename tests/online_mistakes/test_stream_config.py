"""Every monitor gets the configuration of its stream wherever it is built (issue 42 item 1): the run's own fit, the
nested selection's outer folds and the complete trials' fit all go through one builder and one configuration,
and a monitor registered here records what its ``fit`` was given on each path. ``dtgl-do``'s options are declared
and checked before anything is written."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.registry import REGISTRY

PKG = Path(__file__).resolve().parents[2] / "ego_adr" / "online_mistakes"
PROBE = '''
from ego_adr.monitoring.monitor import Monitor, StepOutput

SEEN = []


class ConfigProbe(Monitor):
    """Records what each fit was given: the kind of steps, the validation noise, how many sequences."""

    def fit(self, train):
        SEEN.append((train.steps, tuple(train.noise), len(train.sequences)))

    def reset(self, ctx):
        pass

    def step(self, t, step_id):
        return StepOutput(0.0, flagged=False)
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """``config-probe`` in the step-stream registry for this test only (a copy of its tables, restored after)."""
    from ego_adr.monitoring.registry import MonitorSpec
    from ego_adr.online_mistakes.types import TRAINING

    (tmp_path / "h42_config_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(REGISTRY, "specs", dict(REGISTRY.specs))
    monkeypatch.setattr(REGISTRY, "_keys", dict(REGISTRY._keys))
    REGISTRY.register(MonitorSpec("config-probe", "h42_config_probe:ConfigProbe", "records its fits", (TRAINING,),
                                  trains=True))
    import h42_config_probe

    yield h42_config_probe.SEEN
    sys.modules.pop("h42_config_probe", None)


NOISE = tuple(cv.NOISE)


def test_every_path_fits_with_the_streams_configuration(probe, online_root, cli, tmp_path):
    from ego_adr.online_mistakes import selection
    from ego_adr.online_mistakes.data.complete import training
    from ego_adr.online_mistakes.fitting import configured

    runs = [("epic-tent-o", "miniroad", ("recognised", NOISE)), ("epic-tent-o", "oracle-merged", ("oracle", ())),
            ("epic-tent-complete", "oracle", ("oracle", ()))]
    for benchmark, stream, want in runs:
        probe.clear()
        code, _, err = cli("evaluate", "--benchmark", benchmark, "--stream", stream, "--monitor", "config-probe",
                           "--data-root", online_root, "--out", tmp_path / f"{benchmark}-{stream}", "--quiet")
        assert code == 0, err
        assert {s[:2] for s in probe} == {want}, (benchmark, stream)
    # a complete-trial stream file (one step per annotated segment): a recogniser's steps
    doc = {v: {"pred": [s["step_id"] for s in segs]} for v, segs in
           _complete_oracle(online_root).items()}
    (tmp_path / "whole.json").write_text(json.dumps(doc))
    probe.clear()
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-complete", "--stream", tmp_path / "whole.json",
                       "--monitor", "config-probe", "--data-root", online_root, "--out", tmp_path / "file", "--quiet")
    assert code == 0, err
    assert {s[:2] for s in probe} == {("recognised", NOISE)}
    # the nested selection's outer folds: the run's configuration on each fold's fit recordings
    for stream, want in (("miniroad", ("recognised", NOISE)), ("oracle", ("oracle", ()))):
        probe.clear()
        train = configured(training(online_root, "epic-tent-complete"), stream)
        selection.record(train, ["config-probe"], seeds=(7,))
        assert len(probe) == 5 and {s[:2] for s in probe} == {want}
        assert all(s[2] < len(train.sequences) for s in probe)


def _complete_oracle(root) -> dict:
    from ego_adr.online_mistakes.data.complete import load_stream

    stream = load_stream(root, "epic-tent-complete", "oracle", "correct", None)
    return {r.video: [{"step_id": s} for s in r.steps] for r in stream.recordings}


def test_one_builder_and_one_configuration_in_the_code():
    """``REGISTRY.build`` is called in one function (fitting.fitted) and a training set is made only by the data
    loader, so no path builds a monitor or a training set that drops what ``configured`` set."""
    builds, made = [], []
    for f in sorted(PKG.rglob("*.py")):
        tree = ast.parse(f.read_text())
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                        isinstance(node.func.value, ast.Name) and (node.func.value.id, node.func.attr) == \
                        ("REGISTRY", "build"):
                    builds.append((f.name, fn.name))
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "TrainingSet":
                    made.append((f.name, fn.name))
    assert builds == [("fitting.py", "fitted")]
    assert made == [("cut.py", "load_training")]


def test_dtgl_do_declares_its_options_and_refuses_a_config_the_benchmark_lacks(online_root, cli, tmp_path):
    from ego_adr.online_mistakes.monitors.dtgl_do import resolve_config

    assert set(REGISTRY.options("dtgl-do")) == {"config", "precision", "seed"}
    assert REGISTRY.resolve_options("dtgl-do", {"seed": "3", "precision": "float32"}) == {
        "config": "auto", "precision": "float32", "seed": 3}
    assert resolve_config("assembly101-o", "oracle")[1].early_stopping is None
    assert resolve_config("assembly101-o", "recognised")[1].early_stopping == 0.79
    for argv, words in ((("config=no-early-stopping",), "assembly101-o only"), (("precision=float16",), "not one of"),
                        (("seed=x",), "cannot be read"), (("nosuch=1",), "does not take option 'nosuch'")):
        out = tmp_path / "out"
        code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "dtgl-do", "--data-root",
                           online_root, "--out", out, *(x for a in argv for x in ("--monitor-option", a)))
        lines = [x for x in err.splitlines() if x.strip()]
        assert code == 2 and len(lines) == 1 and words in lines[0], err
        assert not out.exists() or not any(out.iterdir())
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--stream", "miniroad", "--monitor", "dtgl-do",
                       "--monitor-option", "seed=0", "--data-root", online_root, "--out", tmp_path / "s0", "--quiet")
    assert code == 0, err
    m = json.loads((tmp_path / "s0" / "metrics.json").read_text())
    ident = json.loads((tmp_path / "s0" / "identity.json").read_text())
    assert m["options"] == {"config": "auto", "precision": "float64", "seed": 0}
    hp = m["selection"]["hyper_parameters"]
    assert hp["seed"] == 0 and hp["steps"] == "recognised" and ident["option.seed"] == 0
