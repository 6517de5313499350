"""Open-ended VQA run (paper Section 3): procedure + question + clip -> answer; then two LLM judges score it.

Answers go to ``predictions.jsonl`` and judgements to ``judgements.jsonl``, both append-only and resumable;
judge calls go through the stage cache, so re-scoring with the same judges never asks them again.
With the embedded demo (no ``--model``) and the default judges, two tiny random text LMs stand in for the 7B
judges so the whole path runs offline; the report says so.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from pathlib import Path

from ego_adr.data.sample import Sample
from ego_adr.models.registry import is_tiny
from ego_adr.run.config import RunConfig

DEFAULT_JUDGE_NAMES = ["qwen2.5-7b-instruct", "deepseek-llm-7b-chat"]
TINY_JUDGES = "two tiny random text LMs stand in for the default judges (offline demo)"  # the report's line
EMPTY_ANSWER = "empty answer"  # the failure note reasoning.pipeline.answer_open writes on a blank reply


def _hub_offline() -> bool:
    """True when the Hugging Face hub cannot be used: ``HF_HUB_OFFLINE`` set, or its host not reachable within
    3 s (one TCP connect, no request)."""
    import os
    import socket
    from urllib.parse import urlparse

    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        return True
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection((url.hostname or "huggingface.co", url.port or 443), timeout=3).close()
        return False
    except OSError:
        return True


def _in_hf_cache(model: str) -> bool:
    from ego_adr.run.checks import _in_hub_cache  # one check for models and judges (a bad id is "not cached")

    return _in_hub_cache(model)


def judge_specs(cfg: RunConfig):
    """The judges a run uses: ``None`` for the two tiny stand-ins (a tiny answering model with the default
    judges), else the :class:`~ego_adr.eval.judges.JudgeSpec` list. Raises ConfigError, before any work, when an
    ``hf`` judge is neither a folder nor in the local Hugging Face cache and the hub cannot be reached."""
    from ego_adr.eval.judges import DEFAULT_JUDGES, JudgeSpec
    from ego_adr.run.config import ConfigError

    if is_tiny(cfg.model) and list(cfg.judges) == DEFAULT_JUDGE_NAMES:
        return None
    defaults = {j.name: j for j in DEFAULT_JUDGES}
    try:
        specs = [defaults.get(j) or JudgeSpec.parse(j) for j in cfg.judges]
    except ValueError as e:
        raise ConfigError(str(e)) from None
    if cfg.judge_backend == "openai":
        return [JudgeSpec(s.name, s.model, "openai", base_url=s.base_url or cfg.base_url) for s in specs]
    if cfg.judge_backend == "llamacpp":  # a GGUF file or packaged alias each: checked before any work
        from ego_adr.models.llamacpp_backend import check_name

        for s in specs:
            check_name(s.model)
        return [JudgeSpec(s.name, s.model, "llamacpp") for s in specs]
    from pathlib import Path as _P

    from ego_adr.models.registry import resolve

    missing = []
    for s in specs:
        if s.backend != "hf" or _P(s.model).expanduser().is_dir():
            continue
        hub_id = s.model if "/" in s.model else resolve(s.model)[0]
        if not _in_hf_cache(hub_id):
            missing.append(f"{s.name} ({hub_id})")
    if missing and _hub_offline():
        raise ConfigError(
            f"judge(s) {', '.join(missing)} not in the local Hugging Face cache and the hub is not reachable: "
            "download them (`hf download ID`), name local folders with --judges NAME=FOLDER, use "
            "--judge-backend openai, or run --model tiny for the offline stand-ins")
    return specs


def judge_loaders(cfg: RunConfig) -> tuple[dict, str, str]:
    """``{name: () -> VLM}`` for the configured judges (nothing is loaded yet), a line for the report and the
    judges' backend (for the stage-cache key)."""
    from ego_adr.eval.judges import JudgeSpec
    from ego_adr.models.tiny import build_tiny_text_lm
    from ego_adr.run.judging import load_judge

    specs = judge_specs(cfg)
    if specs is None:
        root = cfg.resolved_cache_dir()

        def tiny(name: str, seed: int):
            from ego_adr.store import build_once

            folder = build_once(root / f"{name}-v1", lambda d: build_tiny_text_lm(d, seed=seed),
                                lambda f: (f / "config.json").is_file() and any(f.glob("*.safetensors")))
            return load_judge(JudgeSpec(name, str(folder)), device="cpu")

        loaders = {n: (lambda n=n, s=s: tiny(n, s)) for s, n in enumerate(("tiny-judge-a", "tiny-judge-b"))}
        return loaders, TINY_JUDGES, "hf"
    dev = None if cfg.device == "auto" else cfg.device
    loaders = {s.name: (lambda s=s: load_judge(s, device=dev)) for s in specs}
    return loaders, ", ".join(f"{s.name}={s.model}" for s in specs), cfg.judge_backend


