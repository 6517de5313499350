"""The public evaluator's open-ended judges under ``--protocol public``: its prompts, read at run time, and its
score parsing, reproduced (issue 10 item 3; Table 3 of the paper came from that code).

Why: the public green agent (z1oong/EgoErrorVQA ``src/green_agent/agent.py``) asks its two judges with its own
prompt texts and reads their replies its own way; a Table 3 number means what it means only with both. The
prompts are not ours to commit, so they are read from a checkout of that repository each run (with :mod:`ast`,
never imported or executed); their sha goes into the prompt version and so into the stage-cache key.

What the public parsing does, restated from reading it (the code here is our own):

* **Qwen judge** (``QwenJudge``): the decoded text after the last ``"assistant"``; the greedy ``{...}`` span from
  the first ``{`` to the last ``}``, trailing `` ,\\n\\t\\r]`` removed, must load as JSON; its ``score`` is
  passed through ``int()`` (missing: 0). Anything else -- no braces, invalid JSON, a non-numeric score -- scores 0.
* **DeepSeek judge** (``DeepSeekJudge``): the text it searches is the *whole* decoded output, prompt included.
  The last ``{...}`` without nested braces whose JSON has an ``int`` ``score`` wins; else the first
  ``"score": <digits>`` anywhere; else the first stand-alone digit 0-5 anywhere -- which, since the prompt comes
  first, is usually a digit of the question or reference, or the ``0`` of its own "Scoring (0-5)" line; else 0.
  We rebuild that text as the rendered prompt followed by the reply: the chat template around them adds neither
  digits nor braces, so every search finds what it finds in the public code.
* Both judges are asked about every answer, also an empty one; the final score is the mean of the two, zeros
  of failed parses included. An answer that could not be obtained leaves the sample out of the average, as the
  public loop's ``except`` branch does (``successful_count``). A judge call that failed is an outage, never a
  score: the row is unjudged and retried (the public loop would score a failed DeepSeek call 0; see below).

Replies scored 0 because the public code could not parse them, and DeepSeek fallback readings, are counted per
judge (``method`` ``public-unparsed-0`` / ``public-fallback-*``) so the report can say how many there were.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ego_adr.data.public_source import ENV, GREEN_AGENT, PublicSourceMissing  # noqa: F401 (re-exported)
from ego_adr.data.public_source import find_green_agent as find_public

JUDGE_CLASSES = ("QwenJudge", "DeepSeekJudge")  # first configured judge <-> Qwen's, second <-> DeepSeek's
FIELDS = {"question": "question", "ground_truth": "reference", "model_answer": "answer"}
UNPARSED = "public-unparsed-0"
#: What the public loop does with a judge call that raised (green_agent/agent.py): a failed **Qwen** call
#: (the first judge) puts the sample in its ``except`` branch with an ``error`` key, so the merge leaves it out of
#: the mean (and DeepSeek is skipped for it); a failed **DeepSeek** call records ``deepseek_score 0`` *without*
#: an ``error`` key, so the sample counts with (Qwen + 0) / 2. An outage is no judgement, so here either leaves
#: the row unjudged -- in no average, the public loop's value kept as ``public_loop_score`` for audit -- and marked
#: retryable: ``--retry-failed`` (or lmms-eval's next run) asks again (issue 28 item 4).
QWEN_FAILED = "public-qwen-failed-excluded"
DEEPSEEK_FAILED = "public-deepseek-failed-0"
DEEPSEEK_SKIPPED = "public-skipped-after-qwen-error"
PUBLIC_CALL_FAILED = (QWEN_FAILED, DEEPSEEK_FAILED)


class PublicJudgesMissing(PublicSourceMissing):
    """The public evaluator's source is needed for ``--protocol public`` judging and was not found."""


@dataclass(frozen=True)
class PublicJudgePrompt:
    judge_class: str  # QwenJudge | DeepSeekJudge
    template: str  # str.format template with {question}, {reference}, {answer}
    source: str
    sha: str

    def prompt(self):
        from ego_adr.reasoning.prompts import Prompt

        name = "public_judge_" + self.judge_class.removesuffix("Judge").lower()
        return Prompt(name, f"public-{self.sha}", self.template)


def find_green_agent(data_root=None, explicit=None) -> Path:
    try:
        return find_public(data_root, explicit, why="--protocol public judging (the public judges' own prompts)")
    except PublicSourceMissing as e:
        raise PublicJudgesMissing(str(e)) from None


