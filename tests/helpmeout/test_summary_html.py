"""``summarize`` writes summary.html: the summary's tables and the Figure 3 plot in one page, checked in chromium."""

import re

import pytest

from ego_adr.helpmeout.cli import main

pytestmark = pytest.mark.slow  # a chromium start and two evaluations


def test_summarize_writes_a_self_contained_summary_html(browser, tmp_path, capsys):
    rel, ev = tmp_path / "release", tmp_path / "eval"
    assert main(["generate", "--episodes", "120", "--seed", "3", "--out", str(rel), "--quiet"]) == 0
    for m in ("random", "precondition", "replanner-privileged"):
        assert main(["evaluate", "--monitor", m, "--episodes", str(rel / "test.jsonl"), "--out", str(ev / m),
                     "--bootstrap", "10", "--seeds", "1", "--quiet"]) == 0
    out = tmp_path / "sum"
    assert main(["summarize", *(str(ev / m) for m in ("random", "precondition", "replanner-privileged")),
                 "--out", str(out)]) == 0
    assert "summary.html" in capsys.readouterr().out
    md = (out / "summary.md").read_text()
    text = (out / "summary.html").read_text()
    assert not re.search(r'(?:src|href)="(?!data:|#)', text)
    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((out / "summary.html").as_uri())
    n_tables = len(re.findall(r"^\|[-:|]+\|$", md, flags=re.M))
    assert len(page.query_selector_all("table.metrics")) == n_tables > 5
    fig = page.query_selector("img.plot")
    assert fig.evaluate("i => i.complete && i.naturalWidth > 300")
    t2 = page.query_selector("table.metrics").inner_text()
    assert t2.index("precondition") < t2.index("Privileged / symbolic references") < t2.index("replanner-privileged")
    assert page.title() == "HelpMeOut summary" and errors == []
    page.close()