def public_prompts(cfg: RunConfig):
    """The public judges' prompts under ``--protocol public`` (read now, so a missing source stops the run
    before any work), else None."""
    if getattr(cfg, "protocol", "ego-adr") != "public":
        return None
    from ego_adr.eval.public_judges import PublicJudgesMissing, read_public_judge_prompts
    from ego_adr.run.config import ConfigError

    try:
        return read_public_judge_prompts(cfg.data_root, (cfg.protocol_options or {}).get("public_source"))
    except PublicJudgesMissing as e:
        raise ConfigError(str(e)) from None


class _Released:
    """Stands in for a judge whose answers are all in the stage cache and whose weights were freed. A request its
    first pass could not answer gets that pass's own failure back -- connection refused, timeout, HTTP status, out
    of memory, with its kind -- so the row records the real cause (issue 29 item 2)."""

    def __init__(self, model, failures: dict) -> None:
        self.model_id, self.fingerprint, self.capabilities = model.model_id, model.fingerprint, model.capabilities
        self.backend = getattr(model, "backend", None)  # part of the cache key: the same as the judge's own
        self.failures = failures  # stage-cache key -> the first pass's failed Generation
        self.key = None  # the wrapping CachedModel's key function (set by judge_one_at_a_time)

    def generate(self, requests):
        from ego_adr.models.base import Generation

        lost = "judge already released; its first pass did not answer this"
        return [self.failures.get(self.key(r)) if self.key and self.key(r) in self.failures
                else Generation(None, error=lost) for r in requests]


def free_memory() -> None:
    import gc
    import sys

    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def judge_one_at_a_time(loaders: dict, requests_for, cache, backend: str, progress: bool) -> tuple[dict, dict]:
    """Load each judge alone, let it answer every pending request (``requests_for(i)`` for the i-th judge) into
    the stage cache, then free it.

    Two 7B judges next to each other need ~30 GB in bf16; one at a time fits a 24 GB GPU (Section 6.1's budget).
    The returned judges answer from the cache only, so the combined judging pass asks nobody again.
    """
    from tqdm import tqdm

    from ego_adr.models.cache import CachedModel

    released, stats = {}, {}
    for k, (name, load) in enumerate(loaders.items()):
        reqs = requests_for(k)
        judge = CachedModel(load(), cache, backend)
        bs = max(1, judge.capabilities.max_batch_size)
        failures = {}
        for i in tqdm(range(0, len(reqs), bs), desc=f"judge {name}", disable=not progress or not reqs):
            chunk = reqs[i:i + bs]
            failures.update({judge.key(r): g for r, g in zip(chunk, judge.generate(chunk), strict=True) if not g.ok})
        stats[name] = judge.stats()
        stand_in = _Released(judge.model, failures)
        released[name] = CachedModel(stand_in, cache, backend)
        stand_in.key = released[name].key
        del judge
        free_memory()
    return released, stats


