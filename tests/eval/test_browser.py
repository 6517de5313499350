"""report.html in a real browser (Debian's chromium via Playwright): it loads with no console error, the
filters change the counts, a confusion-matrix cell shows its samples, the flipped filter finds a planted flip,
and the thumbnails are the recorded frames (pixels compared with frames decoded here by PyAV)."""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from ego_adr.eval.__main__ import main as eval_main
from ego_adr.eval.browser import write_report_html
from ego_adr.eval.scoring import SCORED, score_row, screen
from ego_adr.eval.thumbs import resize
from ego_adr.store import read_jsonl

pytestmark = pytest.mark.slow  # a chromium start and a demo run


def _rows(d: Path) -> list[dict]:
    return list(read_jsonl(d / "predictions.jsonl"))


def open_page(browser, path: Path):
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    errors: list[str] = []
    page.on(
        "console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.on(
        "request",
        lambda r: errors.append(f"request: {r.url}") if not r.url.startswith(("file:", "data:")) else None,
    )
    page.goto(path.resolve().as_uri())
    page.wait_for_selector("#count")
    return page, errors


def shown(page) -> tuple[int, set[str]]:
    n = int(page.get_attribute("#count", "data-n"))
    return n, {c.get_attribute("data-key") for c in page.query_selector_all(".card")}


