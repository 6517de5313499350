"""``prego-lm``: next-step likelihood monitoring with any causal language model, used the way a small one works.

PREGO (:mod:`.prego`) asks an LLM to write the next symbol and flags a step outside what it wrote. Through a chat
template a small model does not answer that question: SmolLM2-135M replies with the start symbol at every step of
EPIC-Tent-O, a constant predictor (docs/real_models.md). The same weights continuing the step sequence as raw text
rank the next step well (``../shared/STACK-NOTES.md``, fourth pass). So here the model is never asked to write:

- the prompt is PREGO's numeric prompt form as raw text, no chat template: the in-context examples of the
  recording's task (:mod:`.prego_prompt`: on EPIC-Tent-O every training sequence, on Assembly101-O those of the
  recording's toy, none for a toy without training recordings, as PREGO's code does), the query's type line, and
  the observed sequence ``-1, s1, ..., st`` continued by ``, ``; with ``form=names`` the same with each step
  written as its name from the benchmark's taxonomy (``start, insert stake, ...``), for any benchmark whose
  taxonomy has text;
- every step of the taxonomy is a candidate continuation, scored by its log-likelihood
  (:meth:`ego_adr.models.cache.CachedModel.loglikelihood`: through the stage cache, on any backend that gives
  token probabilities); a candidate whose text starts another's gets the separator after it (``1,`` beside
  ``12``), and the likelihoods are renormalised over the candidates: ``P(step | prefix)``;
- ``p_error = 1 - P(observed)``; the alarm is a threshold on the surprisal or the margin below the most likely
  step, both chosen as every other learned step-stream monitor chooses them (:func:`.likelihood.choose`): on
  constructed mistakes of held-out training recordings, the in-context examples of each fold being that fold's
  training recordings (:mod:`ego_adr.online_mistakes.cv`), never on a test recording. A benchmark with a labelled
  validation split of its own (CaptainCook4D: :mod:`ego_adr.captaincook4d.evaluate` chooses every monitor's
  thresholds there) builds it with ``folds=0``: no cross-validation, no alarm of its own, ``p_error`` only;
- option ``candidates``: ``taxonomy`` (default) scores every step of the taxonomy; ``task`` only the steps of the
  recording's task (its recipe's steps on CaptainCook4D, and the steps of no task, CaptainCook4D's END), for a
  benchmark whose training set lists each task's steps (``recipe_steps``). The task is task input, so this reads
  nothing more; it is recorded as a deviation (PREGO's symbols range over the whole taxonomy). Why: CaptainCook4D's
  taxonomy holds every recipe's steps, and scoring them all at every step costs several times a recipe's (timed
  by ``scripts/bench_real_prego.py --cost-steps``, docs/real_models.md).

It needs a model (``needs_model``), so it is never the monitor chosen without the test. Each step's evidence holds
the most likely step (``expected``) and the observed step's probability; ``metrics.json`` adds the top-1 next-step
accuracy on the correct steps (``next_step_top1``).
"""

from __future__ import annotations

import math

import numpy as np

from ego_adr.errors import InfrastructureError, UserError
from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.monitoring.registry import MonitorOption
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.monitors import prego_prompt as PP
from ego_adr.online_mistakes.monitors.likelihood import choose
from ego_adr.online_mistakes.types import StepContext, TrainingSet

FORMS = ("symbols", "names")
POOLS = ("taxonomy", "task")
SEPARATOR = ","
UNSEEN = -50.0  # the log-probability of a step outside the taxonomy: no candidate, never the likely one
META = {"stage": "prego_lm", "prompt": "prego_lm_next_step", "prompt_version": "1"}
TASK_POOL = ("only the steps of the recording's task (and the steps of no task) are candidates "
             "(candidates=task), where PREGO's symbols range over the whole taxonomy")
GIVEN_THRESHOLD = ("a step is flagged by a threshold on 1 - P(observed) that the benchmark chooses on its labelled "
                   "validation split (folds=0), where PREGO flags a step outside the generated set")
DEVIATIONS = (
    "candidate steps scored by their likelihood as a raw-text continuation of the step sequence, where PREGO "
    "generates the next symbol; no chat template",
    "a step is flagged by a threshold on its surprisal (or margin) chosen by cross-validation on the training "
    "recordings, where PREGO flags a step outside the generated set",
)