def judge_answers(cfg: RunConfig, answer_rows: list[dict], path: Path, cache, progress: bool = True
                  ) -> tuple[list[dict], str, dict]:
    """The judge stage: judgement rows in ``path`` (resumable), a line naming the judges, per-judge call counts.
    Under ``--protocol public`` the public judges' prompts and parsing (:mod:`ego_adr.eval.public_judges`)."""
    from ego_adr.models.cache import CachedModel
    from ego_adr.run.judging import judge_request, judge_rows, judge_rows_public, public_requests
    from ego_adr.store import JsonlStore

    prompts = public_prompts(cfg)
    loaders, note, backend = judge_loaders(cfg)
    if prompts is not None:
        note += "; public judge prompts and score parsing (" + ", ".join(
            f"{p.judge_class} {p.sha}" for p in prompts) + f", from {prompts[0].source})"
        if len(loaders) != len(prompts):
            from ego_adr.run.config import ConfigError

            raise ConfigError(f"--protocol public needs exactly two judges (asked as the public Qwen and DeepSeek "
                              f"judges), got {len(loaders)}")
    with JsonlStore(path) as jstore:
        done = {(r.get("sample_id"), r.get("qa_index")) for r in jstore.rows()}
        pending = [r for r in answer_rows if (r.get("sample_id"), r.get("qa_index")) not in done]
        if not pending:
            return jstore.rows(), note, {}

        def requests_for(k: int):
            if prompts is not None:
                return public_requests(pending, prompts[k])
            return [judge_request(r) for r in pending if not r.get("error")]  # an empty answer is judged too

        if cache is not None:
            judges, stats = judge_one_at_a_time(loaders, requests_for, cache, backend, progress)
        else:  # without the cache the judges must be held together
            judges = {n: CachedModel(load(), None, backend) for n, load in loaders.items()}
            stats = None
        if prompts is not None:
            rows = judge_rows_public(answer_rows, judges, prompts, jstore, cache)
        else:
            rows = judge_rows(answer_rows, judges, jstore, cache, progress=progress)
    return rows, note, stats if stats is not None else {n: j.stats() for n, j in judges.items()}


def run_open_end(cfg: RunConfig, out: Path, samples: list[Sample], info: dict, progress: bool = True,
                 model=None) -> dict:
    """Answer (resumable ``predictions.jsonl``), free the answering model, judge (resumable ``judgements.jsonl``),
    score and report. ``--retry-failed`` has already dropped the retryable rows (:func:`drop_retryable_open_end`)."""
    from ego_adr.eval.open_end import score_open_end_rows, select_qa, selection_label
    from ego_adr.eval.report import runtime_note, write_metrics_json
    from ego_adr.models.cache import StageCache
    from ego_adr.run.common import versions, write_json
    from ego_adr.store import JsonlStore

    public = getattr(cfg, "protocol", "ego-adr") == "public"
    judge_specs(cfg)  # a judge that cannot be loaded stops the run now, not after answering
    public_prompts(cfg)
    out.mkdir(parents=True, exist_ok=True)
    qa_mode = "one" if public else cfg.qa_selection  # the public green agent asks one QA pair per sample
    selection = selection_label(qa_mode, cfg.seed)
    pairs = select_qa(samples, qa_mode, cfg.seed)
    answers = JsonlStore(out / "predictions.jsonl")
    done = {(r.get("sample_id"), r.get("qa_index")) for r in answers.rows()}
    todo: dict[str, list[int]] = {}
    for s, qi in pairs:
        if (s.sample_id, qi) not in done:
            todo.setdefault(s.sample_id, []).append(qi)
    run_info: dict = {"config": cfg.to_dict(), "data": info, "versions": versions(), "qa_selection": selection,
                      "started": datetime.now(timezone.utc).isoformat(), "resumed_from": len(done)}
    t0 = time.perf_counter()
    answer_calls = _answer(cfg, out, samples, todo, answers, selection, model, progress)
    wanted = {(s.sample_id, qi) for s, qi in pairs}
    answer_rows = [r for r in answers.rows() if (r.get("sample_id"), r.get("qa_index")) in wanted]
    model = None  # the answering model is done: free it before the judges load
    free_memory()
    cache = StageCache(cfg.resolved_cache_dir() / "stage_cache.sqlite") if cfg.use_cache else None
    rows, judge_note, judge_stats = judge_answers(cfg, answer_rows, out / "judgements.jsonl", cache, progress)
    rows = [r for r in rows if (r.get("sample_id"), r.get("qa_index")) in wanted]
    metrics = score_open_end_rows(rows, selection=selection)
    metrics["judges_note"] = judge_note
    from ego_adr.eval.open_end import empty_table_note

    empty = empty_table_note(metrics, tiny_judges=judge_note.startswith(TINY_JUDGES))
    if empty:  # printed under the table by the CLI and in report.md (issue 28 item 9)
        metrics["table_note"] = empty
    decoders = sorted({(r.get("frames_info") or {}).get("backend") for r in answer_rows} - {None})
    _report(cfg, out, rows, metrics, judge_note, public, runtime_note(run_info["versions"], decoders))
    write_metrics_json(metrics, out)
    run_info.update({"finished": datetime.now(timezone.utc).isoformat(), "wall_s": round(time.perf_counter() - t0, 3),
                     **answer_calls, "judges": judge_note, "judge_calls": judge_stats,
                     "retried": info.get("retried", 0)})
    # issue 11: keep the history of earlier invocations, with cumulative counts
    from ego_adr.run import runinfo

    runinfo.close_invocation(run_info, runinfo.previous(out), {**answer_calls, "started": run_info["started"],
                             "finished": run_info["finished"], "processed": sum(len(v) for v in todo.values())})
    write_json(out / "run.json", run_info)
    answers.close()
    return metrics


