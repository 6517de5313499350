"""The EgoErrorVQA green agent: evaluates any white agent over A2A (paper Section 1, Appendix B).

``python -m ego_adr.agents.green [--host 127.0.0.1] [--port 9001] [--token T]``

It accepts the public task message, ``<white_agent_url>URL</white_agent_url>`` and
``<eval_config>{json}</eval_config>``. ``eval_config`` keys (public ones first):

- ``video_root``, ``json_root`` (annotation folder), ``procedure_json_path`` (its procedures replace those of
  ``json_root/procedure.json`` where both name a task), ``datasets`` (``captaincook4d``, ``epic_tent`` /
  ``epic-tent``, ``assembly101``, ``egooops``, ``demo``), ``task_type`` (``multiple-choice`` | ``open-end``);
- judges for open-ended: ``judge_model_path`` / ``deepseek_model_path`` (the public pair) or ``judges``
  (``["NAME=MODEL[@hf|@openai]", ...]`` or ``"tiny"``), ``judge_device``; default: the paper's two 7B judges
  (Section 3.4), or two tiny random judges when only the demo set is evaluated;
- ours: ``output_dir`` (default ``runs/a2a-<task>``, plus ``-ego_adr-wording`` for our wording),
  ``concurrency`` (requests in flight, default 4), ``limit`` (samples per run, spread over the datasets),
  ``seed``, ``qa_selection`` (``all`` | ``one``), ``white_token`` (bearer token for the white agent),
  ``timeout`` (seconds per request), ``question_wording`` (``public``, the default: the public green agent's
  multiple-choice message byte for byte, its guidance text read at run time from the public evaluator's source,
  see :mod:`ego_adr.agents.public_mc`; ``ego_adr``: our own wording), ``public_evaluator_root``.

Multiple choice is scored exactly as the public green agent scores it (:mod:`ego_adr.eval.scoring`; see
:mod:`ego_adr.agents.green_mc`), so a white agent gets the same numbers from either. What ours does beyond it, on
purpose: every requested dataset is evaluated and scored in open-ended mode too (the public one scores only the
last dataset there), the multiple-choice summary does not crash (the public one raises building it), a
``limit`` and a seeded question choice, a lenient reading shown beside (never instead of) the strict score,
and a failed request is a failed sample, never a crash.
Rows go to ``output_dir/predictions.jsonl`` in the runner's format (resume-safe: finished samples are skipped on
a rerun), then metrics (:func:`ego_adr.eval.mc.compute_mc_metrics` or the open-ended judges) and the report are
written beside it; the reply is a Message with the summary table and the metrics as JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ego_adr.agents.client import ask
from ego_adr.agents.messages import (
    MULTIPLE_CHOICE,
    OPEN_END,
    ProtocolError,
    open_question,
    parse_green_message,
    white_message,
)
from ego_adr.data import sources as source_registry
from ego_adr.errors import OneLineParser

log = logging.getLogger("ego_adr.agents.green")

PUBLIC_DATASETS = list(source_registry.names(public_only=True))

#: The command an evaluation folder's identity records; what the green agent writes there (`agents launch --fresh`).
KIND, EVALUATOR = "agents.green", "ego_adr green agent"
WRITTEN = ("predictions.jsonl", "judgements.jsonl", "metrics.json", "report.md", "confusion_matrix.png",
           "per_type_accuracy.png", "identity.json")


@dataclass
class EvalConfig:
    video_root: str
    json_root: str
    task_type: str = MULTIPLE_CHOICE
    datasets: list[str] = field(default_factory=lambda: list(PUBLIC_DATASETS))
    procedure_json_path: str | None = None
    output_dir: str | None = None
    concurrency: int = 4
    limit: int | None = None
    seed: int = 0
    qa_selection: str = "all"
    judges: list[str] | str | None = None
    judge_device: str | None = None
    white_token: str | None = None
    timeout: float = 600.0
    question_wording: str = "public"
    public_evaluator_root: str | None = None

    @staticmethod
    def from_dict(d: dict) -> EvalConfig:
        for k in ("video_root", "json_root"):
            if not isinstance(d.get(k), str) or not d[k]:
                raise ProtocolError(f"eval_config needs {k!r} (a folder path)")
        task = d.get("task_type", "open-end")  # the public evaluator's default
        if task not in (MULTIPLE_CHOICE, OPEN_END):
            raise ProtocolError(f"task_type must be 'multiple-choice' or 'open-end', got {task!r}")
        try:  # without datasets: the sources a built root declares (sources.json), else the public four
            raw = d.get("datasets") or list(source_registry.default_sources(d["json_root"]))
        except ValueError as e:
            raise ProtocolError(str(e)) from None
        if isinstance(raw, str):
            raw = [s for s in raw.split(",") if s.strip()]
        datasets = []
        for s in raw:
            try:
                datasets.append(source_registry.get(str(s)).name)
            except KeyError:
                raise ProtocolError(f"unknown dataset {s!r}; expected some of {', '.join(source_registry.names())}"
                                    ) from None
        datasets = list(dict.fromkeys(datasets))
        judges = d.get("judges")
        if judges is None and (d.get("judge_model_path") or d.get("deepseek_model_path")):
            judges = []
            if d.get("judge_model_path"):
                judges.append(f"qwen2.5-7b-instruct={d['judge_model_path']}")
            if d.get("deepseek_model_path"):
                judges.append(f"deepseek-llm-7b-chat={d['deepseek_model_path']}")
        try:
            cfg = EvalConfig(video_root=d["video_root"], json_root=d["json_root"], task_type=task, datasets=datasets,
                             procedure_json_path=d.get("procedure_json_path"), output_dir=d.get("output_dir"),
                             concurrency=int(d.get("concurrency") or 4), limit=d.get("limit"),
                             seed=int(d.get("seed") or 0), qa_selection=d.get("qa_selection", "all"),
                             judges=judges, judge_device=d.get("judge_device"), white_token=d.get("white_token"),
                             timeout=float(d.get("timeout") or 600.0),
                             question_wording=d.get("question_wording") or "public",
                             public_evaluator_root=d.get("public_evaluator_root"))
        except (TypeError, ValueError) as e:
            raise ProtocolError(f"bad eval_config value: {e}") from None
        if cfg.concurrency < 1 or cfg.concurrency > 64:
            raise ProtocolError("concurrency must be between 1 and 64")
        if cfg.limit is not None and (not isinstance(cfg.limit, int) or cfg.limit < 1):
            raise ProtocolError("limit must be a positive integer")
        if cfg.qa_selection not in ("all", "one"):
            raise ProtocolError("qa_selection must be 'all' or 'one'")
        if cfg.question_wording not in ("public", "ego_adr"):
            raise ProtocolError("question_wording must be 'public' (the public green agent's text) or 'ego_adr'")
        return cfg


def load_all_samples(cfg: EvalConfig) -> list:
    """Every sample of the requested datasets, in file order (procedures from ``procedure_json_path``)."""
    from ego_adr.data.egoerrorvqa import DataError, load_samples

    try:
        samples = load_samples(cfg.json_root, task=cfg.task_type, sources=cfg.datasets, video_root=cfg.video_root)
    except (DataError, ValueError) as e:
        raise ProtocolError(str(e)) from None
    if cfg.procedure_json_path:
        try:
            procs = json.loads(Path(cfg.procedure_json_path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ProtocolError(f"cannot read procedure_json_path: {e}") from None
        for s in samples:
            if isinstance(procs, dict) and isinstance(procs.get(s.task_id), str):
                s.procedure = procs[s.task_id]
    return samples


def limit_samples(samples: list, limit: int | None) -> list:
    if limit:
        per: dict[str, list] = {}
        for s in samples:
            per.setdefault(s.source, []).append(s)
        k = max(1, -(-limit // max(1, len(per))))
        keep = {id(s) for v in per.values() for s in v[:k]}
        samples = [s for s in samples if id(s) in keep][:limit]
    return samples


def _video_problem(s) -> str | None:
    if not s.video_path:
        return "no video path"
    if not os.path.isfile(s.video_path):
        return f"video not found: {s.video_path}"
    return None


async def evaluate(white_url: str, cfg: EvalConfig, progress: bool = False) -> dict:
    """Run one evaluation; returns ``{"metrics", "summary", "output_dir"}``."""
    from tqdm import tqdm

    from ego_adr.agents import green_mc
    from ego_adr.agents.client import AgentClient
    from ego_adr.store import JsonlStore

    mc = cfg.task_type == MULTIPLE_CHOICE
    wording = "-ego_adr-wording" if cfg.question_wording != "public" else ""
    out = Path(cfg.output_dir or Path("runs") / f"a2a-{cfg.task_type}{wording}")
    every = await asyncio.to_thread(load_all_samples, cfg)
    samples = limit_samples(every, cfg.limit)
    if not samples:
        raise ProtocolError(f"no samples in {cfg.datasets} under {cfg.json_root}")
    messages, guidance_file = (await asyncio.to_thread(green_mc.questions, cfg, every)) if mc else ({}, None)
    if not mc and cfg.question_wording == "public":
        from ego_adr.agents.public_mc import public_open_messages

        messages = await asyncio.to_thread(public_open_messages, every, cfg.json_root, cfg.video_root,
                                           cfg.procedure_json_path)
    from ego_adr.run.config import ConfigError
    from ego_adr.run.identity import FolderLock, claim, samples_digest

    out.mkdir(parents=True, exist_ok=True)
    lock = FolderLock(out)
    store = None
    sem = asyncio.Semaphore(cfg.concurrency)
    try:
        async with AgentClient(white_url, cfg.white_token, cfg.timeout) as client:
            # the same rule as ego_adr.run: a folder holds one evaluation (issue 11); same identity resumes
            ident = {"evaluator": EVALUATOR, "task": cfg.task_type, "white_agent": client.card_identity,
                     "datasets": list(cfg.datasets), "question_wording": cfg.question_wording, "limit": cfg.limit,
                     "seed": cfg.seed, "qa_selection": None if mc else cfg.qa_selection,
                     "judges": None if mc else cfg.judges, "annotations": samples_digest(samples),
                     "video_root": str(cfg.video_root)}
            try:
                lock.acquire()
                claim(out, ident, ways="use another output_dir in the eval_config", kind=KIND, written=WRITTEN)
            except ConfigError as e:
                raise ProtocolError(str(e)) from None
            store = JsonlStore(out / "predictions.jsonl")
            if mc:
                await green_mc.run_mc(client, sem, samples, messages, store, white_url, cfg.question_wording,
                                      progress, tqdm)
            else:
                await _run_open(client, sem, samples, messages, store, white_url, cfg, progress, tqdm)
        rows = store.rows()
    finally:
        if store is not None:
            store.close()
        lock.release()
    if mc:
        return await asyncio.to_thread(green_mc.score_mc, rows, samples, out, white_url, cfg, guidance_file)
    return await asyncio.to_thread(_score_open, rows, samples, out, cfg)


async def _run_open(client, sem, samples, messages, store, white_url, cfg, progress, tqdm) -> None:
    from ego_adr.eval.open_end import select_qa, selection_label

    public = cfg.question_wording == "public"
    other = {r.get("question_wording", "ego_adr") for r in store.rows()} - {cfg.question_wording}
    if other:
        raise ProtocolError(f"output_dir {store.path.parent} holds answers to questions worded {sorted(other)[0]!r}, "
                            f"not {cfg.question_wording!r}: use another output_dir")
    selection = selection_label(cfg.qa_selection, cfg.seed)
    done = {(r.get("sample_id"), r.get("qa_index")) for r in store.rows()}
    pairs = [(s, q) for s, q in select_qa(samples, cfg.qa_selection, cfg.seed) if (s.sample_id, q) not in done]
    bar = tqdm(total=len(pairs), desc="a2a open-ended", unit="question", disable=not progress)

    async def one(s, qi):
        qa = s.qa_pairs[qi]
        if public:
            msg, path = messages[(s.sample_id, qi)]
            problem = None if path and os.path.exists(path) else f"video not found: {path or '(no path)'}"
        else:
            msg, problem = white_message(s.video_path, open_question(s.procedure, qa.question), s.start, s.end), \
                _video_problem(s)
        reply, err, secs = None, problem, 0.0
        if not problem:
            reply, err, secs = await ask(client, sem, msg)
        answer = getattr(reply, "text", None)
        failure = err  # an empty reply is an answer: the judges score it (the public agent sends it to them)
        store.append({"task": OPEN_END, "sample_id": s.sample_id, "qa_index": qi, "source": s.source,
                      "task_id": s.task_id, "question": qa.question, "reference": qa.answer, "answer": answer,
                      "error": failure, "failure": failure, "model": white_url, "method": "a2a", "frames": None,
                      "qa_selection": selection, "question_wording": cfg.question_wording,
                      "white": {"url": white_url, "protocol": getattr(reply, "protocol", None)},
                      "timings": {"a2a_s": round(secs, 4)}})
        bar.update(1)

    try:
        await asyncio.gather(*(one(s, q) for s, q in pairs))
    finally:
        bar.close()


def _judge_config(cfg: EvalConfig, demo_only: bool):
    from ego_adr.run.config import RunConfig, cache_root
    from ego_adr.run.open_end import DEFAULT_JUDGE_NAMES

    j = cfg.judges
    # the public wording is the public evaluator's whole open-ended path: its judges' prompts and parsing too
    public = {"protocol": "public", "data_root": cfg.json_root,
              "protocol_options": {"public_source": cfg.public_evaluator_root} if cfg.public_evaluator_root else {}
              } if cfg.question_wording == "public" else {}
    if j == "tiny" or (j is None and demo_only):
        return RunConfig(model=None, judges=list(DEFAULT_JUDGE_NAMES), cache_dir=str(cache_root()), **public)
    if isinstance(j, str):
        j = [j]
    return RunConfig(model="a2a", judges=list(j or DEFAULT_JUDGE_NAMES), device=cfg.judge_device or "auto",
                     cache_dir=str(cache_root()), **public)


def _score_open(rows: list[dict], samples, out: Path, cfg: EvalConfig) -> dict:
    from ego_adr.eval.open_end import render_open_end_report, score_open_end_rows, select_qa
    from ego_adr.eval.report import write_metrics_json
    from ego_adr.models.cache import StageCache
    from ego_adr.run.open_end import judge_answers

    wanted = {(s.sample_id, q) for s, q in select_qa(samples, cfg.qa_selection, cfg.seed)}
    answers = [r for r in rows if (r.get("sample_id"), r.get("qa_index")) in wanted]
    jcfg = _judge_config(cfg, demo_only=cfg.datasets == ["demo"])
    cache = StageCache(jcfg.resolved_cache_dir() / "stage_cache.sqlite")
    judged, note, _ = judge_answers(jcfg, answers, out / "judgements.jsonl", cache, progress=False)
    judged = [r for r in judged if (r.get("sample_id"), r.get("qa_index")) in wanted]
    metrics = score_open_end_rows(judged)
    metrics["judges_note"] = note
    write_metrics_json(metrics, out)
    report = render_open_end_report(metrics)
    (out / "report.md").write_text("# Open-ended VQA over A2A\n\n" + report + f"\n\n- Judges: {note}.\n")
    return {"metrics": metrics, "summary": report, "output_dir": str(out)}


def make_executor(max_running: int = 1):
    from a2a.helpers import get_message_text, new_text_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.utils.errors import InternalError, InvalidParamsError

    state = {"running": 0}

    class GreenExecutor(AgentExecutor):
        async def execute(self, context, event_queue) -> None:
            text = get_message_text(context.message) if context.message else ""
            try:
                url, raw = parse_green_message(text)
                cfg = EvalConfig.from_dict(raw)
            except ProtocolError as e:
                raise InvalidParamsError(message=str(e)) from None
            if state["running"] >= max_running:
                raise InternalError(message="busy: an evaluation is already running; retry when it finishes")
            state["running"] += 1
            try:
                res = await evaluate(url, cfg)
            except ProtocolError as e:
                raise InvalidParamsError(message=str(e)) from None
            except Exception as e:  # noqa: BLE001 -- report, keep serving
                log.exception("evaluation failed")
                raise InternalError(message=f"evaluation failed: {type(e).__name__}: {e}") from None
            finally:
                state["running"] -= 1
            head = {k: v for k, v in res["metrics"].items() if k in ("overall", "simple_average", "avg_sim",
                                                                      "macro_avg", "n_rows", "n_scored")}
            body = (f"Evaluation complete ({cfg.task_type}, datasets {', '.join(cfg.datasets)}).\n\n"
                    f"{res['summary']}\n\nResults in {res['output_dir']} (predictions.jsonl, metrics.json, "
                    f"report.md)\n\n```json\n{json.dumps(head, indent=1, default=str)}\n```")
            msg = new_text_message(body, context_id=context.context_id)
            msg.metadata.update(json.loads(json.dumps({"output_dir": res["output_dir"], "metrics": head},
                                                      default=str)))
            await event_queue.enqueue_event(msg)

        async def cancel(self, context, event_queue) -> None:
            from a2a.utils.errors import UnsupportedOperationError

            raise UnsupportedOperationError(message="cancel is not supported")

    return GreenExecutor()


SKILLS = [{"id": "egoerrorvqa-evaluation", "name": "EgoErrorVQA evaluation",
           "description": "Send <white_agent_url>URL</white_agent_url> and <eval_config>{json}</eval_config> "
                          "(video_root, json_root, procedure_json_path, datasets, task_type multiple-choice|"
                          "open-end, judges, output_dir, concurrency, limit, seed). Asks the white agent every "
                          "question, scores the answers and replies with the metrics.",
           "tags": ["benchmark", "evaluation", "EgoErrorVQA", "egocentric video"]}]


def build_green_app(url: str, token: str | None = None, max_body: int = 256 * 1024):
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.tasks import InMemoryTaskStore

    from ego_adr import __version__
    from ego_adr.agents.serving import agent_card, build_app

    card = agent_card("EgoErrorVQA green agent (ego_adr)",
                      "Evaluates a white agent on EgoErrorVQA multiple-choice or open-ended VQA over A2A.",
                      url, SKILLS, __version__, token)
    handler = DefaultRequestHandler(agent_executor=make_executor(), task_store=InMemoryTaskStore(), agent_card=card)
    return build_app(card, handler, token, max_body, log_name=log.name)


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    return run_cli(lambda: _serve(argv), interrupted="stopped")


def _serve(argv) -> int:
    from ego_adr.agents.serving import bind_socket, check_bind, serve_forever, url_of

    p = OneLineParser(prog="python -m ego_adr.agents.green", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=9001, help="0 = any free port")
    p.add_argument("--token", default=os.environ.get("EGO_ADR_AGENT_TOKEN"),
                   help="require 'Authorization: Bearer TOKEN' (default: $EGO_ADR_AGENT_TOKEN)")
    p.add_argument("--allow-unauthenticated", action="store_true")
    p.add_argument("--public-url", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stderr)
    check_bind(a.host, a.token, a.allow_unauthenticated)
    sock = bind_socket(a.host, a.port)
    url = a.public_url or url_of(sock, a.host)
    serve_forever(build_green_app(url, a.token), sock, url, "EgoErrorVQA green agent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
