"""The text the EgoErrorVQA agents exchange, and the A2A plumbing both agents share.

Why one module: the white agent must read exactly what the public evaluator (green agent, a2a-sdk 0.3.21 client)
writes, and our green agent must write exactly that too, so a white agent tested against one passes against the
other (paper Section 1 and Appendix B: any white agent that accepts the message format can be evaluated).

Wire format of one question (one text part of a JSON-RPC ``message/send``)::

    <video_path>P</video_path>
                                            <question>Q</question>
                                            <start_ts>S</start_ts>
                                            <end_ts>E</end_ts>

The tags are separated by a newline and a run of spaces. ``S``/``E`` are seconds; ``-1``/``-1.0``/empty mean
the whole video. Multiple choice: ``Q`` = error-type guidance, ``Task Procedure: ...``, ``Current Step: "..."``
(``"None"`` when the source has no action text). Open-ended: ``Q`` = ``Task Procedure: ...`` + blank line +
``Question: ...``. The answer comes back as a Message whose first text part is the answer (for multiple choice
exactly one option string of :data:`ego_adr.taxonomy.OPTIONS`).

An evaluation task for the green agent is ``<white_agent_url>URL</white_agent_url>`` and
``<eval_config>{json}</eval_config>``.

a2a-sdk 1.3 serves 1.0 and 0.3 clients on one port when the card lists a second JSONRPC interface with
``protocol_version="0.3"`` and the routes are built with ``enable_v0_3_compat=True`` (docs/stack-notes.md, a2a-sdk).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from ego_adr.taxonomy import OPTIONS, TAXONOMY

MULTIPLE_CHOICE = "multiple-choice"
OPEN_END = "open-end"
# The public evaluator's layout: tags separated by a newline and the indentation of its f-string.
TAG_SEPARATOR = "\n" + " " * 44
WHOLE_VIDEO = -1.0  # what the public data writes for "no segment"

_TAG = re.compile(r"<(?P<name>[A-Za-z_][\w-]*)>(?P<body>.*?)</(?P=name)>", re.DOTALL)
_PROCEDURE = re.compile(r"Task Procedure:\s*", re.IGNORECASE)
_STEP = re.compile(r"Current Step:\s*", re.IGNORECASE)
_QUESTION = re.compile(r"(?:^|\n)\s*Question:\s*", re.IGNORECASE)
_NONE_STEPS = {"", "none", "null", "nan"}


class ProtocolError(ValueError):
    """A message that does not follow the wire format; the reply is a JSON-RPC "invalid params" error."""


# ---------------------------------------------------------------------------------------------- formats
def parse_tags(text: str) -> dict[str, str]:
    """``{tag: body}`` of every ``<tag>body</tag>`` (first occurrence wins; bodies are not stripped)."""
    out: dict[str, str] = {}
    for m in _TAG.finditer(text or ""):
        out.setdefault(m.group("name"), m.group("body"))
    return out


def format_tags(pairs: list[tuple[str, str]]) -> str:
    return TAG_SEPARATOR.join(f"<{k}>{v}</{k}>" for k, v in pairs)


def parse_time(value: str | None, name: str) -> float | None:
    """Seconds, or ``None`` for the whole video (missing, empty, ``None``, negative, as in the public data)."""
    if value is None:
        return None
    v = value.strip()
    if v.lower() in ("", "none", "null", "nan"):
        return None
    try:
        t = float(v)
    except ValueError:
        raise ProtocolError(f"<{name}> must be a number of seconds (or -1 for the whole video), got {v[:40]!r}") from None
    if not math.isfinite(t) or t < 0:
        return None
    return t


@dataclass
class WhiteQuery:
    """One parsed question for the white agent."""

    kind: str  # multiple-choice | open-end
    video_path: str
    start: float | None
    end: float | None
    procedure: str
    step: str | None  # multiple choice: the action text, None when the message says "None"
    question: str | None  # open-ended: the question itself
    text: str  # the whole message text (hashed into the sample id)


def parse_white_message(text: str) -> WhiteQuery:
    """Read a question in the public format; raise :class:`ProtocolError` saying what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise ProtocolError("empty message: expected one text part with <video_path> and <question> tags")
    tags = parse_tags(text)
    missing = [t for t in ("video_path", "question") if t not in tags]
    if missing:
        raise ProtocolError(f"missing tag(s) {', '.join('<' + t + '>' for t in missing)}; expected "
                            "<video_path>P</video_path> <question>Q</question> <start_ts>S</start_ts> <end_ts>E</end_ts>")
    path = tags["video_path"].strip()
    if not path:
        raise ProtocolError("<video_path> is empty")
    if "\x00" in path:
        raise ProtocolError("<video_path> contains a NUL byte")
    start = parse_time(tags.get("start_ts"), "start_ts")
    end = parse_time(tags.get("end_ts"), "end_ts")
    q = tags["question"]
    steps = list(_STEP.finditer(q))
    if steps:  # multiple choice: guidance, "Task Procedure: ...", "Current Step: "..."" (the last one counts)
        st = steps[-1]
        procs = [m for m in _PROCEDURE.finditer(q) if m.end() <= st.start()]
        if not procs:
            raise ProtocolError("multiple-choice question without 'Task Procedure:' before 'Current Step:'")
        procedure = q[procs[-1].end():st.start()].strip()
        step = q[st.end():].strip().splitlines()[0].strip() if q[st.end():].strip() else ""
        step = _unquote(step)
        return WhiteQuery(MULTIPLE_CHOICE, path, start, end, procedure,
                          None if step.strip().lower() in _NONE_STEPS else step, None, text)
    procs = list(_PROCEDURE.finditer(q))
    qs = list(_QUESTION.finditer(q))
    if qs:
        qm = qs[-1]
        question = q[qm.end():].strip()
        procedure = q[procs[0].end():qm.start()].strip() if procs and procs[0].end() <= qm.start() else ""
        if not question:
            raise ProtocolError("open-ended message with an empty 'Question:'")
        return WhiteQuery(OPEN_END, path, start, end, procedure, None, question, text)
    raise ProtocolError("cannot tell the task: a multiple-choice <question> has 'Current Step: \"...\"', an "
                        "open-ended one has 'Question: ...'")


