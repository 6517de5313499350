"""One look for every HTML page ego_adr writes (report.html, summary.html, stream timelines): the shared
stylesheet and a small Markdown-to-HTML renderer for the project's own reports.

Why our own renderer: the pages must open from disk with no server, no network and no vendored library, and
the Markdown we render is only what :mod:`ego_adr.eval.report` and the HelpMeOut summary write -- headings,
paragraphs, bullet lists, pipe tables, fenced blocks, ``**bold**``, ``*italic*``, ```code``` and images. An
image that exists next to the Markdown file is inlined as a ``data:`` URI so the page stays one file.
"""

from __future__ import annotations

import base64
import html
import re
from importlib import resources
from pathlib import Path

_INLINE = [
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*([^*]+)\*\*"), r"<b>\1</b>"),
    (re.compile(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])"), r"<i>\1</i>"),
]
_IMG = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")


def asset(name: str) -> str:
    """A file of ``ego_adr/eval/browser_assets`` (the page's CSS and JS, shipped as package data)."""
    return resources.files("ego_adr.eval").joinpath("browser_assets", name).read_text(encoding="utf-8")


def data_uri(path: Path) -> str | None:
    """``path`` as a ``data:`` URI (PNG/JPEG/SVG), ``None`` when it is not a file."""
    if not path.is_file():
        return None
    mime = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".svg": "image/svg+xml"}.get(
        path.suffix.lower(), "application/octet-stream"
    )
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def inline(text: str, base: Path | None = None) -> str:
    """One line of Markdown inline markup -> HTML (escaped first; images inlined from ``base``)."""
    out, last = [], 0
    for m in _IMG.finditer(text):
        out.append(_inline_text(text[last : m.start()]))
        src = data_uri(base / m.group(2)) if base is not None else None
        out.append(
            f'<img class="plot" alt="{html.escape(m.group(1))}" src="{src or html.escape(m.group(2))}">'
        )
        last = m.end()
    out.append(_inline_text(text[last:]))
    return "".join(out)


def _inline_text(text: str) -> str:
    s = html.escape(text, quote=False).replace("\\*", "\x00")  # an escaped star is a literal star
    for pat, rep in _INLINE:
        s = pat.sub(rep, s)
    return s.replace("\x00", "*")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(lines: list[str], base: Path | None) -> str:
    head, body = _cells(lines[0]), [_cells(x) for x in lines[2:]]
    right = [c.endswith(":") for c in _cells(lines[1])]

    def td(tag, c, k):
        cls = ' class="num"' if k < len(right) and right[k] else ""
        return f"<{tag}{cls}>{inline(c, base)}</{tag}>"

    rows = ["<tr>" + "".join(td("th", c, k) for k, c in enumerate(head)) + "</tr>"]
    rows += ["<tr>" + "".join(td("td", c, k) for k, c in enumerate(r)) + "</tr>" for r in body]
    return '<table class="metrics">' + "".join(rows) + "</table>"


def markdown_to_html(md: str, base: Path | None = None) -> str:
    """Render the project's report Markdown (see the module docstring for what is understood)."""
    lines, out, i = md.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            out.append("<pre>" + html.escape("\n".join(lines[i + 1 : j])) + "</pre>")
            i = j + 1
        elif m := re.match(r"(#{1,6})\s+(.*)", line):
            level = min(6, len(m.group(1)) + 1)  # the page has its own <h1>
            out.append(f"<h{level}>{inline(m.group(2), base)}</h{level}>")
            i += 1
        elif (
            line.lstrip().startswith("|")
            and i + 1 < len(lines)
            and re.match(r"^\s*\|[\s:|-]+\|\s*$", lines[i + 1])
        ):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            out.append(_table(lines[i:j], base))
            i = j
        elif re.match(r"\s*[-*] ", line):
            items = []
            while i < len(lines) and re.match(r"\s*[-*] ", lines[i]):
                items.append("<li>" + inline(re.sub(r"^\s*[-*] ", "", lines[i]), base) + "</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
        elif not line.strip():
            i += 1
        else:
            j = i
            while j < len(lines) and lines[j].strip() and not re.match(r"(#|\||```|\s*[-*] )", lines[j]):
                j += 1
            j = max(j, i + 1)
            out.append("<p>" + inline(" ".join(lines[i:j]), base) + "</p>")
            i = j
    return "\n".join(out)


def page(title: str, body: str, script: str = "", data_json: str | None = None, inputs: str = "") -> str:
    """A whole self-contained page: the shared stylesheet, ``body``, optional JSON data and script.
    ``inputs``: a digest of what the page was made from, kept in a ``<meta>`` so a writer can skip a rebuild."""
    data = ""
    if data_json is not None:  # '</' would end the script element early
        safe = data_json.replace("</", "<" + "\\/")
        data = f'<script type="application/json" id="data">{safe}</script>'
    js = f"<script>{script}</script>" if script else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f'<meta name="ego-adr-inputs" content="{html.escape(inputs)}">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<style>{asset('page.css')}</style></head><body><h1>{html.escape(title)}</h1>"
        f"{body}{data}{js}</body></html>"
    )
