"""Error classification: shallow keyword vocabularies, and parsing of the deep (LLM) classifier's answer.

Shallow decoupling (paper Section 5.2) classifies without another model call: the three-part narration
(object or tool, action, anomalous event) is matched against error-type-specific vocabularies and against the
expected step's objects. Phrases in the *anomaly* part count double, since the narration prompt asks the model
to put anomalies there. No error evidence at all means ``correct`` -- recorded with method
``no-error-keywords`` so every verdict can be traced; an empty narration is a failure, not ``correct``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from ego_adr.taxonomy import CORRECT, OPTIONS, normalize_option

# Error-type vocabularies. Multi-word phrases are matched as phrases; single words on word boundaries.
VOCABULARIES: dict[str, tuple[str, ...]] = {
    "Equipment failure": ("broken", "breaks", "broke", "malfunction", "malfunctions", "not working", "stops working",
                          "fails to work", "jammed", "stuck", "torn", "tears", "snaps", "faulty", "defective",
                          "won't turn on", "does not turn on", "equipment failure"),
    "Correct wrong action": ("corrects", "corrected", "correcting", "fixes the mistake", "fixes it", "redoes",
                             "re-does", "undoes", "realizes", "realises", "takes it out again", "puts it back",
                             "self-correct", "correction"),
    "Omission": ("skips", "skipped", "skip", "omits", "omitted", "omission", "forgets", "forgot", "missing",
                 "does not add", "doesn't add", "not performed", "never", "left out", "without adding"),
    "Wrong order": ("before", "too early", "too late", "out of order", "wrong order", "order", "sequence",
                    "earlier than", "later than", "prematurely", "ahead of"),
    "Unintended and unnecessary action": ("extra", "unnecessary", "searching", "searches", "looking for",
                                          "looks for", "unrelated", "additional", "wanders", "not part of",
                                          "unintended", "irrelevant", "idle"),
    "Wrong object": ("wrong object", "wrong tool", "wrong ingredient", "wrong part", "instead of", "different",
                     "another", "incorrect tool", "incorrect ingredient", "incorrect part", "wrong item",
                     "mistaken", "substitute", "substitutes"),
    "Wrong action": ("incorrectly", "wrong way", "too much", "too little", "spills", "spilled", "drops",
                     "dropped", "misaligned", "upside down", "improperly", "not fully", "overcooks", "burns",
                     "wrong amount", "wrong position", "wrong place", "uneven", "wrong action", "loosely",
                     "wrong temperature", "wrong time", "fails to"),
    "Others": ("slowly", "hesitates", "pauses", "abnormally slow"),
}
NONE_MARKERS = re.compile(
    r"\b(none|no anomal\w*|nothing unusual|no error|no errors|no mistake|normal|as expected|n/?a)\b", re.I
)
_PRIORITY = [o for o in OPTIONS if o != CORRECT]  # tie-break: the taxonomy's order
_LABELS = {"object": r"object(?:\s*/\s*tool)?|tool", "action": r"action", "anomaly": r"anomal\w*(?: event)?"}


@dataclass
class Classification:
    option: str | None  # None: unparseable / no decision
    method: str  # "keywords" | "no-error-keywords" | "llm" | "unparseable" | "empty"
    raw: str | None = None
    scores: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def parse_three_part(narration: str) -> dict[str, str]:
    """Split a shallow narration into its object/action/anomaly parts (missing parts are absent)."""
    parts: dict[str, str] = {}
    for line in narration.splitlines():
        clean = line.strip().lstrip("-*#0123456789.() ").replace("**", "")
        for key, pat in _LABELS.items():
            m = re.match(rf"(?:\(\d\)\s*)?(?:{pat})\s*[:\-]\s*(.*)$", clean, re.I)
            if m and key not in parts:
                parts[key] = m.group(1).strip()
                break
    return parts


def _hits(text: str, phrases: tuple[str, ...]) -> list[str]:
    t = text.lower()
    return [p for p in phrases if re.search(r"(?<![a-z])" + re.escape(p) + r"(?![a-z])", t)]


_SHOULD = re.compile(r"\b(?:but|and|,)?\s*(?:should have|should|instead of)\b", re.I)
_QUANTITY = re.compile(r"^(?:about|around|approximately|only|much|little|more|less|\d)", re.I)
_PRONOUN = {"it", "them", "this", "that", "these", "those", "one"}


def contrast_evidence(text: str) -> tuple[str, str] | None:
    """"X but should Y" -- the way annotators and models describe a deviation. Same verb with another
    object -> Wrong object; another place, amount or manner (or no verb after "should") -> Wrong action."""
    m = _SHOULD.search(text)
    if not m:
        return None
    done, wanted = text[: m.start()].strip(" ,.").lower().split(), text[m.end():].strip(" ,.").lower().split()
    if not done or not wanted:
        return None
    if m.group(0).lower().endswith("instead of"):  # "... 2 minutes instead of 1" vs "a fork instead of a spoon"
        return ("Wrong action" if _QUANTITY.match(wanted[0]) else "Wrong object"), m.group(0).strip()
    if done[0] == wanted[0] and len(wanted) > 1:  # same verb: compare what it acts on
        obj_done, obj_wanted = done[1:4], wanted[1:4]
        if wanted[1] in _PRONOUN or _QUANTITY.match(wanted[1]) or obj_done == obj_wanted:
            return "Wrong action", m.group(0).strip()
        return "Wrong object", m.group(0).strip()
    return "Wrong action", m.group(0).strip()


def classify_keywords(narration: str | None, step_objects: list[str] | None = None) -> Classification:
    """Shallow classification of a narration by error-type vocabularies."""
    if narration is None or not narration.strip():
        return Classification(None, "empty", narration)
    parts = parse_three_part(narration)
    anomaly = parts.get("anomaly", "")
    if anomaly and NONE_MARKERS.search(anomaly) and len(anomaly.split()) <= 4:
        anomaly = ""  # "Anomaly: none" -- the rest of the narration is still read, with normal weight
    rest = "\n".join(v for k, v in parts.items() if k != "anomaly") if parts else narration
    scores: dict[str, float] = {}
    evidence: list = []
    for opt, vocab in VOCABULARIES.items():
        a, r = _hits(anomaly, vocab), _hits(rest, vocab)
        s = 2.0 * len(a) + 1.0 * len(r)
        if s:
            scores[opt] = s
            evidence.append({"type": opt, "anomaly": a, "other": r})
    for part in (anomaly, rest):
        contrast = contrast_evidence(part) if part else None
        if contrast:
            scores[contrast[0]] = scores.get(contrast[0], 0.0) + (2.0 if part is anomaly else 1.5)
            evidence.append({"type": contrast[0], "contrast": contrast[1]})
            break
    obj = parts.get("object", "")
    if obj and step_objects and not NONE_MARKERS.search(obj):
        if not any(o and o.lower() in obj.lower() for o in step_objects):
            scores["Wrong object"] = scores.get("Wrong object", 0.0) + 1.0
            evidence.append({"type": "Wrong object", "object_mismatch": obj, "expected": step_objects[:8]})
    if not scores:
        return Classification(CORRECT, "no-error-keywords", narration, {}, [])
    best = max(scores.values())
    option = next(o for o in _PRIORITY if scores.get(o) == best)
    return Classification(option, "keywords", narration, scores, evidence)


def classify_answer(text: str | None) -> Classification:
    """Deep mode / baselines: the model answered with (hopefully) one option."""
    if text is None or not text.strip():
        return Classification(None, "empty", text)
    opt = normalize_option(text)
    return Classification(opt, "llm" if opt else "unparseable", text)
