"""The stream timeline (PNG and HTML) as a person reads it: legend, labelled segments, the step with no
segment marked where expected, the localised step only where a step was reached (fallbacks apart), end alerts
in their own band at any recording length, P(error) with axis values and the end check, a readable title."""

import pytest

from ego_adr.stream.timeline import write_png
from ego_adr.stream.timeline_html import write_html

STEPS = ["Fill the kettle", "Boil the water", "Put a tea bag in the cup", "Pour the water", "Stir the tea"]


def _result(duration: float) -> dict:
    """A recording's result in the shape stream_recording returns: ticks with their evidence, alerts, end."""
    ticks = []
    plan = [(0, "tfidf"), (0, "tfidf"), (1, "tfidf"), (3, "difflib"), (3, "tfidf"), (4, "tfidf"), (1, "difflib")]
    for k, (j, method) in enumerate(plan):
        t = duration * (k + 1) / (len(plan) + 1)
        ticks.append({"t": t, "window": [max(0, t - 8), t], "prob": 0.1 * k, "error_type": None, "step_index": None,
                      "evidence": {"narration": "n", "match": {"index": j, "score": 0.4, "method": method}}})
    alerts = [{"t": ticks[4]["t"], "step_index": 3, "step": STEPS[3], "error_type": "Wrong order", "prob": 0.7,
               "evidence": {"progress": "step 4 before unseen step(s) [3]"}, "kind": "window"}]
    alerts += [{"t": duration, "step_index": i, "step": STEPS[i], "error_type": "Omission", "prob": 0.7,
                "evidence": {"reason": f"step {i + 1} never seen"}, "kind": "end"} for i in (2, 3, 4)]
    return {"video": "/x/rec_01.mp4", "task_id": "tea", "duration": duration, "ticks": ticks, "alerts": alerts,
            "end": {"t": duration, "prob": 0.7, "error_type": "Omission", "step_index": 2}, "rtf": 0.5,
            "monitor": {"monitor": "egoadr", "route": "shallow", "threshold": 0.5},
            "settings": {"window": 8.0, "stride": 4.0, "frames": 8}}


def _segments(duration: float) -> list[dict]:
    f = duration / 30
    return [{"start": 1 * f, "end": 5 * f, "labels": ["correct"], "step_index": 0},
            {"start": 6 * f, "end": 10 * f, "labels": ["correct"], "step_index": 1},
            {"start": 16 * f, "end": 22 * f, "labels": ["Wrong object"], "step_index": 3},
            {"start": 23 * f, "end": 28 * f, "labels": ["correct"], "step_index": 4}]


def _rgb(hex_colour: str) -> tuple[float, ...]:
    return tuple(int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))


def test_timeline_png_draws_each_alert_where_it_belongs(tmp_path):
    """Pixels of the PNG: at each alert's place -- its time (the end band's middle for the end check) on its
    step's row -- the marker's fill is the colour of its error type; where no alert is, that colour is not."""
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt
    import numpy as np

    from ego_adr.stream.timeline import DPI, timeline_figure
    from ego_adr.stream.timeline_data import colour, end_band

    result, segs = _result(30.0), _segments(30.0)
    p = write_png(result, STEPS, tmp_path / "t.png", segs, 0.5, end_labels=["Omission"])
    img = mpimg.imread(p)
    assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig, ax = timeline_figure(result, STEPS, segs, 0.5, end_labels=["Omission"])  # the same layout
    scale = DPI / fig.dpi
    assert img.shape[:2] == (round(fig.get_figheight() * DPI), round(fig.get_figwidth() * DPI))

    def pixel(x: float, y: float) -> np.ndarray:
        px, py = ax.transData.transform((x, y)) * scale
        r, c = int(round(img.shape[0] - py)), int(round(px))
        return np.median(img[r - 1:r + 2, c - 1:c + 2, :3].reshape(-1, 3), axis=0)

    band = end_band(result["duration"])
    for a in result["alerts"]:
        x = (band[0] + band[1]) / 2 if a["kind"] == "end" else a["t"]
        assert np.abs(pixel(x, a["step_index"]) - _rgb(colour(a["error_type"]))).max() < 0.02, a
    wrong_order = _rgb(colour("Wrong order"))
    t = result["alerts"][0]["t"]
    for row in (0, 1, 2, 4):  # the Wrong order alert is on row 3 only
        assert np.abs(pixel(t, row) - wrong_order).max() > 0.1
    assert np.abs(pixel((band[0] + band[1]) / 2, 1) - _rgb(colour("Omission"))).max() > 0.1  # no end alert on 1
    plt.close(fig)


