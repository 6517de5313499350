"""Error classification: shallow keyword vocabularies, and parsing of the deep (LLM) classifier's answer.

Shallow decoupling (paper Section 5.2) classifies without another model call: the three-part narration
(object or tool, action, anomalous event) is matched against error-type-specific vocabularies and against the
expected step's objects. Phrases in the *anomaly* part count double, since the narration prompt asks the model
to put anomalies there. No error evidence at all means ``correct`` -- recorded with method
``no-error-keywords`` so every verdict can be traced; an empty narration is a failure, not ``correct``.

Reading rules (each recorded in the evidence):

* **One phrase counts once.** All vocabularies are matched together, longest phrase first, and a stretch of text
  already counted is not counted again -- "out of order" is one Wrong-order hit, not also "order"; "fails to
  work" is Equipment failure, not also Wrong action's "fails to"; an "instead of" read by the contrast rule is not
  also a Wrong-object keyword.
* **Negation.** A phrase preceded in its clause (up to four words back, not across ``, ; .`` or "but") by a
  negation -- no, not, n't, never, without, nothing, neither, nor -- is evidence of nothing: "no step was
  skipped", "did not use the wrong tool". Phrases that contain their own negation ("does not add", "not working")
  are read as written.
* **Tie-break.** Equal scores go to the type with more evidence in the *anomaly* part, then to the earlier type
  in the taxonomy's order (:data:`ego_adr.taxonomy.OPTIONS`, the paper's Section 3 order). It is deliberately not
  the annotations' label frequency, which would tune the classifier on the evaluation labels.
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
                 "does not add", "doesn't add", "not performed", "left out", "without adding"),
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
    method: str  # "keywords" | "no-error-keywords" | "llm" | "likelihood" | "unparseable" | "empty"
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


_ALL_PHRASES = sorted(((p, opt) for opt, ps in VOCABULARIES.items() for p in ps), key=lambda x: -len(x[0]))
_NEGATION = re.compile(r"(?<![a-z])(?:no|not|never|without|nothing|neither|nor|none)(?![a-z])|n't", re.I)
_CLAUSE_END = re.compile(r"[,;.!?]|(?<![a-z])but(?![a-z])", re.I)


def _negated(text: str, start: int) -> bool:
    """Whether a negation stands before ``start`` in the same clause, at most four words back."""
    before = text[:start]
    ends = list(_CLAUSE_END.finditer(before))
    clause = before[ends[-1].end():] if ends else before
    window = " ".join(clause.split()[-4:])
    return bool(_NEGATION.search(window))


def vocabulary_hits(text: str, skip: list[tuple[int, int]] | None = None) -> dict[str, list[str]]:
    """Error type -> the phrases found in ``text``, each stretch of text counted once (longest phrase first),
    negated phrases and the ``skip`` spans left out. Negated phrases are listed under ``"negated"``."""
    t = text.lower()
    taken = [False] * (len(t) + 1)
    for a, b in skip or []:
        for i in range(a, b):
            taken[i] = True
    out: dict[str, list[str]] = {}
    for phrase, opt in _ALL_PHRASES:
        for m in re.finditer(r"(?<![a-z])" + re.escape(phrase) + r"(?![a-z])", t):
            if any(taken[m.start():m.end()]):
                continue
            for i in range(m.start(), m.end()):
                taken[i] = True
            key = "negated" if _negated(t, m.start()) else opt
            out.setdefault(key, []).append(phrase)
    return out


_SHOULD = re.compile(r"\b(?:but|and|,)?\s*(?:should have|should|instead of)\b", re.I)
_QUANTITY = re.compile(r"^(?:about|around|approximately|only|much|little|more|less|\d)", re.I)
_PRONOUN = {"it", "them", "this", "that", "these", "those", "one"}


def contrast_span(text: str) -> tuple[int, int] | None:
    """Where the contrast cue of :func:`contrast_evidence` stands in ``text`` (so it is not counted twice)."""
    m = _SHOULD.search(text)
    return (m.start(), m.end()) if m else None


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
    in_anomaly: dict[str, int] = {}
    evidence: list = []
    contrast, skips = None, {"anomaly": [], "rest": []}
    for name, part in (("anomaly", anomaly), ("rest", rest)):
        contrast = contrast_evidence(part) if part else None
        if contrast:
            skips[name] = [contrast_span(part.lower())]
            scores[contrast[0]] = scores.get(contrast[0], 0.0) + (2.0 if name == "anomaly" else 1.5)
            in_anomaly[contrast[0]] = in_anomaly.get(contrast[0], 0) + (name == "anomaly")
            evidence.append({"type": contrast[0], "contrast": contrast[1]})
            break
    hits_a, hits_r = vocabulary_hits(anomaly, skips["anomaly"]), vocabulary_hits(rest, skips["rest"])
    for opt in VOCABULARIES:
        a, r = hits_a.get(opt, []), hits_r.get(opt, [])
        if a or r:
            scores[opt] = scores.get(opt, 0.0) + 2.0 * len(a) + 1.0 * len(r)
            in_anomaly[opt] = in_anomaly.get(opt, 0) + len(a)
            evidence.append({"type": opt, "anomaly": a, "other": r})
    negated = hits_a.get("negated", []) + hits_r.get("negated", [])
    if negated:
        evidence.append({"negated": negated})
    obj = parts.get("object", "")
    if obj and step_objects and not NONE_MARKERS.search(obj):
        if not any(o and o.lower() in obj.lower() for o in step_objects):
            scores["Wrong object"] = scores.get("Wrong object", 0.0) + 1.0
            evidence.append({"type": "Wrong object", "object_mismatch": obj, "expected": step_objects[:8]})
    if not scores:
        return Classification(CORRECT, "no-error-keywords", narration, {}, evidence)
    # tie-break (module docstring): score, then anomaly-part evidence, then the taxonomy's order
    option = max(scores, key=lambda o: (scores[o], in_anomaly.get(o, 0), -_PRIORITY.index(o)))
    return Classification(option, "keywords", narration, scores, evidence)


def classify_answer(text: str | None) -> Classification:
    """Deep mode / baselines: the model answered with (hopefully) one option."""
    if text is None or not text.strip():
        return Classification(None, "empty", text)
    opt = normalize_option(text)
    return Classification(opt, "llm" if opt else "unparseable", text)
