"""The open-ended judges and the judge stage (loading them, asking them, recording their judgements): the model
side of judging, kept out of ``ego_adr.eval`` (which only scores
files and never loads a model).

The paper's judges (Section 3.4) are two text-only chat LLMs, Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
decoded greedily with 256 new tokens (Appendix H). A local judge runs on the same Hugging Face backend as the
video models (:class:`ego_adr.models.hf.HFVideoLM`, whose text path is ``AutoModelForCausalLM`` + the tokenizer's
chat template, batched with left padding), so there is one generation path for both;
:class:`ego_adr.models.hf_text.HFTextLM` only keeps the judges' own identity string (it is written into every
judgement row). The demo's stand-in judges are :func:`ego_adr.models.tiny.build_tiny_text_lm`. An OpenAI-compatible endpoint goes
through :class:`ego_adr.models.openai_api.OpenAIChatModel`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from ego_adr.eval.judges import JudgeSpec
from ego_adr.eval.open_end import JUDGE_DECODING, judge_prompt, judgement_row, qa_key
from ego_adr.eval.public_judges import PublicJudgePrompt, public_score
from ego_adr.models.base import GenerationConfig, Message, Request
from ego_adr.models.cache import CachedModel
from ego_adr.models.hf_text import HFTextLM


def load_judge(spec: JudgeSpec, device: str | None = None, max_batch_size: int = 8):
    """Instantiate the model of a judge. Loading a hub id needs its weights in the local HF cache (or network)."""
    if spec.backend == "openai":
        from ego_adr.models.openai_api import OpenAIChatModel

        return OpenAIChatModel(spec.model, base_url=spec.base_url, api_key_env=spec.api_key_env)
    if spec.backend == "llamacpp":  # its own child server, stopped when the judge goes (models/llamacpp_backend.py)
        from ego_adr.models.llamacpp_backend import LlamaCppModel

        return LlamaCppModel(spec.model)
    model, family = spec.model, None
    if not Path(model).exists():  # the registry's short aliases (e.g. "qwen2.5-7b") as well as hub ids
        from ego_adr.models.registry import resolve

        model, family = resolve(model)
    return HFTextLM(model, device=device, max_batch_size=max_batch_size, spec=family)


JUDGE_CONFIG = GenerationConfig(**JUDGE_DECODING)


# --- the judge stage (moved here from eval/: it calls models) --------------------------------------------------------------------------------------------
def _backend_of(model) -> str:
    """The backend a judge reports itself (``backend``), for the stage-cache key."""
    return getattr(model, "backend", None) or type(model).__name__


def _named_judges(judges) -> dict:
    if isinstance(judges, Mapping):
        named = dict(judges)
    else:
        named = {}
        for j in judges:
            name = getattr(j, "judge_name", None) or j.model_id
            if name in named:
                raise ValueError(f"two judges are both named {name!r}; pass a dict {{name: model}}")
            named[name] = j
    if not named:
        raise ValueError("no judges given; the default are ego_adr.eval.judges.DEFAULT_JUDGES")
    return named


def judge_request(row: dict, config: GenerationConfig = JUDGE_CONFIG) -> Request:
    prompt = judge_prompt()
    text = prompt.render(question=row["question"], reference=row["reference"], answer=row["answer"])
    return Request([Message.user(text)], config=config, meta=prompt.meta("judge"))


def judge_rows(
    answer_rows: Sequence[dict],
    judges,
    store,
    cache=None,
    *,
    config: GenerationConfig = JUDGE_CONFIG,
    progress: bool = True,
) -> list[dict]:
    """Judge every answer row (``sample_id``, ``qa_index``, ``source``, ``question``, ``reference``, ``answer``)
    with every judge and append one judgement row per answer to ``store``; rows already in the store are skipped
    (resume). ``judges`` is a list of VLMs (named by ``model_id``) or a ``{name: VLM}`` dict; each is wrapped in a
    :class:`~ego_adr.models.cache.CachedModel` on ``cache`` unless it already is one. Returns all rows in the store.

    An empty answer is judged like any other (the public evaluator asks its judges about it too; the rubric's
    "0 = no response" is theirs to give); an answer row carrying an ``error`` (the answering stage failed) gets
    ``score`` null and that failure. A judge call that failed makes the row a retryable failure (``score``
    null, ``failure_kind`` infrastructure), never a mean of the other judges: ``--retry-failed`` asks again.
    ``config`` defaults to the paper's judge decoding (greedy, 256 new tokens; Appendix H); it is part of the
    cache key, so a different setting never reuses outputs of another.
    """
    named = {
        n: (j if isinstance(j, CachedModel) else CachedModel(j, cache, _backend_of(j)))
        for n, j in _named_judges(judges).items()
    }
    judge_set = sorted(f"{n}={j.fingerprint}" for n, j in named.items())
    existing = store.rows()
    other = {tuple(r["judge_set"]) for r in existing if "judge_set" in r} - {tuple(judge_set)}
    if other:
        raise ValueError(
            f"{store.path} holds judgements by other judges ({sorted(other)[0]}); write to another file "
            f"(re-judging with the same judges is free: their outputs are in the stage cache)"
        )
    done = {qa_key(r) for r in existing if "sample_id" in r and "qa_index" in r}
    todo, seen = [], set(done)
    for r in answer_rows:
        missing = [f for f in ("sample_id", "qa_index", "question", "reference") if f not in r]
        if missing:
            raise ValueError(f"answer row lacks {missing}: {str(r)[:200]}")
        if qa_key(r) not in seen:
            seen.add(qa_key(r))
            todo.append(r)

    from tqdm import tqdm

    bs = max(1, min(j.capabilities.max_batch_size for j in named.values()))
    bar = tqdm(total=len(todo), desc="judging", unit="answer", disable=not progress)
    for s in range(0, len(todo), bs):
        chunk = todo[s : s + bs]
        ask = [r for r in chunk if not r.get("error")]
        reqs = [judge_request(r, config) for r in ask]
        outputs = {n: dict(zip(map(qa_key, ask), j.generate(reqs), strict=True)) if reqs else {} for n, j in named.items()}
        for r in chunk:
            store.append(judgement_row(r, named, outputs, judge_set))
        bar.update(len(chunk))
    bar.close()
    return store.rows()


# --- the judge stage under the public protocol --------------------------------------------------------------
def public_requests(rows, prompt: PublicJudgePrompt, config=None) -> list:
    """One request per answer row (every row whose answer was obtained, an empty answer included)."""
    p = prompt.prompt()
    return [Request([Message.user(p.render(question=r["question"], reference=r["reference"],
                                           answer=r.get("answer") or ""))],
                    config=config or JUDGE_CONFIG, meta=p.meta("judge"))
            for r in rows if not r.get("error")]


def judge_rows_public(answer_rows, judges: dict, prompts: list[PublicJudgePrompt], store, cache=None, *,
                      config=None) -> list[dict]:
    """Like :func:`judge_rows` (same row shape, resumable ``store``), with the public
    judges' prompts and parsing: the first judge of ``judges`` is asked as ``QwenJudge``, the second as
    ``DeepSeekJudge``. Each judgement row's ``score`` is the public one (the mean, zeros included)."""
    if len(judges) != len(prompts):
        raise ValueError(f"the public protocol has {len(prompts)} judges (Qwen's and DeepSeek's prompt), "
                         f"got {len(judges)}: {', '.join(judges)}")
    named = {n: (j if isinstance(j, CachedModel) else CachedModel(j, cache, "hf")) for n, j in judges.items()}
    judge_set = sorted(f"{n}={j.fingerprint}@{p.judge_class}:{p.sha}"
                       for (n, j), p in zip(named.items(), prompts, strict=True))
    done = {(r.get("sample_id"), r.get("qa_index")) for r in store.rows()}
    todo = [r for r in answer_rows if (r["sample_id"], r["qa_index"]) not in done]
    ask = [r for r in todo if not r.get("error")]
    per_judge = {}
    for (n, j), p in zip(named.items(), prompts, strict=True):
        reqs = public_requests(ask, p, config)
        gens = j.generate(reqs) if reqs else []
        per_judge[n] = (p, {(r["sample_id"], r["qa_index"]): (q, g) for r, q, g in zip(ask, reqs, gens, strict=True)})
    for r in todo:
        store.append(_public_judgement(r, named, per_judge, judge_set))
    return store.rows()