@pytest.mark.slow
@pytest.mark.parametrize("duration", [30.0, 1800.0])
def test_timeline_html_reads_without_the_docs(browser, tmp_path, duration):
    path = write_html(_result(duration), STEPS, tmp_path / "t.html", _segments(duration), 0.5,
                      end_labels=["Omission"])
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.goto(path.as_uri())
    title = page.title()
    assert "rec_01.mp4" in title and "window 8.0 s" in title and "shallow" in title and "{" not in title
    legend = page.inner_text(".legend")
    for s in ("annotated: Wrong object", "annotated: correct", "omitted (annotated Omission)", "localised step",
              "weak match (difflib"):
        assert s in legend
    assert [t.text_content() for t in page.query_selector_all("g.segment text")] == ["C", "C", "WOb", "C"]
    omitted = page.query_selector_all("g.omitted")
    assert len(omitted) == 1 and "step 3" in omitted[0].inner_html()
    assert len(page.query_selector_all("circle.reached")) == 5 and len(page.query_selector_all("circle.fallback")) == 2
    # end alerts: right of the last tick, in the end band, one per row, never on top of each other
    last_tick = max(b["x"] for b in (c.bounding_box() for c in page.query_selector_all("circle.reached")))
    ends = [g.bounding_box() for g in page.query_selector_all("g.alert.end")]
    assert len(ends) == 3 and all(b["x"] > last_tick + 10 for b in ends)
    ys = sorted(b["y"] for b in ends)
    assert all(b - a > 12 for a, b in zip(ys, ys[1:]))
    assert len(page.query_selector_all("g.alert.window")) == 1
    labels = [t.text_content() for t in page.query_selector_all("svg text")]
    for v in ("0", "0.5", "1", "threshold 0.5", "end check 0.70"):
        assert v in labels
    assert len(page.query_selector_all("#alerts tr")) == 5 and errors == []
    page.close()


def test_timeline_html_writes_evidence_rtf_and_long_labels_for_a_reader(tmp_path):
    """Issue 38 point 12: the alerts table reads as sentences (no Python dict), the real-time factor has two
    decimals, and a step label too long for its column ends in an ellipsis with the whole label as tooltip."""
    import html
    import re

    long_step = "Take the tea bag out of the cup and put it on the saucer beside the spoon"
    res = _result(30.0)
    res["rtf"] = 0.170268
    res["alerts"][0]["evidence"] = {"narration": "I pour water", "match": {"index": 3, "score": 0.4213,
                                                                         "method": "tfidf"},
                                    "classifier": [{"anomaly": ["spill"], "other": []}],
                                    "progress": "step 4 before unseen step(s) [3]"}
    text = write_html(res, [*STEPS[:4], long_step], tmp_path / "t.html", _segments(30.0), 0.5).read_text()
    table = html.unescape(re.search(r"<table class='metrics' id='alerts'>(.*?)</table>", text, re.S).group(1))
    cells = re.findall(r"<td>(.*?)</td>", table)
    assert "{" not in table and "'reason'" not in table
    assert ("step 4 before unseen step(s) [3]; classifier: spill; matched step 4 (tfidf, score 0.42); "
            "narration: \u201cI pour water\u201d") in cells
    assert "step 5 never seen" in cells
    assert "real-time factor 0.17 (processing time / recording time)" in text and "0.170268" not in text
    label = re.search(r"<title>" + re.escape(long_step) + r"</title>5\. (.*?)</text>", text).group(1)
    assert label.endswith("\u2026") and long_step.startswith(label[:-1]) and len(label) <= 46
