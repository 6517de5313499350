"""The text-only probe that routes a model to deep or shallow decoupling (paper Section 5.1, Appendix G).

Stage 1: one text-only request. Abnormal behaviour -- an exception, an empty answer, degenerate output
(a token repeated over and over) or an echo of the prompt -- routes the model to *shallow* decoupling at once; so
does a backend that declares it cannot take text-only input (Video-LLaVA, Section 6.4).
Stage 2: several trials of "Answer STEP:<n>, and compute the formula <formula>." with a random step number and a
random arithmetic formula. Only a model that returns the right step *and* the right value in every trial is
promoted to *deep* decoupling. The verdict is cached per model fingerprint together with its evidence (prompts,
answers, checks), so a model is probed once and every run can show why it was routed the way it was.

What an able model writes varies: ``STEP:14 RESULT:21``, ``**STEP:** 14``, ``STEP:<14>``, ``RESULT: 15*2-9 = 21``
(the formula restated, then its value); :func:`check_trial` reads all of them, and still refuses a model that only
copies the step number (the formulas are drawn so that no value equals its step number). The formulas are drawn
per model, seeded by its fingerprint, so no fixed list of answers can be learnt or hard-coded.

With ``scoring="likelihood"`` (``--scoring likelihood``, a named deviation: the paper's probe reads what the
model writes) stage 2 does not ask the model to write its answer: each trial's right answer
``STEP:<n> RESULT:<value>`` is scored beside wrong ones (the step off by one, the value off by one or ten, the
step copied as the value) as the start of its reply to the same prompt, and the trial passes when the right one is
the most likely. Stage 1 still reads a written answer: it checks that the model writes normal text at all.

A backend that declares no text-only input is routed to shallow with reason ``declared``; it is *also* probed
the paper's way (Section 6.4: a completely black image beside the text) and that evidence is recorded in
``black_image``, without changing the route (the paper found such forced text reasoning degrades the model).
"""

from __future__ import annotations

import difflib
import json
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ego_adr.errors import InfrastructureError
from ego_adr.models.base import VLM, GenerationConfig, Message, Request
from ego_adr.reasoning.prompts import PROBE_STEP_FORMULA, PROBE_TEXT
from ego_adr.store import write_json

DEEP, SHALLOW = "deep", "shallow"
PROBE_VERSION = f"{PROBE_TEXT.version}.{PROBE_STEP_FORMULA.version}.2"  # .2: per-model formulas, new checks


class ProbeUnreachable(InfrastructureError):
    """The probe could not reach its model (an infrastructure failure): no verdict, nothing cached. Routing an
    unreachable model to *shallow* would outlive the outage, so the run stops instead."""


def _reachable(model: VLM, gens: list) -> None:
    bad = next((g for g in gens if getattr(g, "retryable", False)), None)
    if bad is not None:
        raise ProbeUnreachable(f"the routing probe could not reach {model.model_id}: {bad.error}")


@dataclass
class ProbeResult:
    route: str
    reason: str
    model: str
    fingerprint: str
    stage1: dict = field(default_factory=dict)
    trials: list[dict] = field(default_factory=list)
    version: str = PROBE_VERSION
    black_image: dict | None = None  # declared non-text models: the same probe with a black image (evidence)
    scoring: str = "generate"  # how stage 2's answers were read: generate | likelihood (module docstring)

    def to_dict(self) -> dict:
        return asdict(self)


def is_abnormal(prompt: str, text: str | None, error: str | None) -> str | None:
    """Why a text-only answer is abnormal (``None`` when it looks like a normal answer)."""
    if error:
        return f"exception: {error}"
    if text is None or not text.strip():
        return "empty output"
    words = re.findall(r"\w+", text.lower())
    if not words:
        return "no words in output"
    if len(words) >= 8 and len(set(words)) / len(words) < 0.3:
        return "degenerate output (repetitive)"
    if re.search(r"(.{1,6})\1{7,}", text) or re.search(r"(.{8,60}?)\1{2,}", text, re.DOTALL):
        return "degenerate output (repeated pattern)"
    if difflib.SequenceMatcher(None, prompt.lower(), text.lower().strip()).ratio() > 0.8 or (
        len(text) > 30 and text.strip().lower() in prompt.lower()
    ):
        return "echo of the prompt"
    return None


