"""What a benchmark script prints, written into the docs pages that show it (``--write-docs``; issue 28 item 8).

A number in the docs that a script prints should come from that script, or it drifts. So a page holds each such
table between two markers named for the script and its section, and the script rewrites what lies between them:

    <!-- bench:frames -->
    (what ``python scripts/bench_frames.py`` printed last time it ran with --write-docs)
    <!-- /bench:frames -->

``--write-docs`` checks before any work that every block the script will write is held by some page of
``README.md`` and ``docs/*.md`` (else one line and exit 2: the markers are missing), runs the benchmark as
usual, then replaces each block, in every page that holds it, with exactly what the script printed for it.
Nothing else in a page changes; each page is written whole or not at all (a temporary file, then a rename).
``--write-docs DIR`` writes into the README and docs of another checkout (a scratch copy, for a smoke run).
Prose around a block must not repeat its numbers: they would not be rewritten.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


class MarkerError(ValueError):
    """A block's markers are missing, unbalanced or nested; the message names the page and the block."""


def markers(name: str) -> tuple[str, str]:
    if not _NAME.match(name):
        raise ValueError(f"block name {name!r}: lower-case letters, digits and '-' only")
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def pages(root: Path = ROOT) -> list[Path]:
    """The pages a block may live in: README.md and docs/*.md of ``root``."""
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.is_file()]


def _spans(text: str, name: str, where: str) -> list[tuple[int, int]]:
    """(start, end) of the text between each pair of ``name``'s markers, in order."""
    start, end = markers(name)
    spans, pos = [], 0
    while (i := text.find(start, pos)) >= 0:
        j = text.find(end, i)
        k = text.find(start, i + len(start))
        if j < 0 or (0 <= k < j):
            raise MarkerError(f"{where}: {start} has no {end} before the next {start}")
        spans.append((i + len(start), j))
        pos = j + len(end)
    if text.count(end) != len(spans):
        raise MarkerError(f"{where}: {end} without its {start}")
    return spans


def replace_blocks(text: str, name: str, body: str, where: str = "page") -> str:
    """``text`` with what lies between every pair of ``name``'s markers replaced by ``body`` (blank lines around
    it, so a table stays a table)."""
    out, last = [], 0
    for a, b in _spans(text, name, where):
        out += [text[last:a], "\n\n", body.strip("\n"), "\n\n"]
        last = b
    return "".join(out) + text[last:]


def holders(names: list[str], root: Path = ROOT) -> dict[str, list[Path]]:
    """Which pages hold each block; a missing block is a :class:`MarkerError` naming it."""
    found = {n: [p for p in pages(root) if _spans(p.read_text(encoding="utf-8"), n, str(p))] for n in names}
    missing = [n for n, ps in found.items() if not ps]
    if missing:
        start = " ".join(markers(missing[0]))
        raise MarkerError(f"no page of {root / 'README.md'} or {root / 'docs'}/*.md holds "
                          f"{', '.join(missing)}: put {start} around the table in the page that shows it")
    return found


def write_blocks(blocks: dict[str, str], root: Path = ROOT) -> list[str]:
    """Rewrite every page holding one of ``blocks`` (name -> printed text); returns one line per page written."""
    done = []
    by_page: dict[Path, list[str]] = {}
    for name, ps in holders(list(blocks), root).items():
        for p in ps:
            by_page.setdefault(p, []).append(name)
    for page, names in by_page.items():
        text = page.read_text(encoding="utf-8")
        for name in names:
            text = replace_blocks(text, name, blocks[name], str(page))
        tmp = page.with_name(f".{page.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, page)
        done.append(f"{page}: {', '.join(names)}")
    return done


class Printed(contextlib.AbstractContextManager):
    """Everything printed inside the ``with`` block still goes to stdout, and is kept in :attr:`text`."""

    def __init__(self) -> None:
        self._buf = io.StringIO()
        self.text = ""

    def __enter__(self) -> Printed:
        self._out = sys.stdout
        buf, out = self._buf, self._out

        class _Tee(io.TextIOBase):
            def write(self, s: str) -> int:
                buf.write(s)
                return out.write(s)

            def flush(self) -> None:
                out.flush()

        sys.stdout = _Tee()
        return self

    def __exit__(self, *exc) -> None:
        sys.stdout = self._out
        self.text = self._buf.getvalue()


def _refuse(e: MarkerError) -> None:
    print(f"error: --write-docs: {e}", file=sys.stderr)
    sys.exit(2)  # a user mistake (ego_adr.errors.EXIT_USER): the page lacks the markers


def add_flag(parser) -> None:
    parser.add_argument("--write-docs", nargs="?", const=str(ROOT), default=None, metavar="DIR",
                        help="after printing, write the tables into the docs pages that show them, between their "
                             "<!-- bench:NAME --> markers (DIR: another checkout's README.md and docs/; "
                             "scripts/docs_tables.py)")


def check(args, names: list[str]) -> None:
    """Before any work: with ``--write-docs``, every block in ``names`` has a page (else one line, exit 2)."""
    if getattr(args, "write_docs", None) is None:
        return
    try:
        holders(names, Path(args.write_docs))
    except MarkerError as e:
        _refuse(e)


def publish(args, blocks: dict[str, str]) -> None:
    """With ``--write-docs``, write ``blocks`` and say which pages changed."""
    if getattr(args, "write_docs", None) is None:
        return
    try:
        lines = write_blocks(blocks, Path(args.write_docs))
    except MarkerError as e:
        _refuse(e)
    print("\n".join(f"wrote {line}" for line in lines), file=sys.stderr)
