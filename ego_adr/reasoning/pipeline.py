"""The Ego-ADR pipeline: procedure bank -> key-step match -> narration -> classification (paper Section 5).

One pipeline serves every mode; the ablations of Tables 5 and 6 are switches on it, never copies:
``mode`` (auto / deep / shallow / cot / direct), ``match`` and ``narration`` on or off, the narration source
(model or the annotations' reference text), and the number of frames. Samples are processed a batch at a
time, stage by stage, so a batching backend sees one batch per stage. Every stage's output is plain data and
lands in the sample's row under ``stages``; a failure of one sample is recorded on its row and never stops
the others.
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ego_adr.data.sample import Sample
from ego_adr.models.base import VLM, Frames, GenerationConfig, Message, Request, black_frames
from ego_adr.reasoning import prompts as P
from ego_adr.reasoning.answers import Answer, mapped_answer
from ego_adr.reasoning.banks import BankStore
from ego_adr.reasoning.classify import Classification, classify_keywords
from ego_adr.reasoning.config import MODES as MODES
from ego_adr.reasoning.config import NARRATION_SOURCES as NARRATION_SOURCES
from ego_adr.reasoning.config import PipelineConfig
from ego_adr.reasoning.embed_matching import describe_matcher, load_cached_embedder, make_matcher
from ego_adr.reasoning.matching import KeyStepMatcher, StepMatch
from ego_adr.reasoning.modes import MODES as MODE_SPECS
from ego_adr.reasoning.one_pass import one_pass_answer, one_pass_requests
from ego_adr.reasoning.probe import DEEP, SHALLOW, ProbeResult, cached_probe
from ego_adr.reasoning.step_context import step_context


@dataclass
class Item:
    """One sample on its way through the pipeline."""

    sample: Sample
    frames: Frames | None = None
    frames_error: str | None = None
    frames_info: dict = field(default_factory=dict)
    stages: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    failure: str | None = None
    result: Classification | None = None
    answer: Answer | None = None


class EgoADR:
    def __init__(self, model: VLM | None, config: PipelineConfig | None = None, cache_dir: Path | None = None,
                 route: str | None = None, bank_model=None) -> None:
        """``bank_model``: the VLM that builds deep-mode procedure banks, or a zero-argument function that loads
        it when a bank is first needed (reasoning/bank_model.py); None = the evaluated model."""
        self.model = model
        self.config = config or PipelineConfig()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.probe: ProbeResult | None = None
        self.route = route or self._resolve_route()
        bank_model = bank_model if bank_model is not None else model
        builder = self.config.bank_builder
        model_bank = bank_model is not None and (builder == "model" or (builder == "auto" and self.route == DEEP))
        self.banks = BankStore(self.cache_dir, bank_model if model_bank else None, self.config.bank_max_new_tokens)
        self._matchers: dict[tuple, KeyStepMatcher] = {}
        # --matcher minilm: the embedding model, loaded now so that a missing package stops before any sample
        self._embedder = (load_cached_embedder(self.config.matcher, self.cache_dir)
                          if self.config.matcher != "tfidf" else None)

    # ---- routing -------------------------------------------------------------------------------------
    def _resolve_route(self) -> str:
        mode = self.config.mode
        if mode != "auto":
            return mode
        if self.model is None:
            return SHALLOW
        self.probe = cached_probe(self.model, self.cache_dir, self.config.probe_trials, self.config.seed,
                                  self.config.scoring)
        return self.probe.route

    @property
    def needs_frames(self) -> bool:
        if MODE_SPECS[self.route].one_pass:
            return True
        if self.config.narration and self.config.narration_source == "reference":
            return False
        return True

    # ---- model calls ------------------------------------------------------------------------------
    def _gen(self, stage: str = "") -> GenerationConfig:
        if stage in MODE_SPECS:  # a one-pass mode's only call: its own budget rule (ModeSpec.budget)
            return GenerationConfig(max_new_tokens=MODE_SPECS[stage].budget(self.config.max_new_tokens,
                                                                            self.config.one_pass_max_new_tokens))
        return GenerationConfig(max_new_tokens=self.config.max_new_tokens)

    # ---- the stages, public: the online monitor (reasoning/online.py) and the video baselines (stream/) run them
    # one window at a time, outside process()
    def text_request(self, prompt: P.Prompt, stage: str, **fields) -> Request:
        """A text-only request of ``stage`` (a black frame for a model that cannot take text alone)."""
        parts: list = [prompt.render(**fields)]
        if self.model is not None and not self.model.capabilities.text_only:
            parts.insert(0, black_frames())
        return Request([Message.user(*parts)], self._gen(stage), prompt.meta(stage))

    def _video_request(self, frames: Frames, prompt: P.Prompt, stage: str, **fields) -> Request:
        return Request([Message.user(frames, prompt.render(**fields))], self._gen(stage), prompt.meta(stage))

    def call_model(self, items: list[Item], reqs: list[Request], stage: str, fatal: bool = True) -> list[str | None]:
        """Send one batch; a failed request fails its own item only (or nothing when ``fatal`` is False,
        for stages with a fallback)."""
        if not reqs:
            return []
        if self.model is None:
            raise RuntimeError(f"stage {stage} needs a model, but the pipeline has none")
        t0 = time.perf_counter()
        gens = self.model.generate(reqs)
        wall = time.perf_counter() - t0
        out: list[str | None] = []
        for it, g in zip(items, gens):
            # model seconds are keyed model_<stage>_s; a pre-narration and the narration add up
            key = f"model_{stage}_s"
            it.timings[key] = round(it.timings.get(key, 0.0) + (g.seconds or wall / len(reqs)), 4)
            if not g.ok:
                if fatal:
                    it.failure = it.failure or f"model_error[{stage}]: {g.error}"
                else:
                    it.stages[f"{stage}_error"] = g.error
                out.append(None)
            else:
                out.append(g.text)
        return out

    # ---- stages -----------------------------------------------------------------------------------
    def bank_for(self, task_id: str, procedure: str):
        return self.banks.for_task(task_id, procedure)

    def matcher(self, bank) -> KeyStepMatcher:
        """The key-step matcher of ``bank`` (one per bank and matcher kind, built once)."""
        key = (bank.task_id, bank.builder, len(bank.steps), self.config.matcher)
        if key not in self._matchers:
            kind = self.config.matcher
            self._matchers[key] = make_matcher(kind, bank.texts, tau=self.config.tau, embedder=self._embedder)
        return self._matchers[key]

    def match_steps(self, items: list[Item], queries: list[str]) -> list[StepMatch]:
        """Each query (an action text or a narration) matched to a step of its item's procedure bank; deep mode
        with model matching lets the model pick the step (a failed call keeps the TF-IDF match)."""
        matches = []
        for it, q in zip(items, queries):
            bank = self.bank_for(it.sample.task_id, it.sample.procedure)
            matches.append(self.matcher(bank).match(q))
        if self.route == DEEP and self.config.model_match and self.model is not None:
            reqs, idx = [], []
            for i, (it, q) in enumerate(zip(items, queries)):
                bank = self.bank_for(it.sample.task_id, it.sample.procedure)
                steps = "\n".join(f"{s.index + 1}. {s.text}" for s in bank.steps)
                reqs.append(self.text_request(P.MATCH_SELECT, "match", steps=steps, action=q))
                idx.append(i)
            sub = [items[i] for i in idx]
            for i, text in zip(idx, self.call_model(sub, reqs, "match", fatal=False)):
                n = _first_int(text)
                bank = self.bank_for(items[i].sample.task_id, items[i].sample.procedure)
                if n is not None and 1 <= n <= len(bank.steps):  # its confidence: the action's cosine with it
                    matcher = self.matcher(bank)
                    cosine = matcher.tfidf_scores(queries[i])[n - 1] if queries[i].strip() else 0.0
                    matches[i] = matcher.at(n - 1, cosine, "model", matches[i].tfidf_score)
                items[i].stages.setdefault("match_model_raw", text)
        return matches

    def narrate(self, items: list[Item], contexts: list[str]) -> list[str | None]:
        """The route's narration of each item's frames with its step context (None where the item failed)."""
        if self.config.narration_source == "reference":
            return [it.sample.reference or it.sample.action for it in items]
        prompt = P.NARRATE_DEEP if self.route == DEEP else P.NARRATE_SHALLOW
        live = [i for i, it in enumerate(items) if it.failure is None]
        reqs = [self._video_request(items[i].frames, prompt, "narrate", context=contexts[i]) for i in live]
        out: list[str | None] = [None] * len(items)
        for i, text in zip(live, self.call_model([items[i] for i in live], reqs, "narrate")):
            out[i] = text
        return out

    # ---- the whole thing ------------------------------------------------------------------------------
    def process(self, items: list[Item]) -> list[dict]:
        """Run every stage on a batch of items and return one predictions row per item."""
        for it in items:
            if it.failure is not None:  # already failed upstream (e.g. a data problem): keep that reason
                continue
            if it.frames_error and self.needs_frames:
                it.failure = f"video: {it.frames_error}"
            elif it.frames is None and self.needs_frames:
                it.failure = "video: no frames"
            if not it.sample.procedure:
                it.failure = it.failure or "data: no procedure text for this task"
        live = [it for it in items if it.failure is None]
        if MODE_SPECS[self.route].one_pass:
            self.answer_one_pass(live)
        else:
            self._decoupled(live)
        return [self._row(it) for it in items]

    def answer_one_pass(self, items: list[Item]) -> None:
        """The baselines send the model's raw reply (the public white agent); ``answers=lenient`` maps it."""
        spec = MODE_SPECS[self.route] if MODE_SPECS[self.route].one_pass else MODE_SPECS["direct"]
        stage = spec.name
        reqs = one_pass_requests(self.config, [(it.sample, it.frames) for it in items], stage, self._gen(stage))
        for it, r in zip(items, reqs):  # what was sent (CoT and direct differ in it, under both protocols)
            it.stages["prompt"] = {"name": r.meta["prompt"], "version": r.meta["prompt_version"]}
        for it, text in zip(items, self.call_model(items, reqs, stage)):
            if text is not None:
                it.answer = one_pass_answer(stage, text, self.config.answers)
                it.result = Classification(it.answer.option, "llm" if it.answer.option else "unparseable", text)

    def _classified(self, item: Item, text: str) -> None:
        """Ego-ADR's classifier output mapped to an option (method side; the rule is recorded)."""
        item.answer = mapped_answer(text)
        item.result = Classification(item.answer.option, "llm" if item.answer.option else "unparseable", text)

    def choose_by_likelihood(self, items: list[Item], reqs: list[Request]) -> None:
        """``--scoring likelihood`` (a named deviation; the paper generates): every option scored as the start of
        the classifier's reply to the same prompt, the most likely one taken; the log-likelihoods are the
        classification's ``scores``. A failed call fails its item only."""
        from ego_adr.models.likelihood import LikelihoodRequest
        from ego_adr.taxonomy import OPTIONS

        if self.model is None:
            raise RuntimeError("the classifier needs a model, but the pipeline has none")
        got = self.model.loglikelihood([LikelihoodRequest(r.messages, OPTIONS, dict(r.meta)) for r in reqs])
        for it, res in zip(items, got):
            it.timings["model_classify_s"] = round(it.timings.get("model_classify_s", 0.0) + res.seconds, 4)
            if not res.ok:
                it.failure = it.failure or f"model_error[classify]: {res.error}"
                continue
            best = OPTIONS[max(range(len(OPTIONS)), key=lambda k: res.logprobs[k])]
            it.answer = Answer(best, best, "likelihood")
            scores = dict(zip(OPTIONS, (round(x, 4) for x in res.logprobs)))
            it.result = Classification(best, "likelihood", None, scores)

    def _decoupled(self, items: list[Item]) -> None:
        cfg = self.config
        if cfg.match:  # without key-step matching there is no procedure bank to build
            self.banks.prepare({it.sample.task_id: it.sample.procedure for it in items})
        # Key-step match. Without an action text (Epic-Tent "unknown action", EgoOops without a usable index),
        # the step is found from a narration made without step guidance.
        need_first = [it for it in items if not it.sample.action and cfg.match]
        if need_first and cfg.narration_source == "model":
            unknown = "Annotated action: unknown (describe what the person does)"
            pre = self.narrate(need_first, [unknown] * len(need_first))
            for it, text in zip(need_first, pre):
                it.stages["pre_narration"] = text
        queries = [it.sample.action or it.stages.get("pre_narration") or it.sample.reference or "" for it in items]
        t0 = time.perf_counter()
        if cfg.match:
            matches = self.match_steps(items, queries)
            for it, m in zip(items, matches):
                it.stages["match"] = {**m.to_dict(), "query": it.sample.action and "action" or "narration"}
                it.timings.setdefault("tfidf_match_s", round((time.perf_counter() - t0) / max(1, len(items)), 5))
            steps = [m.step for m in matches]
            objects = [self.bank_for(it.sample.task_id, it.sample.procedure).steps[m.index].objects
                       for it, m in zip(items, matches)]
            contexts = []
            for it, m, objs in zip(items, matches, objects):  # deep: objects and confidence too (App. G)
                text, recorded = step_context(it.sample.action, m, objs, deep=self.route == DEEP)
                contexts.append(text)
                it.stages["match"].update(recorded)
            for it in items:
                bank = self.bank_for(it.sample.task_id, it.sample.procedure)
                it.stages["bank"] = bank.builder
                if bank.note:
                    it.stages["bank_note"] = bank.note
        else:
            steps = [it.sample.action or "unknown" for it in items]
            contexts = [P.CONTEXT_FULL.render(procedure=it.sample.procedure, step=s) for it, s in zip(items, steps)]
            objects = [[] for _ in items]
        live = [i for i, it in enumerate(items) if it.failure is None]
        if not cfg.narration:
            if not cfg.match:  # Table 6 row 1 is the one-pass baseline
                self.answer_one_pass([items[i] for i in live])
                return
            reqs = [self._video_request(items[i].frames, P.CLASSIFY_FRAMES, "classify", context=contexts[i],
                                        definitions=P.DEFINITIONS, options=P.OPTION_LIST) for i in live]
            for i, text in zip(live, self.call_model([items[i] for i in live], reqs, "classify")):
                if text is not None:
                    self._classified(items[i], text)
            return
        narrations = self.narrate([items[i] for i in live], [contexts[i] for i in live])
        for i, text in zip(live, narrations):
            items[i].stages["narration"] = text
        live = [i for i in live if items[i].failure is None]
        if MODE_SPECS[self.route].classifier == "keywords":
            for i in live:
                t = time.perf_counter()
                res = classify_keywords(items[i].stages.get("narration"), objects[i])
                items[i].result = res
                items[i].answer = Answer(res.option, res.option, res.method)
                items[i].timings["keywords_s"] = round(time.perf_counter() - t, 5)
            return
        reqs = [self.text_request(P.CLASSIFY_DEEP, "classify", context=contexts[i],
                                   narration=items[i].stages.get("narration") or "(no description)",
                                   definitions=P.DEFINITIONS, options=P.OPTION_LIST) for i in live]
        if cfg.scoring == "likelihood":
            self.choose_by_likelihood([items[i] for i in live], reqs)
            return
        for i, text in zip(live, self.call_model([items[i] for i in live], reqs, "classify")):
            if text is not None:
                self._classified(items[i], text)

    def _row(self, it: Item) -> dict:
        s = it.sample
        res = it.result
        failure = it.failure
        if failure is None and res is None:
            failure = "no answer"
        elif failure is None and it.answer is not None and it.answer.answer is None:
            # the method concluded nothing (e.g. an empty shallow narration): nothing would go on the wire
            failure = f"no answer ({it.answer.extraction})"
        elif failure is None and res is not None and res.option is None:
            # the model answered, but nothing maps to an option (an empty answer included): the public evaluator
            # counts such text as an error prediction, so it is "unparseable", never "no answer"
            failure = "unparseable"
        stages = dict(it.stages)
        if res is not None:
            stages["classification"] = res.to_dict()
        ans = it.answer
        frames_info = dict(it.frames_info)
        if it.frames is not None:
            frames_info["clip_fps"] = float(it.frames.fps)  # the rate the model's processor is given
            if hasattr(it.frames, "message_fps"):  # public: what the white agent writes (and its processor drops)
                frames_info["clip_fps_message"] = it.frames.message_fps
        return {
            "sample_id": s.sample_id,
            "source": s.source,
            "task_id": s.task_id,
            "video_id": s.video_id,
            "window": [s.start, s.end],
            "action": s.action,
            "ground_truth": list(s.ground_truth),
            "prediction": res.option if res is not None and failure is None else None,
            "failure": failure,
            "answer": ans.answer if ans is not None and it.failure is None else None,  # what goes on the wire
            "extraction": ans.extraction if ans is not None and it.failure is None else None,
            "raw": res.raw if res is not None else None,
            "route": self.route,
            "mode": self.config.mode,
            "frames": self.config.frames,
            "frames_info": frames_info,
            "stages": stages,
            "timings": it.timings,
        }

    def answer_open(self, items: list[Item], questions: list[str]) -> list[dict]:
        """Open-ended VQA (Section 3.2): procedure + question + clip -> a prose answer, one per item."""
        out = [{"answer": None, "failure": None} for _ in items]
        for it in items:
            if it.frames is None:
                it.failure = f"video: {it.frames_error or 'no frames'}"
        live = [i for i, it in enumerate(items) if it.failure is None]
        reqs = [self._video_request(items[i].frames, P.OPEN_END, "open_end", procedure=items[i].sample.procedure,
                                    question=questions[i]) for i in live]
        for i, text in zip(live, self.call_model([items[i] for i in live], reqs, "open_end")):
            out[i]["answer"] = text
        for o, it in zip(out, items):
            o["failure"] = it.failure or (None if o["answer"] and o["answer"].strip() else "empty answer")
            o["timings"] = it.timings
            o["frames_info"] = it.frames_info
        return out

    def describe(self) -> dict:
        config = {k: v for k, v in asdict(self.config).items() if k != "guidance"}  # its sha is kept
        return {"route": self.route, "config": config,
                "probe": self.probe.to_dict() if self.probe else None, "prompts": P.VERSIONS,
                "matcher": describe_matcher(self.config.matcher, self.config.tau, self._embedder)}


def _first_int(text: str | None) -> int | None:
    m = re.search(r"\d+", text or "")
    return int(m.group(0)) if m else None
