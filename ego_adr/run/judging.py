"""The open-ended judges and the judge stage (loading them, asking them, recording their judgements): the model
side of judging, kept out of ``ego_adr.eval`` (which only scores
files and never loads a model).

The paper's judges (Section 3.4) are two text-only chat LLMs, Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
decoded greedily with 256 new tokens (Appendix H). A local judge runs on the same Hugging Face backend as the
video models (:class:`ego_adr.models.hf.HFVideoLM`, whose text path is ``AutoModelForCausalLM`` + the tokenizer's
chat template, batched with left padding), so there is one generation path for both; :class:`HFTextLM` only keeps
the judges' own identity string (it is written into every judgement row). An OpenAI-compatible endpoint goes
through :class:`ego_adr.models.openai_api.OpenAIChatModel`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from ego_adr.eval.judges import JudgeSpec
from ego_adr.eval.open_end import _CARRY, JUDGE_DECODING, _judge_prompt, _judgement, _key  # noqa: F401
from ego_adr.eval.public_judges import PublicJudgePrompt, public_score
from ego_adr.models.base import Generation, GenerationConfig, Message, Request
from ego_adr.models.cache import CachedModel
from ego_adr.models.hf import HFVideoLM
from ego_adr.store import folder_fingerprint


def load_judge(spec: JudgeSpec, device: str | None = None, max_batch_size: int = 8):
    """Instantiate the model of a judge. Loading a hub id needs its weights in the local HF cache (or network)."""
    if spec.backend == "openai":
        from ego_adr.models.openai_api import OpenAIChatModel

        return OpenAIChatModel(spec.model, base_url=spec.base_url, api_key_env=spec.api_key_env)
    model, family = spec.model, None
    if not Path(model).exists():  # the registry's short aliases (e.g. "qwen2.5-7b") as well as hub ids
        from ego_adr.models.registry import resolve

        model, family = resolve(model)
    return HFTextLM(model, device=device, max_batch_size=max_batch_size, spec=family)


class HFTextLM(HFVideoLM):
    """A text-only judge on the HF backend. Requests with frames are answered with an error (a text judge cannot
    look at video); everything else is :class:`HFVideoLM`'s text path."""

    def __init__(self, model: str, *, revision: str | None = None, device: str | None = None, dtype: str = "auto",
                 max_batch_size: int = 8, spec=None) -> None:
        super().__init__(str(model), spec=spec, device=device or "auto", dtype=dtype, batch_size=max_batch_size,
                         revision=revision)
        if Path(model).is_dir():
            self._judge_id = f"{Path(model).name}@sha:{folder_fingerprint(model)}"
        elif Path(model).is_file():  # a GGUF checkpoint (a packaged real model, docs/real_models.md)
            from ego_adr.models.packaged import file_fingerprint

            self._judge_id = f"{Path(model).name}@sha:{file_fingerprint(Path(model))}"
        else:
            self._judge_id = f"{model}@{revision or self._commit or 'unknown-revision'}"

    @property
    def fingerprint(self) -> str:
        return self._judge_id

    def generate(self, requests: list[Request]) -> list[Generation]:
        out: list[Generation | None] = [None] * len(requests)
        todo = [i for i, r in enumerate(requests) if not r.has_frames]
        for i in set(range(len(requests))) - set(todo):
            out[i] = Generation(None, error="text-only model received video frames")
        for i, g in zip(todo, super().generate([requests[i] for i in todo])):
            out[i] = g
        return out  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"HFTextLM({self.model_id!r})"


def build_tiny_text_lm(out_dir: str | os.PathLike, seed: int = 0, tokenizer=None) -> Path:
    """A tiny random Qwen2 causal LM (hidden 64, 2 layers) with the tokenizer of :mod:`ego_adr.models.tiny`, saved
    as a normal HF folder: the demo's stand-in judges (their bytes are kept: the demo's judgements depend on
    them). Pass ``tokenizer`` (from ``ego_adr.models.tiny.build_tokenizer()``) to skip re-training it."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    from ego_adr.models.tiny import TINY_TEXT_DIMS, build_tokenizer, tiny_vocab_size

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer if tokenizer is not None else build_tokenizer()
    pad, eos = tok.convert_tokens_to_ids("<|endoftext|>"), tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen2Config(
        vocab_size=tiny_vocab_size(tok),
        **TINY_TEXT_DIMS,
        max_position_embeddings=4096,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
        tie_word_embeddings=False,  # tied random embeddings just repeat the last prompt token
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    model.generation_config = GenerationConfig(bos_token_id=pad, eos_token_id=eos, pad_token_id=pad, do_sample=False)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out


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
    prompt = _judge_prompt()
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
    done = {_key(r) for r in existing if "sample_id" in r and "qa_index" in r}
    todo, seen = [], set(done)
    for r in answer_rows:
        missing = [f for f in ("sample_id", "qa_index", "question", "reference") if f not in r]
        if missing:
            raise ValueError(f"answer row lacks {missing}: {str(r)[:200]}")
        if _key(r) not in seen:
            seen.add(_key(r))
            todo.append(r)

    from tqdm import tqdm

    bs = max(1, min(j.capabilities.max_batch_size for j in named.values()))
    bar = tqdm(total=len(todo), desc="judging", unit="answer", disable=not progress)
    for s in range(0, len(todo), bs):
        chunk = todo[s : s + bs]
        ask = [r for r in chunk if not r.get("error")]
        reqs = [judge_request(r, config) for r in ask]
        outputs = {n: dict(zip(map(_key, ask), j.generate(reqs), strict=True)) if reqs else {} for n, j in named.items()}
        for r in chunk:
            store.append(_judgement(r, named, outputs, judge_set))
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