def _public_judgement(r: dict, named: dict, per_judge: dict, judge_set: list[str]) -> dict:
    """One judgement row as the public loop would score it -- its prompts, its parsing, its zeros for replies it
    cannot parse -- except for a judge call that failed (an outage, not a judgement): the public loop leaves a
    sample whose Qwen call raised out of its mean and scores a raised DeepSeek call 0 *in* it; here either makes
    the row unjudged (``score`` None, ``failure`` "judge call failed ...", ``failure_kind`` infrastructure), so
    no outage ever enters an average and the next run asks again. What the public loop would have scored is kept
    as ``public_loop_score`` for audit (issue 28 item 4)."""
    from ego_adr.eval.public_judges import DEEPSEEK_FAILED, DEEPSEEK_SKIPPED, QWEN_FAILED

    key = (r["sample_id"], r["qa_index"])
    per, excluded, failed_calls = {}, False, []
    for n, (p, out) in per_judge.items():
        base = {"model": named[n].fingerprint, "reason": None, "public_judge": p.judge_class}
        if r.get("error"):  # the public loop leaves a failed answer out of its average (successful_count)
            per[n] = {**base, "raw": None, "error": None, "score": None, "method": "public-answer-failed-excluded"}
            continue
        req, g = out[key]
        if excluded:  # the public loop skips DeepSeek for a sample whose Qwen stage raised
            per[n] = {**base, "raw": g.text, "error": g.error, "score": None, "method": DEEPSEEK_SKIPPED}
        elif not g.ok:
            failed_calls.append(f"{p.judge_class}: {g.error}")
            first = p.judge_class == "QwenJudge"
            excluded = excluded or first
            per[n] = {**base, "raw": None, "error": g.error, "score": None,
                      "public_loop_score": None if first else 0.0, "method": QWEN_FAILED if first else DEEPSEEK_FAILED}
        else:
            score, method = public_score(p.judge_class, req.messages[0].content[0], g.text)
            per[n] = {**base, "raw": g.text, "error": g.error, "score": float(score), "method": method}
    scores = [x["score"] for x in per.values() if x["score"] is not None]
    row = {"task": "open-end", "sample_id": r["sample_id"], "qa_index": r["qa_index"],
           **{k: r[k] for k in ("source", "task_id", "question", "reference", "answer", "model", "method", "frames",
                                "qa_selection") if k in r},
           "protocol": "public", "judge_set": judge_set, "judges": per,
           "judge_scores": {n: x["score"] for n, x in per.items()},
           "score": None if excluded or not scores else sum(scores) / len(scores), "failed_judges": [],
           "failure": f"answer failed: {r['error']}" if r.get("error") else None}
    if r.get("error"):
        row["failure_kind"] = r.get("failure_kind")  # the answer's own kind (written with the answer row)
    if failed_calls:
        loop = [x.get("public_loop_score", x["score"]) for x in per.values()]
        row.update(score=None, failure_kind="infrastructure",
                   failure=f"judge call failed ({'; '.join(failed_calls)}): unjudged, in no average; the next run "
                           "(or --retry-failed) asks again",
                   public_loop_score=None if excluded else sum(loop) / len(loop))
        row["judge_scores"] = {n: None for n in per}
    return row
