"""Ego-ADR online: a monitor that watches a recording window by window and raises typed error alerts.

The issue's setting (an assistive agent): no pre-cut clip, no name of the step. At each stride the monitor gets
the *latest* window of frames and nothing later (:meth:`OnlineMonitor.step`); it

1. narrates the window with the route's narration prompt, without step guidance (the pipeline's own
   "narrate first, then match" path for samples without an action text, Section 5.2);
2. localises the current step of the procedure bank from that narration with the same key-step matcher
   (TF-IDF 1-2-grams, difflib below tau; deep mode lets the model pick the step, as the pipeline does);
3. tracks progress through the steps: a confident jump past unseen steps, an earlier step turning up after a
   later one, or a step coming back after another are evidence in themselves (Wrong order, Unintended and
   unnecessary action); at the end of the recording, steps never seen are omissions;
4. classifies the window with the route's classifier (deep: a text-only LLM call with the matched context;
   shallow: the keyword vocabularies and the object check against the matched step).

The error probability of a window combines the classifier's and the progress evidence by noisy-or. Neither the
paper nor the classifier gives calibrated probabilities, so the mapping constants below are ours (named,
versioned by :data:`BELIEF_VERSION`, written into every run.json). An alert is raised when the probability
reaches ``threshold`` with a named error type, once per (blamed step, type).

Separation that makes resume and the no-look-ahead test exact: :meth:`observe` does the model calls and returns
plain evidence; :meth:`update` is a pure function of the state and that evidence. A run logs the evidence of
every tick; a resumed run replays the log through :meth:`update` without calling the model.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

from ego_adr.taxonomy import CORRECT

BELIEF_VERSION = "2"
# shallow: p = s / (s + 1.5), s = the winning type's keyword score (ego_adr.reasoning.classify): one explicit
# contrast in the narration ("the salt instead of the sugar", weight 1.5) or one hit in its anomaly line (weight 2)
# reaches the default threshold 0.5; a single bare keyword elsewhere (weight 1) gives 0.4 and does not.
KEYWORD_SCALE = 1.5
LLM_ERROR_P, LLM_CORRECT_P, UNPARSEABLE_P = 0.75, 0.10, 0.25  # deep / one-pass answers (ours, uncalibrated)
JUMP_P = 0.45  # a confident jump past unseen steps: Wrong order or an omission, not yet decidable
LATE_STEP_P = 0.70  # an unseen earlier step after a later one: the later one was done too early
REPEAT_P = 0.50  # a step done before comes back after another step
OMITTED_P = 0.70  # end of recording: a step before the last one reached was never seen
TRAILING_P = 0.50  # end of recording: a step never seen, none after it either (the recording may end early)
UNGUIDED_STEP = "unknown (describe what the person does)"  # the pipeline's step text for unguided narration
CONFIDENT_METHODS = ("tfidf", "model")  # a difflib fallback match is too weak to count as progress


@dataclass
class Alert:
    t: float  # seconds into the recording when the alert was raised
    step_index: int | None  # 0-based step of the procedure bank the alert blames
    step: str | None
    error_type: str
    prob: float
    evidence: dict = field(default_factory=dict)
    kind: str = "window"  # "window" (raised while watching) | "end" (at the end of the recording)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Tick:
    t: float
    window: tuple[float, float]
    prob: float
    error_type: str | None
    step_index: int | None = None
    step: str | None = None
    alerts: list[Alert] = field(default_factory=list)
    evidence: dict = field(default_factory=dict)
    failure: str | None = None
    final: bool = False
    # What the step tracking made of the window (the timeline draws it): the matcher's method ("tfidf", "model",
    # "difflib", ...) and whether the matched step counts as reached (a confident match, CONFIDENT_METHODS);
    # None for monitors that track no steps.
    match_method: str | None = None
    reached: bool | None = None

    def to_dict(self) -> dict:
        d = asdict(self)
        d["window"] = list(self.window)
        return d


def belief_from_classification(cls: dict | None) -> tuple[float, str | None]:
    """Error probability and type from a :class:`~ego_adr.reasoning.classify.Classification` as a dict."""
    if not cls:
        return 0.0, None
    option, method = cls.get("option"), cls.get("method")
    if method == "keywords" and option and option != CORRECT:
        s = max((cls.get("scores") or {}).values(), default=0.0)
        return s / (s + KEYWORD_SCALE), option
    if method == "llm":
        return (LLM_CORRECT_P, None) if option == CORRECT else (LLM_ERROR_P, option)
    if method == "unparseable":
        return UNPARSEABLE_P, None
    return 0.0, None  # no error keywords, or an empty answer


class OnlineMonitor:
    """The Ego-ADR online monitor. ``pipe`` is an :class:`~ego_adr.reasoning.pipeline.EgoADR` (its route,
    banks, matcher, prompts and model); :meth:`reset` with the task, :meth:`step` with each window."""

    name = "egoadr"
    tracks_steps = True

    def __init__(self, pipe, threshold: float = 0.5) -> None:
        self.pipe = pipe
        self.threshold = float(threshold)
        self.task_id: str | None = None

    def describe(self) -> dict:
        return {"monitor": self.name, "route": getattr(self.pipe, "route", None), "threshold": self.threshold,
                "belief_version": BELIEF_VERSION}

    # ---- episode state --------------------------------------------------------------------------------
    def reset(self, task_id: str, procedure: str, episode_id: str = "") -> None:
        from ego_adr.data.sample import Sample

        self.task_id, self.procedure, self.episode_id = task_id, procedure, episode_id
        self.sample = Sample(source="stream", task="stream", sample_id=f"stream/{episode_id or task_id}",
                             task_id=task_id, procedure=procedure, video_id=episode_id, video_path=None,
                             start=None, end=None, action=None, action_field="none")
        if self.pipe is not None and self.tracks_steps:
            self.pipe.banks.prepare({task_id: procedure})
            self.bank = self.pipe.bank_for(task_id, procedure)
        else:
            self.bank = None
        self.seen: dict[int, float] = {}  # step index -> first time seen
        self.current: int | None = None
        self.max_seen = -1
        self.raised: set[tuple] = set()
        self.alerts: list[Alert] = []

    # ---- model side: evidence of one window -------------------------------------------------------------
    def observe(self, frames) -> dict:
        """Model calls for one window; returns JSON-able evidence (narration, match, classification)."""
        from ego_adr.reasoning.pipeline import Item

        item = Item(self.sample, frames=frames)
        t0 = time.perf_counter()
        narration = self.pipe.narrate([item], [UNGUIDED_STEP])[0]
        ev = self._evidence_from_text(item, narration)
        ev["model_s"] = round(time.perf_counter() - t0, 4)
        return ev

    def observe_text(self, narration: str) -> dict:
        """Evidence from a narration given as text (symbolic streams, the reference-narration diagnostic)."""
        from ego_adr.reasoning.pipeline import Item

        return self._evidence_from_text(Item(self.sample), narration)

    def _evidence_from_text(self, item, narration: str | None) -> dict:
        from ego_adr.reasoning import prompts as P
        from ego_adr.reasoning.classify import classify_answer, classify_keywords
        from ego_adr.reasoning.probe import DEEP

        if item.failure or not (narration or "").strip():
            return {"narration": narration, "failure": item.failure or "empty narration"}
        m = self.pipe.match_steps([item], [narration])[0]
        ev: dict = {"narration": narration, "match": m.to_dict()}
        if self.pipe.route == DEEP:
            ctx = P.CONTEXT_MATCHED.render(action="none given (the step was matched from the window's narration)",
                                           previous=m.previous or "none (this is the first step)", step=m.step,
                                           next=m.next or "none (this is the last step)")
            req = self.pipe.text_request(P.CLASSIFY_DEEP, "classify", context=ctx, narration=narration,
                                          definitions=P.DEFINITIONS, options=P.OPTION_LIST)
            text = self.pipe.call_model([item], [req], "classify")[0]
            if text is None:
                return {**ev, "failure": item.failure}
            ev["classification"] = classify_answer(text).to_dict()
        else:
            ev["classification"] = classify_keywords(narration, self.bank.steps[m.index].objects).to_dict()
        return ev

    # ---- pure side: state update -------------------------------------------------------------------------
    def update(self, t: float, window: tuple[float, float], evidence: dict) -> Tick:
        """Fold one window's evidence into the state; returns the tick with any new alerts (no model calls). A
        failed window is a tick with its failure and no belief; otherwise :meth:`window_tick` reads the
        classification's belief and the match (the part a monitor built on this one changes)."""
        if evidence.get("failure"):
            return Tick(t, window, 0.0, None, evidence=evidence, failure=str(evidence["failure"]))
        p_cls, type_cls = belief_from_classification(evidence.get("classification"))
        tick = self.window_tick(t, window, evidence, p_cls, type_cls, evidence.get("match") or {})
        self._raise(tick, kind="window")
        return tick

    def window_tick(self, t: float, window: tuple[float, float], evidence: dict, p_cls: float,
                    type_cls: str | None, m: dict) -> Tick:
        """Ego-ADR's belief of one window: the classifier's and the progress evidence by noisy-or."""
        j = m.get("index")
        p_prog, type_prog, blame, why = self._progress(t, j, m.get("method"))
        prob = 1.0 - (1.0 - p_cls) * (1.0 - p_prog)
        if p_prog > p_cls:
            etype, step_index = type_prog, blame
        else:
            etype, step_index = type_cls, j
        tick = Tick(t, window, round(prob, 6), etype, step_index, self._text(step_index), evidence=evidence,
                    match_method=m.get("method"), reached=j is not None and m.get("method") in CONFIDENT_METHODS)
        if why:
            tick.evidence = {**evidence, "progress": why}
        return tick

    def _progress(self, t: float, j: int | None, method: str | None) -> tuple[float, str | None, int | None, str]:
        if j is None or method not in CONFIDENT_METHODS or j == self.current:
            return 0.0, None, None, ""
        p, etype, blame, why = 0.0, None, j, ""
        if j in self.seen:
            p, etype = REPEAT_P, "Unintended and unnecessary action"
            why = f"step {j + 1} again after step {(self.current or 0) + 1}"
        elif j > self.max_seen + 1:
            skipped = [i + 1 for i in range(self.max_seen + 1, j) if i not in self.seen]
            p, etype = JUMP_P, "Wrong order"
            why = f"step {j + 1} before unseen step(s) {skipped}"
        elif j < self.max_seen:
            early = min(i for i in self.seen if i > j)
            p, etype, blame = LATE_STEP_P, "Wrong order", early
            why = f"step {j + 1} only after step {early + 1}: step {early + 1} was done too early"
        self.seen.setdefault(j, t)
        self.current = j
        self.max_seen = max(self.max_seen, j)
        return p, etype, blame, why

    def finish(self, t_end: float) -> Tick:
        """End of the recording: steps never seen are omissions (before the last step reached: likely)."""
        tick = Tick(t_end, (t_end, t_end), 0.0, None, final=True)
        if self.bank is None:
            return tick
        tick.evidence = {"reached_steps": sorted(self.seen), "reached_at": {str(i): t for i, t in self.seen.items()},
                         "unseen_steps": [i for i in range(len(self.bank.steps)) if i not in self.seen]}
        best = None
        for i in range(len(self.bank.steps)):
            if i in self.seen:
                continue
            p = OMITTED_P if i < self.max_seen else TRAILING_P
            if best is None or p > best[0]:
                best = (p, i)
            if p >= self.threshold and (i, "Omission") not in self.raised:
                self.raised.add((i, "Omission"))
                a = Alert(t_end, i, self._text(i), "Omission", p,
                          {"reason": f"step {i + 1} never seen; steps reached: {sorted(x + 1 for x in self.seen)}"},
                          kind="end")
                tick.alerts.append(a)
                self.alerts.append(a)
        if best is not None:
            tick.prob, tick.error_type, tick.step_index = best[0], "Omission", best[1]
            tick.step = self._text(best[1])
        return tick

    def _raise(self, tick: Tick, kind: str) -> None:
        if tick.prob < self.threshold or not tick.error_type:
            return
        key = (tick.step_index, tick.error_type)
        if key in self.raised:
            return
        self.raised.add(key)
        ev = tick.evidence
        short = {k: ev[k] for k in ("progress",) if k in ev}
        if ev.get("narration"):
            short["narration"] = str(ev["narration"])[:300]
        cls = ev.get("classification") or {}
        if cls.get("evidence"):
            short["classifier"] = cls["evidence"][:3]
        if ev.get("match"):
            short["match"] = {k: ev["match"].get(k) for k in ("index", "score", "method")}
        a = Alert(tick.t, tick.step_index, tick.step, tick.error_type, tick.prob, short, kind)
        tick.alerts.append(a)
        self.alerts.append(a)

    def _text(self, i: int | None) -> str | None:
        if i is None or self.bank is None or not 0 <= i < len(self.bank.steps):
            return None
        return self.bank.steps[i].text

    def step(self, t: float, window: tuple[float, float], frames) -> Tick:
        """One stride: observe the latest window (model calls), then update the state."""
        return self.update(t, window, self.observe(frames))
