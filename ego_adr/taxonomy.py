"""The EgoErrorVQA error taxonomy: eight error types plus ``correct``.

The option strings are the exact strings the public evaluator puts on the wire and stores in
``close_end_answer`` (paper Section 4.1, Appendix D); they are never rephrased. The definitions are ours,
written from Appendix D, and are what the prompts show a model.

:func:`normalize_option` maps free model output to one option (:func:`read_option` also names the rule);
:func:`strict_option` is the public evaluator's strict reading, the one the scorer applies. It is deliberately conservative: an answer
that names no option, or names several conflicting ones with no way to decide, is *unparseable* (``None``),
never silently ``correct`` -- otherwise a model that rambles would be credited with true negatives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CORRECT = "correct"


@dataclass(frozen=True)
class ErrorType:
    option: str  # exact wire string
    abbrev: str  # column name in the paper's Table 4 (C, Om, UA, WA, WOb, WOr; the rest are ours)
    definition: str


TAXONOMY: tuple[ErrorType, ...] = (
    ErrorType(CORRECT, "C", "The step is carried out as the procedure asks; there is no error in this segment."),
    ErrorType(
        "Wrong object",
        "WOb",
        "The right step is attempted with the wrong thing: an incorrect tool, ingredient, material or part, "
        "equipment that is misused, or material that was prepared incorrectly beforehand.",
    ),
    ErrorType(
        "Wrong action",
        "WA",
        "The right step with the right things, but executed the wrong way: wrong manner, position or "
        "technique, a wrong measurement or quantity, wrong temperature or cooking time, or a clumsy motor "
        "error (for example while pitching a tent).",
    ),
    ErrorType(
        "Wrong order",
        "WOr",
        "A step that is correct in itself is done too early or too late relative to the procedure. A step "
        "that only goes wrong because an earlier step was out of order is also counted as wrong order.",
    ),
    ErrorType("Omission", "Om", "A required step is skipped entirely."),
    ErrorType(
        "Unintended and unnecessary action",
        "UA",
        "An extra action that the procedure does not contain or that should not happen, such as searching "
        "around for an item or doing something unrelated to the task.",
    ),
    ErrorType(
        "Correct wrong action",
        "CWA",
        "The person notices an earlier mistake and fixes it. This is acceptable behaviour but is annotated "
        "as a correction event.",
    ),
    ErrorType(
        "Equipment failure",
        "EF",
        "A tool, part or material breaks or malfunctions, even though the person did nothing wrong.",
    ),
    ErrorType("Others", "Oth", "Any other deviation that fits none of the types above, e.g. abnormally slow movement."),
)

OPTIONS: tuple[str, ...] = tuple(t.option for t in TAXONOMY)
ERROR_OPTIONS: tuple[str, ...] = tuple(o for o in OPTIONS if o != CORRECT)
BY_OPTION: dict[str, ErrorType] = {t.option: t for t in TAXONOMY}
_CANON = {o.lower(): o for o in OPTIONS}

# Phrases that mean an option. Longest phrases are tried first so that "correct wrong action" is never read as
# "correct" or "wrong action". Synonyms cover the ways VLMs and the source datasets phrase the same type.
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "Correct wrong action": (
        "correct wrong action",
        "corrected wrong action",
        "correction of a wrong action",
        "corrects a wrong action",
        "self-correction",
        "self correction",
        "correction event",
    ),
    "Unintended and unnecessary action": (
        "unintended and unnecessary action",
        "unintended and unnecessary",
        "unnecessary and unintended action",
        "unintended action",
        "unnecessary action",
        "extra action",
        "additional action",
        "extra step",
        "unnecessary step",
    ),
    "Equipment failure": ("equipment failure", "equipment malfunction", "tool failure", "tool malfunction"),
    "Wrong object": ("wrong object", "wrong objects", "incorrect object", "wrong tool", "wrong ingredient",
                     "object substitution", "wrong item", "wrong part"),
    "Wrong action": ("wrong action", "incorrect action", "wrong technique", "wrong manner", "wrong measurement",
                     "measurement error", "technique error"),
    "Wrong order": ("wrong order", "incorrect order", "out of order", "wrong sequence", "order error",
                    "sequence error", "wrong step order"),
    "Omission": ("omission", "omitted", "skipped step", "missing step", "step was skipped", "skipped"),
    "Others": ("others", "other error", "other"),
    CORRECT: ("correct", "no error", "no errors", "no mistake", "no mistakes", "without error", "without errors",
              "executed correctly", "performed correctly", "done correctly"),
}
_PHRASES: list[tuple[str, str]] = sorted(
    ((p, opt) for opt, ps in _SYNONYMS.items() for p in ps), key=lambda x: -len(x[0])
)
ANSWER_CUE = re.compile(r"(?:final answer|answer|option|error type|classification|verdict)\s*(?:is)?\s*[:\-]\s*",
                         re.IGNORECASE)
_LETTER = re.compile(r"^\s*\(?([A-Ia-i])[\).:]?\s*$")


def _clean(text: str) -> str:
    t = text.lower().replace("_", " ")
    t = re.sub(r"[*`\"'“”‘’\[\]{}<>#]", " ", t)
    return re.sub(r"\s+", " ", t).strip(" .,:;!-\n\t")


def exact_option(text: str) -> str | None:
    """The option ``text`` is as a whole, modulo case, markdown and punctuation."""
    return _CANON.get(_clean(text))


_NEGATED_BEFORE = re.compile(r"(?<![a-z])(not|no|never|nor|without|isn t|wasn t|didn t|doesn t|don t|n t)(?![a-z])")


def option_mentions(text: str) -> list[tuple[int, str]]:
    """All option mentions as (position, option), longest phrase wins on overlap."""
    t = " " + _clean(text) + " "
    taken = [False] * len(t)
    found: list[tuple[int, str]] = []
    for phrase, opt in _PHRASES:
        for m in re.finditer(r"(?<![a-z])" + re.escape(phrase) + r"(?![a-z])", t):
            if any(taken[m.start():m.end()]):
                continue
            # "not correct"/"incorrect" must not count as "correct"; "it is not an omission", "did not use the
            # wrong object" name no error either (a negation at most four words back in the same clause)
            if opt == CORRECT and re.search(r"(not|isn t|is not|in)\s*$", t[max(0, m.start() - 8):m.start()]):
                continue
            if opt != CORRECT and _NEGATED_BEFORE.search(" ".join(re.split(r"[,;.]| but ", t[:m.start()])[-1]
                                                              .split()[-4:])):
                continue
            for i in range(m.start(), m.end()):
                taken[i] = True
            found.append((m.start(), opt))
    return sorted(found)


#: The public evaluator's cleaning of a reply: whitespace off both ends, then these characters off both ends.
PUBLIC_STRIP = '.,!?;:"'


def clean_reply(text: str) -> str:
    """The public cleaning: whitespace off both ends, then ``.,!?;:"`` off both ends (nothing else)."""
    return text.strip().strip(PUBLIC_STRIP)