def _unquote(s: str) -> str:
    s = s.strip()
    for a, b in (('"', '"'), ("“", "”"), ("'", "'")):
        if len(s) >= 2 and s.startswith(a) and s.endswith(b):
            return s[1:-1].strip()
    return s


def mc_guidance() -> str:
    """Our statement of the multiple-choice instructions: the eight error types with the project's own
    definitions (:mod:`ego_adr.taxonomy`, from paper Appendix D) and the rule to answer with one option."""
    lines = ["You are checking one step of a procedural task in an egocentric video.",
             "Decide whether the current step contains a procedural error, given the full task procedure.", "",
             "Error types:"]
    for i, t in enumerate(t for t in TAXONOMY if t.option != "correct"):
        lines.append(f"{i + 1}. {t.option}: {t.definition}")
    lines += ["", "Answer with exactly one of: " + ", ".join(OPTIONS) + ".",
              "If the step is carried out correctly, answer: correct"]
    return "\n".join(lines)


def mc_question(procedure: str, step: str | None) -> str:
    return f"{mc_guidance()}\n\nTask Procedure: {procedure}\n\nCurrent Step: \"{step or 'None'}\"\n\n"


def open_question(procedure: str, question: str) -> str:
    return f"Task Procedure: {procedure}\n\nQuestion: {question}"


def _ts(t: float | None) -> str:
    return str(float(WHOLE_VIDEO if t is None else t))


def white_message(video_path: str, question: str, start: float | None, end: float | None) -> str:
    """A question in the public wire format (``None`` times are written as ``-1.0``, as the public data does)."""
    return format_tags([("video_path", str(video_path)), ("question", question), ("start_ts", _ts(start)),
                        ("end_ts", _ts(end))])


def parse_green_message(text: str) -> tuple[str, dict]:
    """``(white_agent_url, eval_config)`` of an evaluation task; :class:`ProtocolError` when malformed."""
    tags = parse_tags(text or "")
    if "white_agent_url" not in tags or "eval_config" not in tags:
        raise ProtocolError("expected <white_agent_url>URL</white_agent_url> and <eval_config>{json}</eval_config>")
    url = tags["white_agent_url"].strip()
    if not re.match(r"^https?://[^\s/]+", url):
        raise ProtocolError(f"<white_agent_url> must be an http(s) URL, got {url[:80]!r}")
    try:
        cfg = json.loads(tags["eval_config"])
    except json.JSONDecodeError as e:
        raise ProtocolError(f"<eval_config> is not valid JSON: {e}") from None
    if not isinstance(cfg, dict):
        raise ProtocolError("<eval_config> must be a JSON object")
    return url, cfg


def green_message(white_url: str, config: dict) -> str:
    return format_tags([("white_agent_url", white_url), ("eval_config", json.dumps(config))])
