"""The Ego-ADR white agent: answers EgoErrorVQA questions over A2A (paper Section 1, Appendix B).

``python -m ego_adr.agents.white --model M --video-root DIR [--video-root DIR2 ...] [--mode auto] [--frames 8]
[--host 127.0.0.1] [--port 9002] [--token T]``

Multiple choice runs the Ego-ADR pipeline (:class:`ego_adr.reasoning.pipeline.EgoADR`) on the clip: the step is
the message's ``Current Step`` (or, when that is ``"None"``, found by matching a narration against the
procedure) and the reply is the method's answer: the option Ego-ADR concluded (or, for the one-pass baselines,
the model's reply as it came, as the public white agent sends it). The agent never answers an option it did not
conclude: when the video cannot be read, the pipeline fails or its verdict names no option, the reply is
``unanswerable: <reason>`` (:data:`UNANSWERABLE`), a text no ground truth can match -- the public evaluator
scores it as an uncredited error claim, never as the ``Others`` type or the silent ``correct`` that would earn
true negatives -- and the Message's ``metadata["ego_adr"]`` says ``status: "unanswerable"`` with the reason and
the raw model text. Open-ended questions get a prose answer.

Safety, in order of the checks:
- the message must follow the public wire format (else JSON-RPC error -32602, invalid params);
- the video path is resolved (symlinks and ``..`` included) and must name a regular file under one of the
  ``--video-root`` folders, else -32602 and no file is opened; the error does not reveal the roots;
- loopback only by default; optional bearer token; bounded request body (see :mod:`ego_adr.agents.serving`);
- one model, loaded once; model calls run on one worker thread (backends are not thread-safe), frame decoding
  on a small pool; at most ``--max-pending`` requests are admitted (queued or running), more are refused at
  once with a "busy" error (-32603) instead of piling up;
- any failure of one request becomes that request's error reply; the server keeps serving.

Errors are JSON-RPC errors, not Messages, because the public evaluator (a2a-sdk 0.3.21) records a non-success
response as a failed sample and goes on, whereas an error *Message* would be scored as an answer.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import logging
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from ego_adr.agents.messages import MULTIPLE_CHOICE, ProtocolError, WhiteQuery, parse_white_message
from ego_adr.errors import OneLineParser
from ego_adr.eval.scoring import answer_of
from ego_adr.models.arguments import add_model_arguments
from ego_adr.reasoning.modes import MODES, mode_help
from ego_adr.taxonomy import OPTIONS

log = logging.getLogger("ego_adr.agents.white")

UNANSWERABLE = "unanswerable: "
DEFAULT_MAX_BODY = 64 * 1024  # a public question is ~3-5 kB (guidance + procedure); 64 kB leaves room

SKILLS = [
    {"id": "egoerrorvqa-multiple-choice", "name": "Procedural error type (multiple choice)",
     "description": "Given <video_path>, <start_ts>/<end_ts> (seconds, -1 = whole video) and a <question> holding "
                    "the error-type guidance, 'Task Procedure: ...' and 'Current Step: \"...\"', decides whether "
                    "the step has a procedural error and answers with exactly one option: "
                    + ", ".join(OPTIONS) + ". Uses Ego-ADR decoupled reasoning (key-step match, narration, "
                    "classification).",
     "tags": ["egocentric video", "procedural errors", "EgoErrorVQA", "multiple-choice"],
     "examples": ['<video_path>/data/videos/captaincook4d/1_10_360p.mp4</video_path>\n    <question>...\n\nTask '
                  'Procedure: ...\n\nCurrent Step: "Add 1 tsp sugar"</question>\n    <start_ts>12.0</start_ts>\n'
                  '    <end_ts>20.5</end_ts>']},
    {"id": "egoerrorvqa-open-end", "name": "Procedural question answering (open-ended)",
     "description": "Given <video_path>, <start_ts>/<end_ts> and a <question> 'Task Procedure: ...' + blank line + "
                    "'Question: ...', answers the question about the clip in prose.",
     "tags": ["egocentric video", "procedural errors", "EgoErrorVQA", "open-ended"],
     "examples": ["<video_path>/data/videos/epic-tent/01.tent.gopro.MP4</video_path>\n    <question>Task "
                  "Procedure: ...\n\nQuestion: Did the person insert the pole correctly?</question>\n"
                  "    <start_ts>-1.0</start_ts>\n    <end_ts>-1.0</end_ts>"]},
]


class RequestRefused(Exception):
    """A request that is answered with a JSON-RPC error; ``kind`` is ``invalid`` or ``busy``."""

    def __init__(self, message: str, kind: str = "invalid"):
        super().__init__(message)
        self.kind = kind


class VideoGuard:
    """Allows only regular files under the given roots, after resolving symlinks and ``..``.

    Relative paths are read relative to each root in turn. Only path resolution and ``stat`` happen here;
    nothing is opened unless the path passes.
    """

    def __init__(self, roots: list[str | os.PathLike]):
        if not roots:
            raise ValueError("at least one --video-root is needed: the agent only reads videos under them")
        resolved = []
        for r in roots:
            p = Path(os.path.realpath(Path(r).expanduser()))
            if not p.is_dir():
                raise ValueError(f"--video-root {r} is not a folder")
            resolved.append(p)
        self.roots = resolved

    def _inside(self, p: Path) -> bool:
        return any(p == r or r in p.parents for r in self.roots)

    def resolve(self, raw: str) -> Path:
        if not raw or "\x00" in raw:
            raise RequestRefused("invalid video path")
        p = Path(raw)
        candidates = [p] if p.is_absolute() else [r / p for r in self.roots]
        reason = "video path is outside the allowed video roots"
        for c in candidates:
            real = Path(os.path.realpath(c))
            if not self._inside(real):
                continue
            if real.is_file():
                return real
            reason = "no such video file under the video roots"
        raise RequestRefused(reason)


@dataclass
class Answer:
    text: str
    metadata: dict = field(default_factory=dict)


def method_answer(row: dict) -> str | None:
    """What the method concluded for one pipeline row, or ``None`` when it concluded nothing: the scorer's reading
    of a row (:func:`ego_adr.eval.scoring.answer_of`, one place for it), and nothing for a row that failed (an
    ``unparseable`` reply is still an answer, as the public white agent sends it)."""
    failed = bool(row.get("failure")) and row.get("failure") != "unparseable"
    return None if failed else answer_of(row)[0]


class WhiteAgent:
    """The protocol-independent core: text in, :class:`Answer` out (or :class:`RequestRefused`)."""

    def __init__(self, model, video_roots: list, mode: str = "auto", frames: int = 8, cache_dir=None,
                 max_pending: int = 8, decode_workers: int = 2, max_new_tokens: int = 256):
        from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
        from ego_adr.video.sampler import FrameSampler

        self.guard = VideoGuard(video_roots)
        self.frames = frames
        # the route probe (Section 5, Fig. 3) runs here, once per model, not per request
        self.pipe = EgoADR(model, PipelineConfig(mode=mode, frames=frames, max_new_tokens=max_new_tokens),
                           cache_dir=cache_dir)
        self.sampler = FrameSampler()
        self.max_pending = max_pending
        self._pending = 0
        self._model_pool = ThreadPoolExecutor(1, thread_name_prefix="ego-adr-model")
        self._decode_pool = ThreadPoolExecutor(max(1, decode_workers), thread_name_prefix="ego-adr-decode")
        self.served = 0

    def close(self) -> None:
        self._model_pool.shutdown(wait=True, cancel_futures=True)
        self._decode_pool.shutdown(wait=True, cancel_futures=True)
        self.sampler.close()

    def _item(self, q: WhiteQuery, path: Path):
        from ego_adr.data.sample import Sample
        from ego_adr.reasoning.clips import decode_item

        digest = hashlib.sha256(q.text.encode("utf-8", "replace")).hexdigest()[:16]
        task_id = "a2a-" + hashlib.sha256(q.procedure.encode()).hexdigest()[:12] if q.procedure else "a2a"
        sample = Sample(source="a2a", task=q.kind, sample_id=f"a2a/{digest}", task_id=task_id,
                        procedure=q.procedure, video_id=str(path), video_path=str(path), start=q.start, end=q.end,
                        action=q.step, action_field="current_step")
        return decode_item(self.sampler, sample, self.frames)

    def _run_mc(self, item) -> Answer:
        row = self.pipe.process([item])[0]
        pred = row.get("prediction")
        meta = {"task": MULTIPLE_CHOICE, "route": row.get("route"), "sample_id": row["sample_id"],
                "prediction": pred, "failure": row.get("failure"), "raw": row.get("raw"),
                "matched_step": (row.get("stages", {}).get("match") or {}).get("step"),
                "timings": row.get("timings")}
        answer = method_answer(row)
        if answer is not None:
            return Answer(answer, {"ego_adr": {**meta, "status": "ok", "answer_from": row.get("answer_from")}})
        reason = " ".join(str(row.get("failure") or "no option concluded").split())[:300]
        meta["unanswerable_reason"] = reason
        return Answer(UNANSWERABLE + reason, {"ego_adr": {**meta, "status": "unanswerable"}})

    def _run_open(self, item, question: str) -> Answer:
        res = self.pipe.answer_open([item], [question])[0]
        if res.get("failure") or not (res.get("answer") or "").strip():
            raise RequestRefused(f"no answer: {res.get('failure') or 'empty answer'}", kind="failed")
        return Answer(res["answer"].strip(), {"ego_adr": {"task": "open-end", "status": "ok",
                                                           "timings": res.get("timings")}})

    async def answer(self, text: str) -> Answer:
        try:
            q = parse_white_message(text)
        except ProtocolError as e:
            raise RequestRefused(str(e)) from None
        path = self.guard.resolve(q.video_path)
        if self._pending >= self.max_pending:
            raise RequestRefused(f"busy: {self._pending} requests already queued (limit {self.max_pending}); "
                                 "retry later or lower the client's concurrency", kind="busy")
        self._pending += 1
        try:
            # "what has gone wrong so far?" about a recording up to <end_ts> (issue 14)
            from ego_adr.agents.so_far import is_so_far_question, run_so_far

            loop = asyncio.get_running_loop()
            if q.kind != MULTIPLE_CHOICE and is_so_far_question(q.question):
                text, meta = await loop.run_in_executor(self._model_pool, run_so_far, self, q, path)
                self.served += 1
                return Answer(text, {"ego_adr": meta})
            item = await loop.run_in_executor(self._decode_pool, self._item, q, path)
            if q.kind == MULTIPLE_CHOICE:
                ans = await loop.run_in_executor(self._model_pool, self._run_mc, item)
            else:
                ans = await loop.run_in_executor(self._model_pool, self._run_open, item, q.question)
            self.served += 1
            return ans
        finally:
            self._pending -= 1


def make_executor(agent: WhiteAgent):
    from a2a.helpers import get_message_text, new_text_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.utils.errors import InternalError, InvalidParamsError

    class WhiteExecutor(AgentExecutor):
        async def execute(self, context, event_queue) -> None:
            text = get_message_text(context.message) if context.message else ""
            try:
                ans = await agent.answer(text)
            except RequestRefused as e:  # its one log line is written by agents/sdk_guard.RefusalLog
                err = InvalidParamsError(message=str(e)) if e.kind == "invalid" else InternalError(message=str(e))
                err.ego_adr_refusal = True  # the SDK's own tracebacks of it are dropped (agents/sdk_guard.py)
                raise err from None
            except Exception as e:  # noqa: BLE001 -- one failing request must not stop the server
                log.exception("request failed")
                raise InternalError(message=f"{type(e).__name__}: {e}") from None
            msg = new_text_message(ans.text, context_id=context.context_id)
            msg.metadata.update(_jsonable(ans.metadata))
            await event_queue.enqueue_event(msg)

        async def cancel(self, context, event_queue) -> None:
            from a2a.utils.errors import UnsupportedOperationError

            raise UnsupportedOperationError(message="answers are single messages; nothing to cancel")

    return WhiteExecutor()


def _jsonable(x):
    import json

    return json.loads(json.dumps(x, default=str))


def build_white_app(agent: WhiteAgent, url: str, token: str | None = None, max_body: int = DEFAULT_MAX_BODY,
                    model_name: str = "?"):
    from a2a.server.request_handlers import DefaultRequestHandler

    from ego_adr import __version__
    from ego_adr.agents.serving import agent_card, build_app

    card = agent_card("Ego-ADR white agent",
                      f"Detects and classifies procedural errors in egocentric video clips (EgoErrorVQA) with "
                      f"Ego-ADR on {model_name} (route {agent.pipe.route}, {agent.frames} frames).",
                      url, SKILLS, __version__, token)
    from ego_adr.agents.sdk_guard import BoundedTaskStore

    handler = DefaultRequestHandler(agent_executor=make_executor(agent), task_store=BoundedTaskStore(),
                                    agent_card=card)
    return build_app(card, handler, token, max_body, log_name=log.name)


def load_agent_model(name: str, device: str = "auto", backend: str = "hf", cache_dir: str | None = None,
                     use_cache: bool = True, base_url: str | None = None):
    from ego_adr.models.loading import ModelSettings, load_vlm

    cfg = ModelSettings(model=None if name == "tiny" else name, device=device, backend=backend, cache_dir=cache_dir,
                        use_cache=use_cache, base_url=base_url)
    return load_vlm(cfg)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m ego_adr.agents.white", description=__doc__.split("\n\n")[0])
    add_model_arguments(p, required=True)
    p.add_argument("--mode", default="auto", choices=list(MODES), help=mode_help())
    p.add_argument("--frames", type=int, default=8,
                   help="frames per clip (default: 8; paper Section 6.1: 8/16/24/32)")
    p.add_argument("--video-root", action="append", required=True,
                   help="folder the agent may read videos from (repeatable); other paths are refused")
    p.add_argument("--host", default="127.0.0.1", help="listen address (default: 127.0.0.1, loopback)")
    p.add_argument("--port", type=int, default=9002, help="0 = any free port (default: 9002)")
    p.add_argument("--token", default=os.environ.get("EGO_ADR_AGENT_TOKEN"),
                   help="require 'Authorization: Bearer TOKEN' (default: $EGO_ADR_AGENT_TOKEN)")
    p.add_argument("--allow-unauthenticated", action="store_true",
                   help="allow a non-loopback --host without --token")
    p.add_argument("--cache-dir", default=None, help="stage cache and tiny models (default: ~/.cache/ego_adr)")
    p.add_argument("--max-pending", type=int, default=8,
                   help="requests admitted at once, queued + running (default: 8)")
    p.add_argument("--max-request-bytes", type=int, default=DEFAULT_MAX_BODY,
                   help=f"larger requests are refused (default: {DEFAULT_MAX_BODY})")
    p.add_argument("--max-new-tokens", type=int, default=256, help="default: 256 (Appendix C)")
    p.add_argument("--public-url", default=None, help="URL to put in the card (behind a proxy); default: bound")
    return p


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    return run_cli(lambda: _serve(argv), interrupted="stopped")


def _serve(argv) -> int:
    from ego_adr.agents.serving import bind_socket, check_bind, serve_forever, url_of
    from ego_adr.errors import UserError
    from ego_adr.models.arguments import check_model_arguments
    from ego_adr.store import check_writable_dir

    a = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s",
                        stream=sys.stderr)
    check_bind(a.host, a.token, a.allow_unauthenticated)
    if a.frames < 1:
        raise UserError("--frames must be >= 1")
    try:
        guard_roots = VideoGuard(a.video_root).roots
    except ValueError as e:
        raise UserError(str(e)) from None
    # every user mistake before the port is taken and the model loaded (issue 18: tracebacks after a load)
    check_model_arguments(a)
    if a.cache_dir:
        check_writable_dir(a.cache_dir, "--cache-dir")
    sock = bind_socket(a.host, a.port)
    url = a.public_url or url_of(sock, a.host)
    model = load_agent_model(a.model, a.device, a.backend, a.cache_dir, base_url=a.base_url)
    from ego_adr.run.config import cache_root

    agent = WhiteAgent(model, guard_roots, a.mode, a.frames, Path(a.cache_dir) if a.cache_dir else cache_root(),
                       a.max_pending, max_new_tokens=a.max_new_tokens)
    log.info("model %s, route %s, %d frames, video roots %s", a.model, agent.pipe.route, a.frames,
             [str(r) for r in guard_roots])
    app = build_white_app(agent, url, a.token, a.max_request_bytes, a.model)
    try:
        serve_forever(app, sock, url, "Ego-ADR white agent")
    finally:
        agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