def strict_option(text: str | None) -> str | None:
    """The option a reply *is* under the public rule (its cleaned text equals an option, case ignored), or
    ``None`` when it is other text. The one strict reading: the scorer (eval/scoring.py) and the methods'
    answer extraction (reasoning/answers.py) both use it."""
    if text is None:
        return None
    return _CANON.get(clean_reply(text).lower())


def read_option(text: str | None, letters: bool = True) -> tuple[str | None, str]:
    """The lenient reading of a model's answer and the rule that found it: ``exact`` (the whole answer is an
    option, modulo case/punctuation), ``answer-cue`` (the text after the *last* "Answer: ..." / "Error type:
    ..." cue), ``letter`` (a single letter A-I in the order of :data:`OPTIONS`, when ``letters``),
    ``single-mention`` (exactly one distinct option named in the prose), ``last-line`` (several named: the last
    line that names exactly one decides, as CoT answers end with the verdict); ``none`` when no rule finds one."""
    if text is None or not text.strip():
        return None, "none"
    hit = exact_option(text)
    if hit:
        return hit, "exact"
    cues = list(ANSWER_CUE.finditer(text))
    if cues:
        tail = text[cues[-1].end():].strip()
        tail = tail.splitlines()[0] if tail else ""
        hit = exact_option(tail) or single_option(tail)
        if hit:
            return hit, "answer-cue"
    if letters:
        m = _LETTER.match(text)
        if m:
            return OPTIONS["abcdefghi".index(m.group(1).lower())], "letter"
    hit = single_option(text)
    if hit:
        return hit, "single-mention"
    for line in reversed([ln for ln in text.splitlines() if ln.strip()]):
        hit = exact_option(line) or single_option(line)
        if hit:
            return hit, "last-line"
        if option_mentions(line):  # a line naming several options: ambiguous, stop looking further up
            break
    return None, "none"


def normalize_option(text: str | None, letters: bool = True) -> str | None:
    """Map a model's answer to one of :data:`OPTIONS`, or ``None`` when it names none unambiguously (the rules
    of :func:`read_option`, in its order)."""
    return read_option(text, letters)[0]


def single_option(text: str) -> str | None:
    """The option ``text`` mentions when it mentions exactly one (several or none: None)."""
    opts = {o for _, o in option_mentions(text)}
    return opts.pop() if len(opts) == 1 else None


def is_error(option: str | None) -> bool:
    """True for an error option. ``None`` (unparseable) is *not* an error option here; metrics decide."""
    return option is not None and option.lower() != CORRECT


def canonical(option: str) -> str:
    """Exact option string for a ground-truth label (case-insensitive); raises on an unknown label."""
    try:
        return _CANON[option.strip().lower()]
    except KeyError as e:
        raise ValueError(f"unknown EgoErrorVQA option {option!r}; expected one of {OPTIONS}") from e


def definitions_block(include_correct: bool = False) -> str:
    """The error-type definitions as the prompts show them (one line per type)."""
    return "\n".join(
        f"- {t.option}: {t.definition}" for t in TAXONOMY if include_correct or t.option != CORRECT
    )