def _template(node: ast.JoinedStr) -> str:
    parts = []
    for v in node.values:
        if isinstance(v, ast.Constant):
            parts.append(str(v.value).replace("{", "{{").replace("}", "}}"))
        elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name) and v.value.id in FIELDS:
            parts.append("{" + FIELDS[v.value.id] + "}")
        else:
            raise ValueError("unexpected expression in the judge prompt")
    return "".join(parts)


def read_public_judge_prompts(data_root=None, explicit=None) -> list[PublicJudgePrompt]:
    """The prompts of ``QwenJudge.evaluate_answer`` and ``DeepSeekJudge.evaluate_answer`` (the f-string assigned
    to ``prompt``), as templates; raises :class:`PublicJudgesMissing` when not found."""
    path = find_green_agent(data_root, explicit)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name in JUDGE_CLASSES):
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "evaluate_answer"):
            for node in ast.walk(fn):
                if (isinstance(node, ast.Assign) and isinstance(node.value, ast.JoinedStr)
                        and any(getattr(t, "id", None) == "prompt" for t in node.targets)):
                    found[cls.name] = _template(node.value)
    missing = [c for c in JUDGE_CLASSES if c not in found]
    if missing:
        raise PublicJudgesMissing(f"{path} has no judge prompt for {', '.join(missing)}: is it the EgoErrorVQA "
                                  "green agent?")
    return [PublicJudgePrompt(c, found[c], str(path), hashlib.sha256(found[c].encode()).hexdigest()[:12])
            for c in JUDGE_CLASSES]


# --- the public parsing ------------------------------------------------------------------------------------
def qwen_score(reply: str) -> tuple[int, str]:
    """``(score, method)`` as the public Qwen judge reads ``reply`` (see the module docstring)."""
    part = reply.split("assistant")[-1].strip() if "assistant" in reply else reply
    m = re.search(r"\{.*\}", part, re.DOTALL)
    if not m:
        return 0, UNPARSED
    try:
        result = json.loads(m.group(0).rstrip(" ,\n\t\r]"))
        return int(result.get("score", 0)), "public-json"
    except Exception:  # noqa: BLE001 - the public code catches everything and scores 0
        return 0, UNPARSED


def deepseek_score(prompt_text: str, reply: str) -> tuple[int, str]:
    """``(score, method)`` as the public DeepSeek judge reads its decoded output (prompt, then reply)."""
    response = prompt_text + "\n" + reply
    for m in reversed(list(re.finditer(r"\{[^{}]*\}", response))):
        try:
            result = json.loads(m.group(0).strip())
        except (json.JSONDecodeError, ValueError, TypeError):
            continue
        if isinstance(result, dict) and "score" in result and isinstance(result.get("score"), int):
            return int(result["score"]), "public-json"
    m = re.search(r'"score"\s*:\s*(\d+)', response)
    if m:
        return int(m.group(1)), "public-fallback-score-key"
    m = re.search(r"\b([0-5])\b", response)
    if m:
        return int(m.group(1)), "public-fallback-first-digit"
    return 0, UNPARSED


def public_score(judge_class: str, prompt_text: str, reply: str | None) -> tuple[int, str]:
    if reply is None:  # the judge call failed: the public loop's except branch records 0
        return 0, "public-error-0"
    if judge_class == "QwenJudge":
        return qwen_score(reply)
    return deepseek_score(prompt_text, reply)


def public_parse_counts(rows) -> dict:
    """Per judge: how many replies the public code could not parse (scored 0) and how many it read by a
    fallback rule; for the report."""
    out: dict[str, dict[str, int]] = {}
    for r in rows:
        for n, p in (r.get("judges") or {}).items():
            c = out.setdefault(n, {"unparsed_scored_0": 0, "fallback": 0, "answer_failed_excluded": 0,
                                   "call_failed_excluded": 0, "call_failed_scored_0": 0})
            m = p.get("method") or ""
            c["unparsed_scored_0"] += m == UNPARSED
            c["fallback"] += m.startswith("public-fallback")
            c["answer_failed_excluded"] += m == "public-answer-failed-excluded"
            c["call_failed_excluded"] += m == QWEN_FAILED
            c["call_failed_scored_0"] += m == DEEPSEEK_FAILED
    return out