def make_trial(rng: random.Random) -> tuple[int, str, int]:
    """A random step number and formula with its integer value (small numbers, + - * only), never equal to the
    step number, so that copying the step cannot pass."""
    while True:
        step = rng.randint(2, 19)
        a, b, c = rng.randint(2, 19), rng.randint(2, 9), rng.randint(1, 19)
        op1, op2 = rng.choice("+-*"), rng.choice("+-")
        formula = f"{a} {op1} {b} {op2} {c}"
        value = int(eval(formula, {"__builtins__": {}}))  # noqa: S307 -- our own digits and operators only
        if value != step:
            return step, formula, value


def trial_rng(fingerprint: str, seed: int) -> random.Random:
    """Formulas are drawn per model: the generator is seeded by the fingerprint and the run's seed."""
    import hashlib

    return random.Random(int(hashlib.sha256(f"{fingerprint}|{seed}".encode()).hexdigest()[:16], 16))


_NUM = r"-?\d+(?:\.\d+)?"
_STEP = re.compile(r"STEP\W{0,8}?(-?\d+)", re.IGNORECASE)  # STEP:14, **STEP:** 14, STEP:<14>, STEP = 14
_RESULT = re.compile(r"RESULT[^\w-]{0,8}", re.IGNORECASE)


def check_trial(text: str | None, step: int, value: int) -> dict:
    """Whether ``text`` gives the right step and the right value. The value is what follows ``RESULT`` -- the
    number after its last ``=`` when the formula is restated (``RESULT: 15*2-9 = 21``), else its first number --
    or, without a RESULT tag, the last number after the step."""
    t = (text or "").replace("**", "")
    m = _STEP.search(t)
    step_ok = bool(m) and int(m.group(1)) == step
    rest = t[m.end():] if m else t
    r = _RESULT.search(rest)
    if r:
        line = rest[r.end():].splitlines()[0] if rest[r.end():].strip() else ""
        tail = line.rsplit("=", 1)[-1] if "=" in line else line
        nums = re.findall(_NUM, tail)
        value_ok = bool(nums) and float(nums[0]) == value
    else:
        nums = re.findall(_NUM, rest)
        value_ok = bool(nums) and float(nums[-1]) == value
    return {"step_ok": step_ok, "value_ok": value_ok}


def _text_request(prompt: str, stage: str, meta: dict, max_new_tokens: int, black_image: bool = False) -> Request:
    parts: list = [prompt]
    if black_image:
        from ego_adr.models.base import black_frames

        parts.insert(0, black_frames())
    return Request([Message.user(*parts)], GenerationConfig(max_new_tokens=max_new_tokens),
                   {**meta, "stage": stage, "black_image": black_image})


def _probe(model: VLM, trials: int, seed: int, max_new_tokens: int, black_image: bool,
           scoring: str = "generate") -> tuple[str, str, dict, list]:
    """(route, reason, stage-1 evidence, trial evidence) of one probe."""
    req = _text_request(PROBE_TEXT.template, "probe", PROBE_TEXT.meta("probe"), max_new_tokens, black_image)
    g = model.generate([req])[0]
    _reachable(model, [g])
    why = is_abnormal(PROBE_TEXT.template, g.text, g.error)
    stage1 = {"prompt": PROBE_TEXT.template, "answer": g.text, "error": g.error, "abnormal": why}
    if why:
        return SHALLOW, f"stage 1: {why}", stage1, []
    rng = trial_rng(model.fingerprint, seed)
    specs = [make_trial(rng) for _ in range(trials)]
    reqs = [_text_request(PROBE_STEP_FORMULA.render(step=s, formula=f), "probe", PROBE_STEP_FORMULA.meta("probe"),
                          max_new_tokens, black_image) for s, f, _ in specs]
    out = _scored_trials(model, specs, reqs) if scoring == "likelihood" else _written_trials(model, specs, reqs)
    passed = sum(t["passed"] for t in out)
    if passed == trials:
        return DEEP, f"stage 2: {passed}/{trials} trials right", stage1, out
    return SHALLOW, f"stage 2: only {passed}/{trials} trials right", stage1, out