class PregoLM(Monitor):
    """See the module docstring. ``model``: a :class:`~ego_adr.models.cache.CachedModel` whose backend gives
    token probabilities (``--backend llamacpp`` or ``hf``; ``openai`` where the server returns them)."""

    OPTIONS = (MonitorOption("form", str, FORMS[0], "symbols = PREGO's numeric symbols, names = the taxonomy's step "
                             "names", FORMS),
               MonitorOption("candidates", str, POOLS[0], "taxonomy = every step a candidate, task = the steps of the "
                             "recording's task (CaptainCook4D: its recipe's) and END", POOLS))

    def __init__(self, model=None, form: str = FORMS[0], seed: int = 0, folds: int = 5,
                 candidates: str = POOLS[0], progress: bool = False) -> None:
        if model is None:
            raise ValueError("prego-lm needs a model (--model NAME; --backend llamacpp or hf)")
        if form not in FORMS:
            raise ValueError(f"option form={form!r} is not one of {', '.join(FORMS)}")
        if candidates not in POOLS:
            raise ValueError(f"option candidates={candidates!r} is not one of {', '.join(POOLS)}")
        self.lm, self.form, self.seed, self.k, self.pool = model, form, seed, folds, candidates
        self.progress = progress  # a bar over the cross-validation's prefixes (the command's, unless --quiet)
        self.calls = 0
        self.selection: dict = {}
        self.deviations = [DEVIATIONS[0], DEVIATIONS[1] if folds else GIVEN_THRESHOLD] + [TASK_POOL] * (
            candidates == "task")

    @staticmethod
    def check_model(model) -> None:
        """Before the output folder is claimed: the model scores candidates (one short request, cached), or a
        :class:`UserError` saying why not (a video model, a backend without token probabilities)."""
        from ego_adr.models.likelihood import LikelihoodRequest

        try:
            res = model.loglikelihood([LikelihoodRequest("1, 2, 3,", (" 4", " 5"), dict(META))])[0]
        except ValueError as e:
            raise UserError(f"--monitor prego-lm: {e}") from None
        if not res.ok and not res.retryable:
            raise UserError(f"--monitor prego-lm: {model.model_id} cannot score candidates ({res.error})")

    # --- the prompt ----------------------------------------------------------------------------------------------
    def _word(self, step: int) -> str:
        return self.words[step] if self.form == "names" else str(step)

    def _line(self, prefix) -> str:
        return ", ".join([PP.line(())] if self.form == "symbols" else ["start"]) + "".join(
            f", {self._word(s)}" for s in prefix)

    def _examples(self, seqs, tasks) -> dict:
        """The examples' text per task (a key None: every sequence, for a benchmark without tasks)."""
        by: dict = {}
        for s, t in zip(seqs, tasks):
            by.setdefault(t, []).append(s)
        if self.form == "symbols":
            return {t: PP.examples(t, ss, "query") for t, ss in by.items()}
        return {t: "".join(f"{f'Sequence type: {t}' + chr(10) if t else ''}Input Sequence:\n {self._line(s[:-1])}\n"
                           f"Next Symbol:\n {self._word(s[-1])}\n---\n" for s in ss) for t, ss in by.items()}

    def _prefix(self, examples: dict, task, prefix) -> str:
        return (examples.get(task, "") + PP.header(self.benchmark, task, PP.PROMPT_DEFAULTS)
                + f"Input Sequence:\n {self._line(prefix)}{SEPARATOR} ")

    # --- fitting -------------------------------------------------------------------------------------------------
    def _task(self, video: str):
        return None if self.benchmark == "epic-tent-o" else PP.task_of(video)

    def fit(self, train: TrainingSet) -> None:
        self.benchmark = train.benchmark
        self.steps = sorted(int(s) for s in train.taxonomy)
        self.index = {s: i + 1 for i, s in enumerate(self.steps)}
        self.words = {s: " ".join(str(train.taxonomy[s]).replace("_", " ").replace("-", " ").split())
                      for s in self.steps}
        if self.form == "names" and (len(set(self.words.values())) < len(self.steps) or not all(self.words.values())
                                     or all(w == str(s) for s, w in self.words.items())):
            raise UserError(f"prego-lm form=names needs a distinct name for every step; {train.benchmark}'s taxonomy "
                            "has none (use form=symbols)")
        from ego_adr.models.likelihood import prefix_free

        self.candidates = tuple(prefix_free([self._word(s) for s in self.steps], SEPARATOR))
        self.pools = {t: (steps, tuple(prefix_free([self._word(s) for s in steps], SEPARATOR)))
                      for t, steps in self._pools(train).items()}
        keep = [i for i, s in enumerate(train.sequences) if s]
        seqs = [tuple(int(x) for x in train.sequences[i]) for i in keep]
        tasks = [self._task(train.videos[i]) if train.videos else None for i in keep]
        chosen = self._cross_validate(train, seqs, tasks) if self.k else {
            "chosen_by": "not here: the benchmark chooses the threshold on its labelled validation split (folds=0)"}
        self.examples = self._examples(seqs, tasks)
        shown = list(self.candidates) if not self.pools else {str(t): list(c) for t, (_, c) in self.pools.items()}
        self.files = {"prompts.json": {"prompt": META["prompt"], "form": self.form, "candidates": shown,
                                       "examples": {str(t): v for t, v in self.examples.items()}}}
        hyper = {"form": self.form, "examples": "same task", "separator": SEPARATOR}
        self.selection = {
            "recipe": "raw-text continuation of PREGO's prompt form, every step a candidate scored by its likelihood; "
                      + ("score and threshold by constructed validation mistakes (" + cv.OBJECTIVE + "), each fold's "
                         "examples its own training recordings" if self.k else "1 - P(observed) as p_error"),
            "hyper_parameters": hyper | ({"candidates": self.pool} if self.pools else {}), **chosen}

    def _pools(self, train: TrainingSet) -> dict:
        """``candidates=task``: each task's candidate steps (its own, and those of no task); {} for the taxonomy."""
        if self.pool == POOLS[0]:
            return {}
        lists = getattr(train, "recipe_steps", None)
        if not lists:
            raise UserError(f"prego-lm candidates=task needs a benchmark that lists each task's steps (CaptainCook4D's "
                            f"recipes); {train.benchmark} does not: use candidates=taxonomy")
        listed = {int(s) for v in lists.values() for s in v}
        free = [s for s in self.steps if s not in listed]
        return {t: tuple(sorted({*(int(s) for s in v), *free})) for t, v in lists.items()}

    def _cross_validate(self, train: TrainingSet, seqs: list, tasks: list) -> dict:
        """The score and threshold chosen on constructed mistakes of held-out training recordings (module
        docstring); what the selection records."""
        plan = cv.plan(train.benchmark, seqs, self.steps, self.k, self.seed, train.noise)
        val = cv.validation(seqs, plan)
        asks = [(j, tasks[e.source], e.steps[:i]) for j, (_, eps) in enumerate(val) for e in eps
                for i in range(len(e.steps))]
        fold_examples = [self._examples([seqs[i] for i in fit], [tasks[i] for i in fit]) for fit, _ in val]
        got = self._ask({(j, t, p): self._prefix(fold_examples[j], t, p) for j, t, p in asks}, "prego-lm validation")
        scores = [_scores(got[j, tasks[e.source], e.steps[:i]], self.index.get(x, 0))
                  for j, (_, eps) in enumerate(val) for e in eps for i, x in enumerate(e.steps)]
        y = np.concatenate([cv.episode_labels(eps) for _, eps in val])
        c = choose(y, {k: np.array([s[k] for s in scores]) for k in ("surprisal", "margin")})
        self.score, self.threshold, self.points = c.score, c.threshold, c.points
        return {"folds": [list(f) for f, _ in val], "validation": cv.describe(plan, val),
                "candidates": {"score": ["surprisal", "margin"]},
                "chosen": {"score": c.score, "threshold": round(c.threshold, 6)}, **c.record,
                "chosen_by": "cross-validation on the training recordings (never a test recording)"}

    def _ask(self, prefixes: dict, label: str) -> dict:
        """log P(step | prefix) over the taxonomy for each key of ``prefixes`` (key -> prompt text), asked in text
        order so a server's prompt cache keeps each recording's growing prefix."""
        from tqdm import tqdm

        from ego_adr.models.likelihood import LikelihoodRequest

        order = sorted(prefixes, key=lambda k: prefixes[k])
        out = {}
        for k in tqdm(order, desc=label, unit="prefix", disable=not self.progress):
            out[k] = self._dist(LikelihoodRequest(prefixes[k], self._pool(k[1])[1], dict(META)), k[1])
        return out

    def _pool(self, task) -> tuple[tuple[int, ...] | None, tuple[str, ...]]:
        """The candidate steps of ``task`` (None: every step) and their texts; a task the benchmark does not list
        gets the whole taxonomy."""
        return self.pools.get(task, (None, self.candidates))

    def _dist(self, request, task=None) -> np.ndarray:
        """log P(step | prefix) for every step of the taxonomy (index 0: a step outside it); a step outside the
        task's candidates gets :data:`UNSEEN`."""
        from ego_adr.models.likelihood import normalised

        try:
            res = self.lm.loglikelihood([request])[0]
        except ValueError as e:  # a backend without token probabilities
            raise UserError(f"prego-lm: {e}") from None
        self.calls += 1
        if res.retryable:
            raise InfrastructureError(f"{self.lm.model_id} failed ({res.error}); nothing was recorded: rerun the same "
                                      "command (the likelihoods so far are cached)")
        if not res.ok:  # e.g. a video model, or a prompt longer than the model's context: nothing partial is kept
            raise UserError(f"prego-lm: {self.lm.model_id} could not score the candidates: {res.error}")
        steps = self._pool(task)[0]
        if steps is None:
            return np.r_[UNSEEN, normalised(res.logprobs)]
        out = np.full(len(self.steps) + 1, UNSEEN)
        out[[self.index[s] for s in steps]] = normalised(res.logprobs)
        return out

    # --- streaming -----------------------------------------------------------------------------------------------
    def reset(self, ctx: StepContext) -> None:
        if not hasattr(self, "examples"):
            raise RuntimeError("prego-lm: fit() must run before streaming")
        self.task = self._task(ctx.video)
        self.prefix: list[int] = []

    def step(self, t: int, step_id: int) -> StepOutput:
        lp = self._dist(self._request(), self.task)
        sc = _scores(lp, self.index.get(int(step_id), 0))
        self.prefix.append(int(step_id))
        p_obs, best = math.exp(-sc["surprisal"]), int(np.argmax(lp[1:]))
        if not self.k:  # folds=0: p_error only, the benchmark chooses the threshold
            ev = {"p_step": round(p_obs, 4), "expected": self.steps[best], "p_expected": round(math.exp(lp[best + 1]), 4)}
            return StepOutput(1.0 - p_obs, onset=t, evidence=ev)
        value = sc[self.score]
        ev = {"score": self.score, "value": round(value, 4), "threshold": round(self.threshold, 4),
              "p_step": round(p_obs, 4), "expected": self.steps[best], "p_expected": round(math.exp(lp[best + 1]), 4)}
        return StepOutput(1.0 - p_obs, onset=t, evidence=ev, flagged=value >= self.threshold,
                          flagged_for={k: value >= thr for k, thr in self.points.items()})

    def _request(self):
        from ego_adr.models.likelihood import LikelihoodRequest

        return LikelihoodRequest(self._prefix(self.examples, self.task, self.prefix), self._pool(self.task)[1],
                                 dict(META))

    def summarise(self, rows: list[dict]) -> dict:
        """The top-1 next-step accuracy on the correct steps (label 0): how often the most likely step was the one
        done."""
        ok = [r for r in rows if not r["label"]]
        hits = sum(r["evidence"]["expected"] == r["step_id"] for r in ok)
        return {"next_step_top1": {"accuracy": round(hits / len(ok), 4) if ok else None, "hits": hits,
                                   "correct_steps": len(ok)}}

    def stats(self) -> dict:
        n = len(self.candidates) if not self.pools else {str(t): len(c) for t, (_, c) in self.pools.items()}
        return {"likelihood_calls": self.calls, "candidates": n, "form": self.form,
                "model_calls": getattr(self.lm, "model_calls", None), "cache_hits": getattr(self.lm, "cache_hits", None),
                "model": self.lm.model_id}


def _scores(lp: np.ndarray, cls: int) -> dict[str, float]:
    return {"surprisal": float(-lp[cls]), "margin": float(lp[1:].max() - lp[cls])}