def _answer(cfg: RunConfig, out: Path, samples, todo: dict, answers, selection: str, given_model,
            progress: bool) -> dict:
    """Answer the pending QA pairs (``todo``: sample id -> QA indices) into ``answers``; the call counts."""
    if not todo:
        return {"model_calls": 0, "cache_hits": 0}
    from tqdm import tqdm

    from ego_adr.reasoning.pipeline import EgoADR, Item, PipelineConfig
    from ego_adr.run.common import decoded, load_vlm
    from ego_adr.run.failures import mark
    from ego_adr.run.identity import confirm  # issue 11: the folder's answers are all from these weights

    model = load_vlm(cfg, given_model)
    confirm(out, {"model_fingerprint": model.fingerprint})
    pipe = EgoADR(model, PipelineConfig(mode=cfg.mode, frames=cfg.frames, max_new_tokens=cfg.max_new_tokens,
                                        matcher=cfg.matcher, scoring=cfg.scoring),
                  cache_dir=cfg.resolved_cache_dir(), route="open-end")
    label = cfg.model or "tiny-demo"
    by_id = {s.sample_id: s for s in samples}
    bar = tqdm(total=sum(len(v) for v in todo.values()), desc="answering", unit="question", disable=not progress)
    try:
        for item in decoded(cfg, [by_id[k] for k in todo]):
            s = item.sample
            qis = todo[s.sample_id]
            # one clip, several questions: each question is its own request on the same frames
            clones = [Item(s, item.frames, item.frames_error, item.frames_info, timings=dict(item.timings))
                      for _ in qis]
            for q, res in zip(qis, pipe.answer_open(clones, [s.qa_pairs[q].question for q in qis])):
                answers.append(mark({  # failure_kind: sample (a missing video) or infrastructure, as MC rows
                    "task": "open-end", "sample_id": s.sample_id, "qa_index": q, "source": s.source,
                    "task_id": s.task_id, "question": s.qa_pairs[q].question,
                    "reference": s.qa_pairs[q].answer, "answer": res["answer"],
                    # an empty answer is still an answer: judged, as the public green agent judges "" (the
                    # rubric's 0); its failure note stays on the row, as on a multiple-choice row
                    "error": None if res["failure"] == EMPTY_ANSWER else res["failure"],
                    "failure": res["failure"], "model": label, "method": label, "frames": cfg.frames,
                    "qa_selection": selection, "timings": res["timings"], "frames_info": res["frames_info"],
                }))
            bar.update(len(qis))
    finally:
        bar.close()
    return {"model_calls": getattr(model, "model_calls", 0), "cache_hits": getattr(model, "cache_hits", 0)}


