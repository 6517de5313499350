"""The online monitor through HelpMeOut's harness: one step at a time, valid outputs, scored by its metrics."""

import math

from ego_adr.helpmeout.evaluation.scoring import score_outputs as compute_metrics
from ego_adr.helpmeout.generator.episodes import generate
from ego_adr.helpmeout.monitors import run_monitor
from ego_adr.helpmeout.monitors.egoadr_online import CATEGORY_MAP, EgoADROnlineMonitor


def test_online_monitor_runs_in_the_helpmeout_harness():
    eps = generate(16, 3, progress=False)
    mon = EgoADROnlineMonitor()
    rows = run_monitor(mon, eps, progress=False)
    assert [len(r["probs"]) for r in rows] == [len(e["observed"]) for e in eps]
    cats = {c for r in rows for c in r["categories"] if c}
    assert cats <= set(CATEGORY_MAP.values())
    # the procedure bank comes from the template's subgoal blocks
    assert len(mon.monitor.bank.steps) >= 2
    m = compute_metrics(eps, rows, bootstrap=0)
    assert 0.0 <= m["M1"] <= 1.0 and not math.isnan(m["M2"]["all"])
