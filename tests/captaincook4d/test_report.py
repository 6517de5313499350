"""The CaptainCook4D report's goal rows, and the bench script's one-line refusal of a bad data root."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ego_adr.captaincook4d import report as R

REPO = Path(__file__).resolve().parents[2]


def _r(name, group, val, f1):
    return {"monitor": name, "group": group, "validation": {"objective": val}, "test": {"macro_f1": f1}}


def test_the_goal_compares_the_validation_choice_with_the_best_rule_and_the_graphs_with_each_other():
    results = [_r("never-alarm", "blind", 0.2, 0.43), _r("unseen-transition", "reference", 0.7, 0.64),
               _r("procedure-official", "official graph", 0.9, 0.87), _r("procedure-learned", "learned graph", 0.8,
                                                                         0.75),
               _r("egoadr-graph", "no graph given", 0.75, 0.70), _r("sgt-oneclass", "no graph given", 0.70, 0.72)]
    g = R.goal({"results": results, "headline": "procedure-official"})
    assert g["rule"] == ("unseen-transition", 0.64) and round(g["margin"], 6) == 23.0 and g["reached"]
    assert round(g["official_over_learned"], 6) == 12.0
    assert g["no_graph"][0] == "egoadr-graph" and round(g["official_over_no_graph"], 6) == 17.0  # chosen on validation
    assert g["best_no_graph_on_test"] == ("sgt-oneclass", 0.72)
    g = R.goal({"results": results, "headline": "egoadr-graph"})
    assert round(g["margin"], 6) == 6.0 and not g["reached"]


def test_the_bench_script_refuses_a_data_root_without_the_files_in_one_line(tmp_path):
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_captaincook4d.py"), "--data-root",
                        str(tmp_path / "empty"), "--out", str(out)], capture_output=True, text=True, cwd=REPO,
                       env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "complete_step_annotations.json not found" in p.stderr and not out.exists()
