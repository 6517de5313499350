"""Reading episode files so that a user mistake is one line, never a traceback (issue 11).

A missing, unreadable, corrupt or empty episodes file raises :class:`EpisodesFileError` with a message that says
what is wrong and what to do; the CLI prints it and exits 2. ``validate`` and ``evaluate`` use the same reader, so
``evaluate`` refuses exactly the files ``validate`` rejects.
"""

from __future__ import annotations

import json
from pathlib import Path

REQUIRED = ("id", "task", "initial_scene", "observed", "labels", "errors", "correct", "complexity",
            "primary_category", "first_onset", "categories", "reference", "goal")
HINT = "create episodes with `python -m ego_adr.helpmeout generate --episodes N --out DIR`"


class EpisodesFileError(ValueError):
    """A bad episodes file (the user's to fix): the message is one line."""


def load_episodes(path: str | Path) -> list[dict]:
    p = Path(path)
    if not p.exists():
        raise EpisodesFileError(f"episodes file {p} not found; {HINT}")
    if not p.is_file():
        raise EpisodesFileError(f"{p} is not a file; pass an episodes .jsonl file ({HINT})")
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise EpisodesFileError(f"cannot read {p} ({type(e).__name__}); pass a readable episodes .jsonl") from None
    rows = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise EpisodesFileError(f"{p} line {n} is not JSON ({e.msg}); the file is corrupt: regenerate it "
                                    f"({HINT})") from None
        if not isinstance(row, dict):
            raise EpisodesFileError(f"{p} line {n} is not a JSON object; is this an episodes file? ({HINT})")
        missing = [k for k in REQUIRED if k not in row]
        if missing:
            raise EpisodesFileError(f"{p} line {n} lacks {', '.join(missing)}; is this an episodes file? ({HINT})")
        rows.append(row)
    if not rows:
        raise EpisodesFileError(f"{p} holds no episodes; {HINT}")
    return rows


def invalid_episodes(episodes: list[dict]) -> list[tuple[str, list[str]]]:
    """(id, problems) of every episode that fails replay validation."""
    from ego_adr.helpmeout.generator.episodes import validate_episode

    out = []
    for ep in episodes:
        try:
            problems = validate_episode(ep)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            problems = [f"malformed episode ({type(e).__name__}: {e})"]
        if problems:
            out.append((str(ep.get("id")), problems))
    return out
