"""One procedure text per task, condensed from the annotated steps and their order (paper Appendix A).

Why two ways: the paper "summarized the annotated steps and their order for each task and condensed existing
descriptions into a concise textual form"; we ask the build's LLM to do that (:data:`BUILD_PROCEDURE`) and fall
back to a rule (the ordered steps joined as sentences) when its reply is unusable (empty, cut off, or leaving out
most steps) -- the random tiny model's always is. Given texts (``--procedures FILE``, e.g. the release's
``procedure.json``) are kept as they are. Each task gets one ``task_id`` and one text: the ``procedure.json``
format.

Order of the steps in a task: by ``step_id`` when every step of the task has a numeric one, else by the mean
position of the step within its recordings (start time over the recording's last end time); steps without a
window (omissions) take the position of the same step elsewhere, else go last.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from statistics import mean

from ego_adr.data.build_input import Row
from ego_adr.models.base import Message, Request
from ego_adr.reasoning.prompts import BUILD_PROCEDURE

_WORD = re.compile(r"[a-z]{4,}")


@dataclass
class Procedure:
    task_id: str
    text: str
    method: str  # given | llm | rule
    steps: list[str]
    reason: str | None = None  # why the rule was used

    def to_dict(self) -> dict:
        return asdict(self)


def ordered_steps(rows: list[Row]) -> dict[str, list[str]]:
    """task -> its distinct steps (first spelling kept, compared case-insensitively) in procedure order."""
    by_task: dict[str, list[Row]] = {}
    for r in rows:
        by_task.setdefault(r.task, []).append(r)
    out = {}
    for task, rs in by_task.items():
        last = {}
        for r in rs:
            if r.end is not None:
                last[r.recording] = max(last.get(r.recording, 0.0), r.end)
        spelling: dict[str, str] = {}
        ids: dict[str, list[float]] = {}
        pos: dict[str, list[float]] = {}
        for r in rs:
            key = r.step.strip().lower()
            spelling.setdefault(key, r.step.strip())
            try:
                ids.setdefault(key, []).append(float(r.step_id)) if r.step_id is not None else None
            except ValueError:
                pass
            if r.start is not None and last.get(r.recording):
                pos.setdefault(key, []).append(r.start / last[r.recording])
        if all(k in ids for k in spelling):
            order = sorted(spelling, key=lambda k: (mean(ids[k]), k))
        else:
            order = sorted(spelling, key=lambda k: (mean(pos[k]) if k in pos else 2.0, k))
        out[task] = [spelling[k] for k in order]
    return out


def rule_text(steps: list[str]) -> str:
    """``First, a. Then, b. Finally, c.``: the steps as sentences, in order."""

    def clause(s: str) -> str:
        s = s.strip().rstrip(".;,")
        return s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s

    if len(steps) == 1:
        return steps[0].strip().rstrip(".") + "."
    parts = [f"First, {clause(steps[0])}."]
    parts += [f"Then, {clause(s)}." for s in steps[1:-1]]
    parts.append(f"Finally, {clause(steps[-1])}.")
    return " ".join(parts)


def usable(reply: str | None, steps: list[str]) -> str | None:
    """Why an LLM reply cannot be the procedure (None: it can): empty, too long, or most steps left out."""
    if not reply or len(reply.strip()) < 20:
        return "empty reply"
    low = reply.lower()
    covered = 0
    for s in steps:
        words = set(_WORD.findall(s.lower()))
        if not words or sum(w in low for w in words) * 2 >= len(words):
            covered += 1
    if covered * 2 < len(steps):
        return f"the reply names only {covered} of {len(steps)} steps"
    return None


def request(task: str, steps: list[str], config) -> Request:
    numbered = "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1))
    text = BUILD_PROCEDURE.render(task=task, steps=numbered)
    return Request([Message.user(text)], config=config, meta=BUILD_PROCEDURE.meta("build_procedure"))


def condense(rows: list[Row], model, config, given: dict[str, str] | None = None) -> tuple[dict, list[str]]:
    """task -> :class:`Procedure`, and the tasks whose LLM call failed for infrastructure reasons (no text is
    made up for them: the build stops and a rerun asks again)."""
    given = given or {}
    steps = ordered_steps(rows)
    out: dict[str, Procedure] = {
        t: Procedure(t, given[t], "given", s) for t, s in steps.items() if t in given
    }
    todo = [t for t in steps if t not in out]
    if not todo:
        return out, []
    if model is None:
        return {
            **out,
            **{t: Procedure(t, rule_text(steps[t]), "rule", steps[t], "no model") for t in todo},
        }, []
    gens = model.generate([request(t, steps[t], config) for t in todo])
    outage = []
    for t, g in zip(todo, gens, strict=True):
        if g.retryable:
            outage.append(t)
            continue
        why = g.error or usable(g.text, steps[t])
        text = (g.text or "").strip()
        out[t] = (
            Procedure(t, text, "llm", steps[t])
            if why is None
            else Procedure(t, rule_text(steps[t]), "rule", steps[t], why)
        )
    return out, outage
