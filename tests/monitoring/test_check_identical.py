"""``scripts/check_identical.py``, the before/after comparison that holds a change of structure to every number
(issue 43): it must see a changed number, forgive only the timing fields it names, and say which it left out."""

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_identical.py"


def _script():
    spec = importlib.util.spec_from_file_location("check_identical", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_changed_number_differs_and_a_timing_does_not(tmp_path, capsys):
    ci = _script()
    metrics = {"M1": 0.5, "seconds": 1.2, "timing": {"fit_s": 0.1}, "all": {"processing_s": 3.0, "M2": 0.2}}
    for side, change in (("before", {}), ("after", {"seconds": 9.9, "all": {"processing_s": 7.0, "M2": 0.2}})):
        (tmp_path / side / "m").mkdir(parents=True)
        (tmp_path / side / "m" / "metrics.json").write_text(json.dumps(metrics | change))
        (tmp_path / side / "m" / "steps.jsonl").write_text('{"p_error": 0.25}\n')
    assert ci.compare(tmp_path / "before", tmp_path / "after") == 0
    out = capsys.readouterr().out
    assert "same: m/metrics.json (without processing_s, seconds, timing)" in out and "same: m/steps.jsonl" in out
    (tmp_path / "after" / "m" / "steps.jsonl").write_text('{"p_error": 0.250001}\n')
    (tmp_path / "after" / "m" / "metrics.json").write_text(json.dumps(metrics | {"M1": 0.51}))
    assert ci.compare(tmp_path / "before", tmp_path / "after") == 2
    out = capsys.readouterr().out
    assert "DIFFERS: m/metrics.json (without processing_s, seconds, timing): M1 0.5 -> 0.51" in out and "DIFFERS: m/steps.jsonl: line 1" in out