def pick(page, sel: str, value: str) -> None:
    page.select_option(sel, value)
    page.wait_for_timeout(50)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, demo_root):
    """Run A: a real demo run (the scripted model double, so no model weights); run B: A with one planted flip
    (one scored sample's answer changed so that it is right in one run and wrong in the other), rescored."""
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.run.config import RunConfig
    from ego_adr.run.runner import execute

    base = tmp_path_factory.mktemp("browser")
    a = base / "A"
    execute(
        RunConfig(output_dir=str(a), mode="shallow", limit=8), progress=False, model=ScriptedModelDouble()
    )
    b = base / "B"
    shutil.copytree(a, b)
    (b / "report.html").unlink()
    rows = _rows(b)
    k, row = next((k, r) for k, r in enumerate(rows) if screen(r)[0] == SCORED)
    s = score_row(row)
    wrong = "Wrong order" if "Wrong order" not in s["gt"] and "correct" in s["gt"] else "correct"
    rows[k] = {**row, "answer": wrong if s["hit"] else s["gt"][0]}
    (b / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert eval_main(["score", str(b / "predictions.jsonl"), "--out", str(b), "--n-boot", "10"]) == 0
    assert score_row(rows[k])["hit"] != s["hit"]
    return a, b, row["sample_id"]


def test_every_run_writes_a_self_contained_report_html_that_loads_clean(browser, runs):
    a, _, _ = runs
    path = a / "report.html"
    text = path.read_text()
    assert not re.search(r'(?:src|href)="(?!data:|#)', text), "the page must reference no outside file"
    page, errors = open_page(browser, path)
    n, keys = shown(page)
    assert errors == [] and n == 8 and keys == {r["sample_id"] for r in _rows(a)}
    assert page.is_visible("#report-list table.metrics")  # report.md's tables, rendered
    plots = page.query_selector_all("#report-list img.plot")
    assert len(plots) == 2 and all(p.evaluate("i => i.complete && i.naturalWidth > 100") for p in plots)
    card = page.query_selector(".card")
    for field in (
        "procedure step",
        "matched step",
        "narration",
        "raw reply",
        "answer",
        "extraction",
        "route",
        "timings (s)",
    ):
        assert card.query_selector(f"dt:text-is('{field}')"), field
    page.close()


def test_filters_and_search_change_the_counts(browser, runs):
    a, _, _ = runs
    rows = _rows(a)
    verdicts: dict[str, int] = {}
    for r in rows:
        v = score_row(r)["cell"] if screen(r)[0] == SCORED else None
        key = v.upper() if v else "no answer"
        verdicts[key] = verdicts.get(key, 0) + 1
    page, errors = open_page(browser, a / "report.html")
    for v, n in verdicts.items():
        assert page.inner_text(f"#f-verdict option[value='{v}']") == f"{v} ({n})"
        pick(page, "#f-verdict", v)
        got, keys = shown(page)
        assert got == n == len(keys)
        assert all(page.inner_text(f".card[data-key='{k}'] .badge.{v.replace(' ', '_')}") == v for k in keys)
    pick(page, "#f-verdict", "")
    assert shown(page)[0] == len(rows)
    target = rows[3]["sample_id"]
    page.fill("#f-search", target.upper())
    page.wait_for_timeout(50)
    assert shown(page) == (1, {target})
    other = next(v for v in verdicts if v != (score_row(rows[3])["cell"] or "no answer").upper())
    pick(page, "#f-verdict", other)
    assert shown(page)[0] == 0 and page.inner_text("#f-source option[value='demo']") == "demo (0)"
    page.fill("#f-search", "")
    pick(page, "#f-verdict", "")
    pick(page, "#f-route", "shallow")
    assert shown(page)[0] == len(rows)
    assert errors == []
    page.close()


def test_a_confusion_matrix_cell_shows_exactly_its_samples(browser, runs):
    a, _, _ = runs
    outs = [score_row(r) for r in _rows(a) if screen(r)[0] == SCORED]
    cells: dict[tuple, set] = {}
    for o in outs:
        cells.setdefault((o["cm_row"], o["cm_col"]), set()).add(o["sample_id"])
    (row, col), want = min(cells.items(), key=lambda kv: len(kv[1]))
    page, errors = open_page(browser, a / "report.html")
    page.click(f"#cm td.cell[data-row='{row}'][data-col='{col}']")
    assert page.inner_text(f"#cm td.cell[data-row='{row}'][data-col='{col}']") == str(len(want))
    assert shown(page) == (len(want), want)
    assert f"GT {row}" in page.inner_text("#cm-filter")
    page.click("#cm-filter button")
    assert shown(page)[0] == len(outs) and errors == []
    page.close()


def test_eval_view_of_two_runs_finds_the_planted_flip(browser, runs, tmp_path, capsys):
    a, b, planted = runs
    out = tmp_path / "ab.html"
    assert eval_main(["view", str(a), str(b), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    page, errors = open_page(browser, out)
    assert shown(page)[0] == 8 and page.is_visible("#f-run")
    assert len(page.query_selector_all(".card[data-key] .col")) == 16  # side by side: A and B per sample
    page.check("#f-flipped")
    page.wait_for_timeout(50)
    assert shown(page) == (1, {planted})
    assert page.inner_text(f".card[data-key='{planted}'] .badge.flip") == "flipped"
    assert errors == []
    page.close()


@functools.lru_cache(maxsize=4)
def _decoded(path: str) -> list[np.ndarray]:
    """Every frame of ``path`` decoded in order by PyAV -- independently of the project's readers."""
    import av

    with av.open(path) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


def _thumb_pixels(page, first: int | None = None) -> list[dict]:
    """Every thumbnail of the page in order; the pixels of the ``first`` ones only (all when None): a page's
    hundreds of thumbnails as JSON arrays of numbers took most of a test's half minute (issue 46 item 12)."""
    page.wait_for_function("[...document.querySelectorAll('.thumbs img')].every(i => i.complete)")
    return page.evaluate("""(first) => [...document.querySelectorAll('.card')].flatMap(card =>
      [...card.querySelectorAll('.thumbs img')]).map((img, n) => {
        const c = document.createElement('canvas'); c.width = img.naturalWidth; c.height = img.naturalHeight;
        const x = c.getContext('2d'); x.drawImage(img, 0, 0);
        const px = first === null || n < first ? Array.from(x.getImageData(0, 0, c.width, c.height).data) : null;
        return {card: img.closest('.card').dataset.key, key: img.dataset.frame, w: c.width, h: c.height, px};
      })""", first)


def _check_thumbs(thumbs: list[dict], rows: dict[str, dict], neighbours: bool = True) -> int:
    """Each thumbnail is its recorded frame (JPEG-close), and -- where neighbouring frames differ, as in videos
    whose frames carry their index -- closer to it than to the frames either side."""
    checked = 0
    for t in thumbs:
        fi = rows[t["card"]]["frames_info"]
        path, idx = t["key"].rsplit("#", 1)
        assert path == fi["path"] and int(idx) in fi["indices"]
        frames = _decoded(path)
        i = int(idx)
        got = np.array(t["px"], dtype=np.float32).reshape(t["h"], t["w"], 4)[..., :3]
        diff = {
            j: float(np.abs(got - resize(frames[j], t["w"]).astype(np.float32)).mean())
            for j in (i - 1, i, i + 1)
            if 0 <= j < len(frames)
        }
        assert diff[i] < 6, (t["key"], diff)
        assert not neighbours or all(diff[i] < d for j, d in diff.items() if j != i), (t["key"], diff)
        checked += 1
    return checked


def test_thumbnails_are_the_frames_the_model_received(browser, runs, tmp_path):
    a, _, _ = runs
    page, errors = open_page(browser, a / "report.html")
    rows = {r["sample_id"]: r for r in _rows(a)}
    thumbs = _thumb_pixels(page, first=16)
    assert len(thumbs) == sum(len(r["frames_info"]["indices"]) for r in rows.values())
    assert (
        _check_thumbs(thumbs[:16], rows, neighbours=False) == 16 and errors == []
    )  # demo frames: slow scenes
    page.close()


def test_thumbnails_follow_the_recorded_indices_and_decoder(browser, tmp_path):
    """Frames that carry their own index: a thumbnail of any other frame than the recorded one fails."""
    from ego_adr.video.synth import make_test_video

    video = str(make_test_video(tmp_path / "v.mp4", 5, fps=8, size=(160, 120)))
    run = tmp_path / "run"
    run.mkdir()
    rows = []
    for n, (backend, idx) in enumerate((("pyav", [2, 9, 17, 30]), ("opencv", [5, 6, 33, 39]))):
        rows.append(
            {
                "sample_id": f"s{n}",
                "source": "demo",
                "ground_truth": ["correct"],
                "answer": "correct",
                "route": "shallow",
                "frames_info": {
                    "path": video,
                    "backend": backend,
                    "indices": idx,
                    "timestamps": [i / 8 for i in idx],
                },
            }
        )
    rows.append(
        {
            "sample_id": "s2",
            "source": "demo",
            "ground_truth": ["Omission"],
            "answer": None,
            "failure": "video: file not found",
            "failure_kind": "sample",
            "frames_info": {"path": str(tmp_path / "gone.mp4"), "backend": "pyav", "indices": [1]},
        }
    )
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = write_report_html([run], tmp_path / "r.html")
    page, errors = open_page(browser, out)
    thumbs = _thumb_pixels(page)
    assert _check_thumbs(thumbs, {r["sample_id"]: r for r in rows}) == 8
    assert "video not found" in page.inner_text(".card[data-key='s2'] .thumbs .missing")
    assert page.inner_text(".card[data-key='s2'] .badge.no_answer") == "no answer" and errors == []
    page.close()


def test_an_open_ended_folder_shows_answers_and_judge_scores(browser, tmp_path):
    run = tmp_path / "oe"
    run.mkdir()
    answers = [
        {
            "task": "open-end",
            "sample_id": "x/1",
            "qa_index": q,
            "source": "demo",
            "question": f"Q{q}?",
            "reference": "ref",
            "answer": f"answer {q}",
            "timings": {"model_open_end_s": 0.5},
        }
        for q in (0, 1)
    ]
    judged = [
        {
            **r,
            "judges": {"j1": {"score": 0.25 + q / 2, "reason": "ok", "method": "json"}},
            "judge_scores": {"j1": 0.25 + q / 2},
            "score": 0.25 + q / 2,
            "failure": None,
        }
        for q, r in enumerate(answers)
    ]
    (run / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in answers))
    (run / "judgements.jsonl").write_text("".join(json.dumps(r) + "\n" for r in judged))
    page, errors = open_page(browser, write_report_html([run], tmp_path / "oe.html"))
    assert shown(page) == (2, {"x/1#q0", "x/1#q1"}) and errors == []
    assert "0.750" in page.inner_text(".card[data-key='x/1#q1']") and "Q1?" in page.inner_text(
        ".card[data-key='x/1#q1']"
    )
    assert "no confusion matrix" in page.inner_text("#cm")
    page.close()


def test_view_refuses_a_folder_that_is_no_run_in_one_line(tmp_path, capsys):
    assert eval_main(["view", str(tmp_path), "--out", str(tmp_path / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no predictions.jsonl" in err and not (tmp_path / "x.html").exists()
