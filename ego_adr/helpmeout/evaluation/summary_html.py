"""``summary.html``: the HelpMeOut summary (its tables and the Figure 3 plot) as one self-contained page in the
style of every ego_adr page (:mod:`ego_adr.eval.html_page`).

Written from the folder's ``summary.md`` and ``figure3.png`` -- what ``summarize`` already wrote -- so the page
cannot say anything the Markdown does not; the plot is inlined, so the file opens from disk with nothing else.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.eval.html_page import markdown_to_html, page

TITLE = "HelpMeOut summary"


def write_summary_html(out: str | Path) -> Path:
    """``OUT/summary.html`` from ``OUT/summary.md`` (and the images it names). Raises FileNotFoundError."""
    out = Path(out)
    md = (out / "summary.md").read_text(encoding="utf-8")
    lines = md.splitlines()
    if lines and lines[0].startswith("# "):  # the page has its own title
        lines = lines[1:]
    body = markdown_to_html("\n".join(lines), out)
    path = out / "summary.html"
    path.write_text(page(TITLE, body), encoding="utf-8")
    return path
