"""report.html's data without a browser: verdicts from the one scoring rule, open-ended rows joined with their
judgements, frames named by their recorded indices, and a resumed run that keeps an unchanged page."""

import json

from ego_adr.eval.browser import collect, write_report_html, write_run_report_html
from ego_adr.eval.scoring import score_row
from ego_adr.eval.thumbs import frame_key


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _mc_rows(video):
    fi = {"path": str(video), "backend": "pyav", "indices": [3, 4], "timestamps": [0.375, 0.5]}
    return [
        {
            "sample_id": "a",
            "source": "demo",
            "ground_truth": ["Omission"],
            "answer": "omission.",
            "route": "deep",
            "frames_info": fi,
        },
        {
            "sample_id": "b",
            "source": "demo",
            "ground_truth": ["correct"],
            "answer": "Wrong order",
            "route": "deep",
        },
        {
            "sample_id": "c",
            "source": "demo",
            "ground_truth": ["Wrong object"],
            "answer": None,
            "failure": "model: timeout",
            "failure_kind": "infrastructure",
        },
        {"sample_id": "d", "source": "demo", "ground_truth": "Not a label", "answer": "correct"},
    ]


def test_verdicts_are_the_scoring_rules_and_frames_their_recorded_indices(tmp_path):
    from ego_adr.video.synth import make_test_video

    video = make_test_video(tmp_path / "v.mp4", 2)
    run = tmp_path / "r"
    run.mkdir()
    rows = _mc_rows(video)
    _write(run / "predictions.jsonl", rows)
    data = collect([run])
    per = {s["key"]: s["per"][0] for s in data["samples"]}
    assert per["a"]["verdict"] == score_row(rows[0])["cell"].upper() == "TP" and per["a"]["hit"] is True
    assert per["b"]["verdict"] == "FP" and per["b"]["cm"] == ["correct", "Wrong order"]
    assert per["c"]["verdict"] == "no answer" and per["c"]["failure_kind"] == "infrastructure"
    assert per["d"]["verdict"] == "excluded" and "unknown ground-truth label" in per["d"]["reason"]
    assert [f["k"] for f in per["a"]["frames"]] == [frame_key(str(video), 3), frame_key(str(video), 4)]
    assert set(data["thumbs"]) == {frame_key(str(video), 3), frame_key(str(video), 4)}
    assert all(v.startswith("data:image/jpeg;base64,") for v in data["thumbs"].values())


def test_open_ended_answers_are_joined_with_their_judgements(tmp_path):
    run = tmp_path / "oe"
    run.mkdir()
    _write(
        run / "predictions.jsonl",
        [
            {
                "task": "open-end",
                "sample_id": "x",
                "qa_index": q,
                "source": "demo",
                "question": f"Q{q}",
                "answer": f"A{q}",
            }
            for q in (0, 1)
        ],
    )
    _write(
        run / "judgements.jsonl",
        [
            {
                "task": "open-end",
                "sample_id": "x",
                "qa_index": 1,
                "source": "demo",
                "score": 3.5,
                "judges": {"j": {"score": 3.5, "method": "json"}},
            }
        ],
    )
    per = {s["key"]: s["per"][0] for s in collect([run], thumb_width=0)["samples"]}
    assert per["x#q1"]["verdict"] == "judged" and per["x#q1"]["score"] == 3.5
    assert per["x#q0"]["verdict"] == "no judge score" and per["x#q0"]["answer"] == "A0"


def test_a_run_keeps_an_unchanged_page_and_rebuilds_a_changed_one(tmp_path):
    run = tmp_path / "r"
    run.mkdir()
    rows = [{"sample_id": "a", "source": "demo", "ground_truth": ["correct"], "answer": "correct"}]
    _write(run / "predictions.jsonl", rows)
    page = write_run_report_html(run)
    page.write_text(page.read_text().replace("</body>", "<!-- kept --></body>"))
    assert "<!-- kept -->" in write_run_report_html(run).read_text()
    _write(run / "predictions.jsonl", rows + [{**rows[0], "sample_id": "b"}])
    assert "<!-- kept -->" not in write_run_report_html(run).read_text()
    assert write_report_html([run], tmp_path / "v.html").is_file()


def test_view_without_out_writes_beside_the_runs_never_into_the_current_folder(tmp_path, monkeypatch, capsys):
    """Issue 46, item 11: ``eval view runs/A runs/B --out compare.html`` (the README's line) left the page in the
    checkout; without ``--out`` one run's page is its own report.html and several runs' go beside the first."""
    from ego_adr.eval.__main__ import main

    runs = tmp_path / "runs"
    for name in ("A", "B"):
        (runs / name).mkdir(parents=True)
        _write(runs / name / "predictions.jsonl", [{"sample_id": "a", "source": "demo", "ground_truth": ["correct"],
                                                    "answer": "correct"}])
    cwd = tmp_path / "checkout"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert main(["view", str(runs / "A"), str(runs / "B"), "--thumb-width", "0"]) == 0
    assert f"wrote {runs / 'compare-A-B.html'}" in capsys.readouterr().out
    assert main(["view", str(runs / "A"), "--thumb-width", "0"]) == 0
    assert (runs / "A" / "report.html").is_file() and list(cwd.iterdir()) == []