def _report(cfg: RunConfig, out: Path, rows: list[dict], metrics: dict, judge_note: str, public: bool,
            runtime: str) -> None:
    from ego_adr.eval.open_end import render_open_end_report

    notes = [f"Judges: {judge_note}."]
    failed = judge_call_failures(rows)
    lead = ""  # the report leads with what makes its numbers incomplete
    if failed:
        lead = (f"**{failed} answer(s) have no judgement: a judge call failed. They are left out below and are not "
                "results; rerun with --retry-failed to ask the judges again.**\n\n")
    if public:
        from ego_adr.eval.public_judges import public_parse_counts

        counts = public_parse_counts(rows)
        metrics["public_parse"] = counts
        notes.append("Protocol public: one QA pair per sample (seeded), the public judges' prompts and parsing; "
                     "replies the public code cannot parse score 0 there and here: " + "; ".join(
                         f"{n}: {c['unparsed_scored_0']} unparsed (0), {c['fallback']} read by a fallback rule, "
                         f"{c['answer_failed_excluded']} failed answers left out of the mean (as the public loop)"
                         for n, c in counts.items()) + ".")
        notes.append("A failed judge call is an outage, not a judgement: the row is unjudged and in no average (the "
                     "public loop would leave a failed Qwen call out and score a failed DeepSeek call 0): " + "; ".join(
                         f"{n}: {c['call_failed_excluded'] + c['call_failed_scored_0']}" for n, c in counts.items())
                     + (f". {failed} such row(s) are retryable (--retry-failed)." if failed else "."))
    if is_tiny(cfg.model):
        notes.append("Demo model and judges have random weights: these numbers only show the machinery works.")
    notes.append(runtime)  # the multiple-choice report's runtime line (issue 19 item 7): run.json's versions
    (out / "report.md").write_text("# Open-ended VQA results\n\n" + lead + render_open_end_report(metrics) + "\n\n"
                                   + "\n".join(f"- {n}" for n in notes) + "\n")


def judge_call_failures(rows: list[dict]) -> int:
    """Judgement rows left unjudged because a judge call failed (see :func:`ego_adr.eval.open_end.row_score`)."""
    from ego_adr.eval.open_end import UNJUDGED, row_score

    return sum(1 for r in rows if row_score(r)[1] == UNJUDGED)


def drop_retryable_open_end(out: Path) -> int:
    """``--retry-failed`` for an open-ended folder: drop the answers that failed on infrastructure, the judgements
    whose judge call failed, and the judgements of every dropped answer (so a retried answer is judged again);
    the dropped rows go to ``*.retried.jsonl`` beside them. Returns how many rows were dropped. The caller holds
    the folder lock."""
    from ego_adr.run.failures import drop_retryable, is_retryable, set_aside_rows
    from ego_adr.store import read_jsonl

    n = drop_retryable(out / "predictions.jsonl")
    path = out / "judgements.jsonl"
    if not path.is_file():
        return n
    answered = {(r.get("sample_id"), r.get("qa_index")) for r in read_jsonl(out / "predictions.jsonl")} \
        if (out / "predictions.jsonl").is_file() else set()
    rows = read_jsonl(path)
    keep = [r for r in rows if not is_retryable(r) and (r.get("sample_id"), r.get("qa_index")) in answered]
    if len(keep) == len(rows):
        return n
    set_aside_rows(path, keep, [r for r in rows if r not in keep])
    return n + len(rows) - len(keep)
