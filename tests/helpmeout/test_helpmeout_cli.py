"""HelpMeOut CLI: one-line exit-2 errors for bad files, registry-derived help, summaries with a privileged block."""

import json

import pytest

from ego_adr.helpmeout.cli import main
from ego_adr.helpmeout.evaluation.evalrun import subset_ids, youden_threshold
from ego_adr.helpmeout.monitors import MONITORS
from ego_adr.helpmeout.monitors.registry import privileged


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    d = tmp_path_factory.mktemp("release")
    assert main(["generate", "--episodes", "160", "--seed", "4", "--out", str(d), "--quiet"]) == 0
    return d


def _one_line_exit_2(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    return err


def test_bad_episode_files_stop_with_one_line(release, tmp_path, capsys):
    out = str(tmp_path / "o")
    err = _one_line_exit_2(capsys, ["evaluate", "--monitor", "precondition", "--episodes", str(tmp_path / "nope.jsonl"),
                                    "--out", out])
    assert "not found" in err
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text((release / "test.jsonl").read_text()[:500])  # a torn file
    assert "not JSON" in _one_line_exit_2(capsys, ["evaluate", "--monitor", "precondition", "--episodes", str(corrupt),
                                                   "--out", out])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert "no episodes" in _one_line_exit_2(capsys, ["validate", str(empty)])
    assert "no episodes" in _one_line_exit_2(capsys, ["evaluate", "--monitor", "random", "--episodes", str(empty),
                                                      "--out", out])
    # an episode validate rejects is refused by evaluate too
    rows = [json.loads(x) for x in (release / "test.jsonl").read_text().splitlines()]
    rows[0]["observed"] = rows[0]["observed"][:2] + rows[0]["observed"][3:]
    rows[0]["labels"] = rows[0]["labels"][:-1]
    bad = tmp_path / "test.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["validate", str(bad)]) == 1
    capsys.readouterr()
    err = _one_line_exit_2(capsys, ["evaluate", "--monitor", "precondition", "--episodes", str(bad), "--out", out,
                                    "--threshold", "0.5"])
    assert "invalid" in err and rows[0]["id"] in err


def test_evaluate_help_lists_every_monitor_with_a_description(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    for name, spec in MONITORS.items():
        line = next(x for x in text.splitlines() if x.strip().startswith(name + " "))
        assert spec.description in line
        assert ("privileged" in line) == privileged(spec)
    assert {n for n, s in MONITORS.items() if privileged(s)} == {"replanner-privileged", "egoadr-privileged",
                                                                  "egoadr-knowledge"}


def test_summarize_puts_privileged_references_in_their_own_block(release, tmp_path, capsys):
    ev = tmp_path / "eval"
    for m in ("random", "precondition", "replanner-privileged"):
        assert main(["evaluate", "--monitor", m, "--episodes", str(release / "test.jsonl"), "--out", str(ev / m),
                     "--bootstrap", "20", "--seeds", "2", "--quiet"]) == 0
    metrics = json.loads((ev / "precondition" / "metrics.json").read_text())
    assert metrics["threshold_rule"].startswith("Youden") and not metrics["privileged"]
    assert "subset" in metrics and len(metrics["subset"]["ids"]) == metrics["subset"]["episodes"]
    capsys.readouterr()
    assert main(["summarize", str(ev / "random"), str(ev / "precondition"), str(ev / "replanner-privileged"),
                 "--out", str(tmp_path / "sum")]) == 0
    text = capsys.readouterr().out
    table2 = text.split("## Table 13")[0]
    head = table2.index("*Privileged / symbolic references")
    assert table2.index("| precondition |") < head < table2.index("| replanner-privileged — reads grounded goal |")
    for t in ("Table 13", "Table 14", "Table 15", "Tables 11-12", "Table 17", "Table 18"):
        assert t in text
    assert (tmp_path / "sum" / "summary.md").is_file() and (tmp_path / "sum" / "figure3.png").is_file()


def test_subset_and_threshold_rule(release):
    test = [json.loads(x) for x in (release / "test.jsonl").read_text().splitlines()]
    ids = subset_ids(test, size=20, n_correct=10)
    assert ids == subset_ids(test, size=20, n_correct=10) and len(ids) == 20
    chosen = [ep for ep in test if ep["id"] in set(ids)]
    assert sum(ep["correct"] for ep in chosen) == 10
    eps = [{"correct": c} for c in (True, True, False, False)]
    outs = [{"probs": [p]} for p in (0.1, 0.4, 0.3, 0.9)]
    assert youden_threshold(eps, outs) == 0.9  # J(0.9) = 0.5 - 0 beats J(0.3) = 1 - 0.5; ties go higher


def test_metrics_come_back_from_the_per_step_file_alone(release, tmp_path):
    """``steps.jsonl`` is what the metrics were computed from: the layer rescoring it gives ``metrics.json``, and
    scikit-learn on its rows (code that shares nothing with ours) gives M1, M2 and the false-alarm rate."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    from ego_adr.helpmeout.evaluation.scoring import score_rows
    from ego_adr.monitoring.per_step import read_steps

    out = tmp_path / "cusum"
    assert main(["evaluate", "--monitor", "cusum", "--episodes", str(release / "test.jsonl"), "--out", str(out),
                 "--bootstrap", "0", "--quiet"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    rows = read_steps(out / "steps.jsonl")
    test = [json.loads(x) for x in (release / "test.jsonl").read_text().splitlines()]
    assert len(rows) == sum(len(ep["observed"]) for ep in test)
    again = score_rows(rows, m["M3"]["threshold"], m["M3"]["tolerance"], bootstrap=0)
    assert json.dumps(again, sort_keys=True, default=str) == json.dumps(
        {k: m[k] for k in again}, sort_keys=True, default=str)
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["episode"], []).append(r)
    assert m["M1"] == pytest.approx(roc_auc_score([rs[0]["errorful"] for rs in by.values()],
                                                  [max(r["p_error"] for r in rs) for rs in by.values()]))
    assert m["M2"]["all"] == pytest.approx(average_precision_score([r["label"] for r in rows],
                                                                   [r["p_error"] for r in rows]))
    ends = [rs[-1] for rs in by.values()]
    assert m["M2"]["end"] == pytest.approx(average_precision_score([r["label"] for r in ends],
                                                                   [r["p_error"] for r in ends]))
    correct = [rs for rs in by.values() if not rs[0]["errorful"]]
    assert m["M3"]["false_alarm"] == pytest.approx(sum(any(r["flagged"] for r in rs) for rs in correct) / len(correct))


def test_evaluate_prints_its_row_under_the_table_header(release, tmp_path, capsys):
    assert main(["evaluate", "--monitor", "precondition", "--episodes", str(release / "test.jsonl"),
                 "--out", str(tmp_path / "p"), "--bootstrap", "0", "--quiet"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head == ["Method", "M1", "M2 all", "M2 end", "M2 mid", "Missed", "Early", "On target", "FA", "M4"]
    assert set(lines[1]) <= set("|-: ")  # the separator, then the row, one cell per column
    row = [c.strip() for c in lines[2].strip("|").split("|")]
    assert len(lines) == 3 and row[0] == "precondition" and len(row) == len(head)
    m = json.loads((tmp_path / "p" / "metrics.json").read_text())
    assert row[1] == f"{m['M1']:.3f}" and row[8] == f"{m['M3']['false_alarm']:.2f}"


def test_random_row_is_the_papers_with_the_single_seed_spread_beside_it(release, tmp_path, capsys):
    """Table 2's caption: Random is the positive-step rate for M1 and M2 (M1 0.500, M2 all/end/mid the share of
    positive steps, counted here from the episode file) and a uniformly random monitor for M3 and M4, the mean
    of its seeds; one seed's spread is printed beside it."""
    from sklearn.metrics import roc_auc_score

    from ego_adr.helpmeout.monitors import build_monitor, run_monitor

    out = tmp_path / "random"
    assert main(["evaluate", "--monitor", "random", "--episodes", str(release / "test.jsonl"), "--out", str(out),
                 "--seeds", "4", "--quiet"]) == 0
    m = json.loads((out / "metrics.json").read_text())
    test = [json.loads(x) for x in (release / "test.jsonl").read_text().splitlines()]
    labels = [y for ep in test for y in ep["labels"]]
    ends = [ep["labels"][-1] for ep in test]
    mids = [y for ep in test for y in ep["labels"][:-1]]
    assert m["M1"] == 0.5
    assert m["M2"]["all"] == pytest.approx(sum(labels) / len(labels))
    assert m["M2"]["end"] == pytest.approx(sum(ends) / len(ends))
    assert m["M2"]["mid"] == pytest.approx(sum(mids) / len(mids))
    assert "ci95" not in m and "Table 2's caption" in m["random_row"]
    # M3 / M4: the mean over the 4 seeds; the spread: those seeds' own M1 (scikit-learn on their outputs)
    seed_m1 = []
    for s in range(4):
        rows = run_monitor(build_monitor("random", seed=s), test, progress=False)
        seed_m1.append(roc_auc_score([not ep["correct"] for ep in test], [max(r["probs"]) for r in rows]))
    sp = m["single_seed"]
    assert sp["M1"]["mean"] == pytest.approx(sum(seed_m1) / 4) and sp["M1"]["seeds"] == 4
    assert sp["M1"]["min"] == pytest.approx(min(seed_m1)) and sp["M1"]["max"] == pytest.approx(max(seed_m1))
    assert m["M3"]["false_alarm"] == pytest.approx(sp["false_alarm"]["mean"])
    assert m["M4"]["macro"] == pytest.approx(sp["M4"]["mean"])
    printed = capsys.readouterr().out
    assert "| random | 0.500 |" in printed and "| random: one seed (mean ± sd of 4) |" in printed
    assert "| random: one seed (mean ± sd of 4) |" in (out / "report.md").read_text()
