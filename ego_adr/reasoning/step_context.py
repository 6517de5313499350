"""What key-step matching hands the later stages (paper Section 5.2, Appendix G): the matched step with its
neighbours, the step's expected objects/tools from the procedure bank, and a confidence signal.

Shallow decoupling shows the narrator the step and its neighbours (:data:`prompts.CONTEXT_MATCHED`; its keyword
classifier gets the objects directly). Deep decoupling shows the narrator and the classifier everything
matching found (:data:`prompts.CONTEXT_MATCHED_DEEP`): Appendix G lists "the matched step description and its
associated expected objects/tools, contextual neighbouring steps, and a confidence signal for downstream error
classification". The confidence is the similarity that chose the step: the TF-IDF cosine, the difflib ratio
below the 0.25 threshold, or -- when the model picked the step -- the TF-IDF cosine of the action with it.
"""

from __future__ import annotations

from ego_adr.reasoning import prompts as P
from ego_adr.reasoning.matching import StepMatch

UNMATCHED_ACTION = "none given (the step was matched from a first description of the clip)"


def confidence_of(m: StepMatch) -> dict:
    """The match's confidence as a row records it: value, what it measures."""
    how = {"tfidf": "TF-IDF cosine (1-2-grams) of the action with the step",
           "difflib": "difflib character ratio (TF-IDF cosine below the threshold)",
           "model": "the model picked the step; TF-IDF cosine of the action with it",
           "given": "step index given by the annotation"}.get(m.method, m.method)
    return {"value": round(float(m.score), 4), "method": m.method, "measures": how}


def confidence_text(conf: dict) -> str:
    return f"{conf['value']:.2f} ({conf['measures']})"


def step_context(action: str | None, m: StepMatch, objects: list[str], deep: bool) -> tuple[str, dict]:
    """The context text for the narrator/classifier and what the row records of it (deep: objects, confidence)."""
    fields = dict(action=action or UNMATCHED_ACTION, previous=m.previous or "none (this is the first step)",
                  step=m.step, next=m.next or "none (this is the last step)")
    if not deep:
        return P.CONTEXT_MATCHED.render(**fields), {}
    conf = confidence_of(m)
    text = P.CONTEXT_MATCHED_DEEP.render(**fields, objects=", ".join(objects) or "none listed in the procedure bank",
                                         confidence=confidence_text(conf))
    return text, {"expected_objects": list(objects), "confidence": conf}
