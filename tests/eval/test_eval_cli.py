"""End-to-end checks of ``python -m ego_adr.eval`` (score, compare, agreement, merge, bad input)."""

from __future__ import annotations

import csv
import importlib.util
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from ego_adr.eval.__main__ import main
from ego_adr.taxonomy import OPTIONS

REPO = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def make_rows(n=120, seed=0, sources=("captaincook4d", "epic_tent"), prefix="s"):
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        gt = ["correct"] if rng.random() < 0.6 else rng.sample(OPTIONS[1:6], k=rng.choice([1, 1, 2]))
        u = rng.random()
        pred, failure, raw = (gt[0], None, gt[0]) if u < 0.4 else (rng.choice(OPTIONS), None, "x")
        if u > 0.93:
            pred, failure, raw = None, "unparseable", "no idea"
        elif u > 0.88:
            pred, failure, raw = None, "video_unreadable", None
        rows.append({"sample_id": f"{prefix}{i}", "source": sources[i % len(sources)], "task_id": "t",
                     "ground_truth": gt, "prediction": pred, "failure": failure, "raw": raw, "route": "deep",
                     "mode": "ego-adr", "stages": {}, "timings": {}})
    return rows


def write_jsonl(path: Path, rows, torn_tail=False):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if torn_tail:
        text += '{"sample_id": "half-writ'
    path.write_text(text)
    return path


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_score_subprocess_writes_all_files(tmp_path):
    pred = write_jsonl(tmp_path / "predictions.jsonl", make_rows(), torn_tail=True)
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "ego_adr.eval", "score", str(pred), "--out", str(out),
                          "--title", "demo", "--frames", "8f", "--n-boot", "200"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "| Source | frames | Acc | Pre | Recall | F1 | C | Om | UA | WA | WOb | WOr |" in res.stdout
    for name in ("metrics.json", "report.md", "confusion_matrix.png", "per_type_accuracy.png"):
        assert (out / name).is_file(), name
    for name in ("confusion_matrix.png", "per_type_accuracy.png"):
        data = (out / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 2000
    m = json.loads((out / "metrics.json").read_text())
    assert m["overall"]["n"] == 120  # torn last line ignored
    report = (out / "report.md").read_text()
    assert "# demo" in report and "| **Overall** | 8f |" in report and "CWA" in report
    assert f"{100 * m['overall']['precision']:.1f}" in report


# Eight rows whose numbers are known by hand (the public rule: strip whitespace, then .,!?;:" ; a hit equals a
# ground-truth option ignoring case; any text but "correct" claims an error; no answer = in n, in no cell).
BY_HAND = [  # (source, ground truth, answer): what it scores as
    ("captaincook4d", ["Omission"], "Omission"),  # hit, TP
    ("captaincook4d", ["correct"], "correct"),  # hit, TN
    ("captaincook4d", ["correct"], "Wrong order"),  # FP
    ("captaincook4d", ["Omission"], "correct"),  # FN
    ("epic_tent", ["Wrong object", "Wrong action"], "Wrong action"),  # hit (either label), TP
    ("epic_tent", ["Wrong order"], "Answer: Wrong order"),  # not an option: an uncredited error claim, FP
    ("epic_tent", ["correct"], None),  # no answer (video missing): in n, in no cell
    ("epic_tent", ["Wrong order"], " wrong order."),  # hit after the public cleaning, TP
]


def test_score_gives_the_numbers_computed_by_hand(tmp_path):
    rows = [{"sample_id": f"h{i}", "source": src, "task_id": "t", "ground_truth": gt, "answer": a,
             "failure": None if a is not None else "video: missing"} for i, (src, gt, a) in enumerate(BY_HAND)]
    pred = write_jsonl(tmp_path / "p.jsonl", rows)
    assert main(["score", str(pred), "--out", str(tmp_path / "o"), "--n-boot", "50", "--seed", "3"]) == 0
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    o = m["overall"]
    assert (o["tp"], o["fp"], o["tn"], o["fn"], o["n"], o["n_failed"], o["n_unparseable"]) == (3, 2, 1, 1, 8, 1, 1)
    approx = pytest.approx
    # accuracy 4 hits / 8; precision 3 / 5; recall 3 / 4; F1 2 * 0.6 * 0.75 / 1.35 = 2/3
    assert (o["accuracy"], o["precision"], o["recall"], o["f1"]) == approx((0.5, 0.6, 0.75, 2 / 3), abs=1e-12)
    cook, tent = m["per_source"]["captaincook4d"], m["per_source"]["epic_tent"]
    assert (cook["accuracy"], cook["precision"], cook["recall"], cook["f1"]) == approx((0.5, 0.5, 0.5, 0.5))
    assert (tent["accuracy"], tent["precision"], tent["recall"], tent["f1"]) == approx((0.5, 2 / 3, 1.0, 0.8))
    sa = m["simple_average"]  # unweighted over the two sources
    assert (sa["precision"], sa["recall"], sa["f1"]) == approx(((0.5 + 2 / 3) / 2, 0.75, 0.65))
    types = m["per_type_accuracy"]["overall"]
    assert types["Omission"]["accuracy"] == 0.5 and types["correct"]["accuracy"] == approx(1 / 3)
    assert types["Wrong order"]["accuracy"] == 0.5 and types["Wrong action"]["accuracy"] == 1.0
    assert types["Wrong object"]["accuracy"] == 0.0  # the two-label sample was answered with its other label
    assert types["Others"]["accuracy"] is None  # no sample of that type


def test_open_end_file_is_delegated(tmp_path, capsys):
    if importlib.util.find_spec("ego_adr.eval.open_end") is None:
        pytest.skip("ego_adr.eval.open_end not present")
    judged = [{"sample_id": f"o{i}", "qa_index": 0, "source": src, "task": "open-end", "score": s,
               "judge_scores": {"qwen": s, "deepseek": s}, "failure": None}
              for i, (src, s) in enumerate([("egooops", 3.0), ("egooops", 4.0), ("epic_tent", 2.0)])]
    pred = write_jsonl(tmp_path / "judgements.jsonl", judged)
    assert main(["score", str(pred), "--out", str(tmp_path / "o")]) == 0
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert m["avg_sim"] == pytest.approx(3.0)
    assert (tmp_path / "o" / "report.md").is_file()
    # an answers file without judge scores: a clear message, exit 2
    answers = write_jsonl(tmp_path / "answers.jsonl", [{"sample_id": "o1", "source": "egooops", "task": "open-end",
                                                        "answer": "I skipped a step", "failure": None}])
    assert main(["score", str(answers), "--out", str(tmp_path / "o2")]) == 2
    assert "judge" in capsys.readouterr().err


def test_bad_input_exits_2(tmp_path, capsys):
    assert main(["score", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")]) == 2
    assert "not found" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert main(["score", str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "no prediction rows" in capsys.readouterr().err
    bad_gt = write_jsonl(tmp_path / "bad.jsonl", [{"sample_id": "x", "source": "s", "ground_truth": ["Nope"],
                                                   "prediction": "correct", "failure": None}])
    assert main(["score", str(bad_gt), "--out", str(tmp_path / "o")]) == 2  # nothing at all can be scored
    err = capsys.readouterr().err
    assert "no row can be scored" in err and "unknown ground-truth label" in err and len(err.splitlines()) == 1
    with pytest.raises(SystemExit) as e:
        main(["score"])  # missing required arguments
    assert e.value.code == 2
    with pytest.raises(SystemExit) as e:
        main(["frobnicate"])
    assert e.value.code == 2
    assert main(["compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl")]) == 2
    assert main(["agreement", str(tmp_path / "r.csv")]) == 2
    assert main(["merge", str(tmp_path / "m.jsonl")]) == 2
    assert main(["merge", str(tmp_path / "m.jsonl"), "--inputs", str(tmp_path / "shard-*/p.jsonl")]) == 2


def test_compare_prints_paired_table(tmp_path, capsys):
    a = write_jsonl(tmp_path / "a.jsonl", make_rows(seed=1))
    rows_b = make_rows(seed=2)[:100]  # same sample ids for the first 100; different predictions
    b = write_jsonl(tmp_path / "b.jsonl", rows_b)
    assert main(["compare", str(a), str(b), "--n-boot", "100", "--json", str(tmp_path / "cmp.json")]) == 0
    out = capsys.readouterr().out
    assert "common samples: 100" in out and "only in a: 20" in out and "McNemar" in out
    res = json.loads((tmp_path / "cmp.json").read_text())
    assert res["n_common"] == 100 and res["n_only_a"] == 20 and res["n_only_b"] == 0


def test_agreement_cli(tmp_path, capsys):
    rng = random.Random(0)
    path = tmp_path / "ratings.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "A", "B", "C", "qwen"])
        for i in range(40):
            t = rng.randint(0, 5)
            w.writerow([i, *[min(5, max(0, t + rng.choice([0, 0, 0, 1, -1]))) for _ in range(4)]])
    assert main(["agreement", str(path), "--humans", "A,B,C"]) == 0
    out = capsys.readouterr().out
    assert "Cohen's Kappa" in out and "Fleiss' Kappa" in out and "A vs B" in out and "qwen (not in the panel)" in out


def test_merge_shards(tmp_path, capsys):
    rows = make_rows(n=60, seed=4)
    for r in rows:
        r["stages"] = {"narration": f"n{r['sample_id']}"}
    shards = []
    for k in range(3):
        d = tmp_path / f"shard-{k}"
        d.mkdir()
        part = rows[k * 20:(k + 1) * 20]
        if k == 1:  # resumed shard: an earlier failed attempt for s20, and a retry of s21 that crashed
            part = [{**rows[20], "prediction": None, "failure": "timeout"}, *part,
                    {**rows[21], "prediction": None, "failure": "timeout"}]
        shards.append(write_jsonl(d / "predictions.jsonl", part, torn_tail=(k == 2)))
    out = tmp_path / "merged.jsonl"
    assert main(["merge", str(out), "--inputs", str(tmp_path / "shard-*" / "predictions.jsonl")]) == 0
    printed = capsys.readouterr().out
    assert "wrote 60" in printed and "2 duplicates dropped" in printed
    merged = [json.loads(x) for x in out.read_text().splitlines()]
    assert merged == rows  # dataset order, answers kept over failures, every field preserved
    # positional form, idempotent
    out2 = tmp_path / "merged2.jsonl"
    assert main(["merge", str(out2), str(out), str(out)]) == 0
    assert out2.read_text() == out.read_text()
    assert main(["merge", str(out), str(out)]) == 2  # refuses to overwrite an input


def test_paper_style_tables():
    from ego_adr.eval.mc import compute_mc_metrics
    from ego_adr.eval.report import render_table, table4_rows

    m1, m2 = compute_mc_metrics(make_rows(seed=1), n_boot=10), compute_mc_metrics(make_rows(seed=2), n_boot=10)
    t4 = table4_rows([("Qwen2-VL", 8, m1), ("Ours (Qwen2-VL)", "8f", m2)]).splitlines()
    assert t4[0] == "| Method | frames | Acc | Pre | Recall | F1 | C | Om | UA | WA | WOb | WOr |"
    cells = [c.strip() for c in t4[2].strip("|").split("|")]
    assert cells[:2] == ["Qwen2-VL", "8f"]
    assert cells[2] == f"{100 * m1['overall']['accuracy']:.1f}"
    assert cells[6] == f"{100 * m1['per_type_accuracy']['overall']['correct']['accuracy']:.1f}"
    folded = table4_rows([("x", None, m1)], folded=True).splitlines()
    assert folded[0] == "| Method | frames | CWA | EF | Oth |"
    t5 = render_table([{"m": "Qwen2-VL", "lvl": "Deep", **m1["overall"]}],
                      [("m", "Method", None), ("lvl", "Level", None), ("tp", "TP", "d"),
                       ("precision", "Precision", "pct"), ("recall", "Recall", "pct"), ("f1", "F1", "pct")])
    assert t5.splitlines()[2] == (f"| Qwen2-VL | Deep | {m1['overall']['tp']} | {100 * m1['overall']['precision']:.1f}"
                                  f" | {100 * m1['overall']['recall']:.1f} | {100 * m1['overall']['f1']:.1f} |")
    t6 = render_table([{"match": False, "narr": True, "precision": None}],
                      [("match", "Match", lambda v: "✓" if v else "×"), ("narr", "Narration", lambda v: "✓" if v else "×"),
                       ("precision", "Precision", "pct")])
    assert t6.splitlines()[2] == "| × | ✓ | - |"


def test_merge_open_end_rows_keep_each_question(tmp_path):
    judged = [{"sample_id": "o1", "qa_index": q, "source": "egooops", "task": "open-end", "score": 3.0,
               "judge_scores": {"qwen": 3}, "failure": None} for q in range(3)]
    crashed = {**judged[1], "score": None, "failure": "judge error"}
    a = write_jsonl(tmp_path / "a.jsonl", judged[:2])
    b = write_jsonl(tmp_path / "b.jsonl", [crashed, judged[2]])
    out = tmp_path / "m.jsonl"
    assert main(["merge", str(out), str(a), str(b)]) == 0
    assert [json.loads(x) for x in out.read_text().splitlines()] == judged


def test_write_report_accepts_note_list_and_int_frames(tmp_path):
    from ego_adr.eval.mc import compute_mc_metrics
    from ego_adr.eval.report import write_report

    rows = make_rows(n=40, seed=9)
    for r in rows:
        r["frames"] = 16
    paths = write_report(compute_mc_metrics(rows, n_boot=20), tmp_path, title="T", notes=["first", "second"])
    text = paths["report"].read_text()
    assert "first\n\nsecond" in text and "| **Overall** | 16f |" in text
    assert all(p.is_file() for p in paths.values())


def test_rows_with_unusable_labels_are_reported_not_fatal(tmp_path, capsys):
    """Rows as the runner writes them when the loader dropped a label (issue 11: metrics used to crash on every
    rerun), beside unlabelled rows and good rows: the report is written and names them."""
    good = make_rows(seed=4)[:30]
    odd = [{"sample_id": "cook/bad-label", "source": "captaincook4d", "ground_truth": [], "prediction": None,
            "failure": "data: no valid ground-truth label (close_end_answer='Wrong colour')", "raw": None},
           {"sample_id": "mine/clip1", "source": "captaincook4d", "ground_truth": [], "prediction": "Omission",
            "failure": None, "raw": "Omission"}]
    path = write_jsonl(tmp_path / "p.jsonl", good + odd)
    assert main(["score", str(path), "--out", str(tmp_path / "o"), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "excluded: 1 rows" in out and "cook/bad-label" in out and "unscored: 1 rows" in out
    m = json.loads((tmp_path / "o" / "metrics.json").read_text())
    assert m["overall"]["n"] == 30 and m["excluded"]["ids"] == ["cook/bad-label"]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "Excluded rows" in report and "mine/clip1" in report and "Lenient reading" in report


def test_merge_refuses_runs_of_different_identities_unless_allow_mixed(tmp_path, capsys):
    """Issue 18, item 3: two runs' predictions are not one run; --allow-mixed joins them and says so."""
    ident = {"model": "m", "mode": "direct", "frames": 8, "shard": "0/2"}
    folders = []
    for k, mode in enumerate(("direct", "direct", "shallow")):
        d = tmp_path / f"run-{k}"
        d.mkdir()
        write_jsonl(d / "predictions.jsonl", make_rows(n=8, seed=k, prefix=f"r{k}-"))
        (d / "identity.json").write_text(json.dumps({**ident, "mode": mode, "shard": f"{k}/2"}))
        folders.append(d / "predictions.jsonl")
    out = tmp_path / "merged" / "predictions.jsonl"
    assert main(["merge", str(out), str(folders[0]), str(folders[1])]) == 0  # shards of one run: joined
    assert "MIXED" not in capsys.readouterr().out
    assert main(["merge", str(tmp_path / "m2.jsonl"), str(folders[0]), str(folders[2])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "mode differ" in err and "--allow-mixed" in err
    assert not (tmp_path / "m2.jsonl").exists()
    assert main(["merge", str(tmp_path / "m2.jsonl"), str(folders[0]), str(folders[2]), "--allow-mixed"]) == 0
    assert "MIXED RUNS (--allow-mixed): the inputs differ in mode" in capsys.readouterr().out
    assert json.loads((tmp_path / "m2.merge.json").read_text())["mixed"] == ["mode"]
    # an output folder that holds another run is refused too (score as well)
    (out.parent / "identity.json").write_text(json.dumps({**ident, "mode": "shallow"}))
    assert main(["merge", str(out), str(folders[0]), str(folders[1])]) == 2
    assert main(["score", str(folders[0]), "--out", str(out.parent)]) == 2
    assert "holds a run of other settings" in capsys.readouterr().err
    # shards differ in their samples' digests; one shard of two runs over different data does not
    from ego_adr.eval.merge import identity_differences

    assert identity_differences([("a", {**ident, "annotations": "x"}), ("b", {**ident, "shard": "1/2",
                                                                              "annotations": "y"})]) == []
    assert identity_differences([("a", {**ident, "annotations": "x"}), ("b", {**ident, "annotations": "y"})]) == [
        "annotations"]


def test_compare_names_run_folders_and_refuses_nothing_in_common(tmp_path, capsys):
    """Issue 18, item 9: two runs' files are both predictions.jsonl; disjoint files are no comparison."""
    for d in ("direct", "shallow", "other"):
        (tmp_path / d).mkdir()
    a = write_jsonl(tmp_path / "direct" / "predictions.jsonl", make_rows(n=40, seed=1))
    b = write_jsonl(tmp_path / "shallow" / "predictions.jsonl", make_rows(n=40, seed=2))
    assert main(["compare", str(a), str(b), "--n-boot", "50"]) == 0
    out = capsys.readouterr().out
    assert "direct" in out and "shallow" in out
    c = write_jsonl(tmp_path / "other" / "predictions.jsonl", make_rows(n=10, seed=3, prefix="zz"))
    assert main(["compare", str(a), str(c)]) == 2
    assert "no scorable sample in common" in capsys.readouterr().err


def test_bad_files_are_one_line_each_and_a_cut_line_is_said_beside_n(tmp_path, capsys, caplog):
    """Issue 46, item 7: a binary file printed a warning per line before its error, a folder was "not found", and
    the cut last line of a stopped run was said once at the top but not in the summary line beside ``n``."""
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x89\xd0\x00binary\n" * 11)
    assert main(["score", str(binary), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "not a text predictions file (binary data)" in err
    assert not caplog.records and not (tmp_path / "o").exists()  # no per-line warnings, nothing written

    run = tmp_path / "run"
    run.mkdir()
    assert main(["score", str(run), "--out", str(tmp_path / "o")]) == 2
    assert "is a folder, not a predictions file; give the predictions file inside it" in capsys.readouterr().err
    pred = write_jsonl(run / "predictions.jsonl", make_rows(), torn_tail=True)
    assert main(["score", str(run), "--out", str(tmp_path / "o")]) == 2
    assert f"did you mean {pred}?" in capsys.readouterr().err

    text = tmp_path / "notes.jsonl"  # text, but no line of it a JSON row: one line that says so
    text.write_text("first\nsecond\nthird\n")
    assert main(["score", str(text), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "holds no prediction rows (3 lines skipped, not JSON rows: line 1, 2, 3)" in err

    assert main(["score", str(pred), "--out", str(tmp_path / "o"), "--n-boot", "50"]) == 0
    out, err = capsys.readouterr()
    cut = "1 line skipped: line 121 (the last, cut short: a run stopped mid-write?)"
    assert err.count(cut) == 1 and not caplog.records  # said once at the top ...
    assert f"n 120 ({cut})" in out  # ... and again beside n


def test_fresh_removes_what_score_wrote_before_scoring_again(tmp_path, capsys, caplog):
    """Issue 46, item 1: ``eval score --fresh``. An open-ended file scored into a folder where a multiple-choice
    one was scored would leave that file's plots beside the new metrics; --fresh removes them first."""
    import logging

    out = tmp_path / "o"
    mc = write_jsonl(tmp_path / "predictions.jsonl", make_rows(40))
    assert main(["score", str(mc), "--out", str(out), "--n-boot", "50"]) == 0
    (out / "notes.txt").write_text("mine")
    judged = [{"sample_id": "o1", "qa_index": 0, "source": "egooops", "task": "open-end", "score": 3.0,
               "judge_scores": {"qwen": 3.0, "deepseek": 3.0}, "failure": None}]
    oe = write_jsonl(tmp_path / "judgements.jsonl", judged)
    with caplog.at_level(logging.WARNING, logger="ego_adr.folders"):
        assert main(["score", str(oe), "--out", str(out), "--fresh"]) == 0
    assert "--fresh: removed metrics.json, report.md, confusion_matrix.png, per_type_accuracy.png" in caplog.text
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "notes.txt", "report.md"]
    assert "avg_sim" in json.loads((out / "metrics.json").read_text())