def _written_trials(model: VLM, specs: list, reqs: list[Request]) -> list[dict]:
    gens = model.generate(reqs)
    _reachable(model, gens)
    out = []
    for (s, f, v), r, gen in zip(specs, reqs, gens):
        chk = check_trial(gen.text, s, v)
        ok = gen.ok and chk["step_ok"] and chk["value_ok"]
        out.append({"prompt": r.messages[0].content[-1], "step": s, "formula": f, "value": v,
                    "answer": gen.text, "error": gen.error, **chk, "passed": ok})
    return out


def trial_options(step: int, value: int) -> list[str]:
    """The answers a likelihood-scored trial chooses among, the right one first: the step off by one, the value
    off by one or ten, the step copied as the value (what a model that cannot compute writes)."""
    pairs = [(step, value), (step + 1, value), (step, value - 1), (step, value + 1), (step, value - 10),
             (step, value + 10), (step, step)]
    return list(dict.fromkeys(f"STEP:{s} RESULT:{v}" for s, v in pairs))


def _scored_trials(model: VLM, specs: list, reqs: list[Request]) -> list[dict]:
    from ego_adr.models.likelihood import LikelihoodRequest

    options = [trial_options(s, v) for s, _, v in specs]
    got = model.loglikelihood([LikelihoodRequest(r.messages, o, dict(r.meta)) for r, o in zip(reqs, options)])
    _reachable(model, got)
    out = []
    for (s, f, v), r, opts, res in zip(specs, reqs, options, got):
        lps = res.logprobs or []
        best = opts[max(range(len(opts)), key=lambda k: lps[k])] if res.ok else None
        out.append({"prompt": r.messages[0].content[-1], "step": s, "formula": f, "value": v, "answer": best,
                    "error": res.error, "options": dict(zip(opts, (round(x, 4) for x in lps))),
                    "step_ok": best is not None and best.split()[0] == f"STEP:{s}",
                    "value_ok": best is not None and best.split()[1] == f"RESULT:{v}", "passed": best == opts[0]})
    return out


def run_probe(model: VLM, trials: int = 3, seed: int = 0, max_new_tokens: int = 64,
              scoring: str = "generate") -> ProbeResult:
    base = ProbeResult(route=SHALLOW, reason="", model=model.model_id, fingerprint=model.fingerprint, scoring=scoring)
    if not model.capabilities.text_only:
        route, why, stage1, tr = _probe(model, trials, seed, max_new_tokens, True, scoring)
        base.reason = "declared: the backend declares no text-only input"
        base.stage1 = {"skipped": True, "declared": True}
        base.black_image = {"would_route": route, "reason": why, "stage1": stage1, "trials": tr,
                            "note": "Section 6.4: probed with a black image beside the text; evidence only"}
        return base
    base.route, base.reason, base.stage1, base.trials = _probe(model, trials, seed, max_new_tokens, False, scoring)
    return base


def cached_probe(model: VLM, cache_dir: Path | None, trials: int = 3, seed: int = 0,
                 scoring: str = "generate") -> ProbeResult:
    """Probe once per (model fingerprint, probe version, trials, seed, scoring); the JSON holds the evidence."""
    if cache_dir is None:
        return run_probe(model, trials, seed, scoring=scoring)
    import hashlib

    tail = "" if scoring == "generate" else f"|{scoring}"  # the paper's probe keeps the key it always had
    key = hashlib.sha256(f"{model.fingerprint}|{PROBE_VERSION}|{trials}|{seed}{tail}".encode()).hexdigest()[:20]
    path = Path(cache_dir) / "probe" / f"{key}.json"
    if path.exists():
        try:
            return ProbeResult(**json.loads(path.read_text()))
        except (json.JSONDecodeError, TypeError):
            pass  # a corrupt cache entry is re-probed
    res = run_probe(model, trials, seed, scoring=scoring)
    if (res.stage1 or {}).get("error") or any(t.get("error") for t in res.trials or []):
        return res  # a call that failed (bad key, wrong model id, empty response) is no verdict to keep
    write_json(path, res.to_dict())
    return res
