"""A small OpenAI-compatible server that runs any of our VLMs: ``python -m ego_adr.models.serve --model M --port P``.

Why: it puts a model behind the same wire format as GPT-4o or a vLLM server, so the OpenAI backend, the A2A
agents and remote evaluators can use a local HF model unchanged, and the tests exercise the whole HTTP path with the
tiny model. It is not a production server: no streaming, no auth; it listens on loopback unless told otherwise.

Endpoints: ``POST /v1/chat/completions``, ``POST /v1/completions`` (prompt scoring only: ``echo`` with
``logprobs``, for candidate likelihoods; :mod:`ego_adr.models.likelihood`), ``GET /v1/models``, ``GET /health``. Consecutive ``image_url`` parts of
one message become one :class:`Frames` clip; the frame rate comes from the note that
:class:`~ego_adr.models.openai_api.OpenAIChatModel` puts before the frames (the note itself is dropped, so the model
sees the same prompt as when called directly); without a note the clip gets ``--default-fps``. The frames are used
at the size they arrive: with the client's ``lossless`` transfer (its default towards a loopback server) they are
the local call's pixels and rate, and the served model answers exactly as the local one; with ``jpeg-512`` they
are not (:mod:`ego_adr.models.wire`). Concurrent HTTP
requests are gathered into batches of up to ``capabilities.max_batch_size`` and run by one worker thread, so a
model that is not thread-safe (HF) is only ever called from that thread. Decoding follows the request's
``temperature``, ``top_p`` and ``seed`` (:func:`generation_config`); the HF backend generates a sampled request
alone under its seed, so a served sampled reply equals the local one whatever else the batcher gathered with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sys
import threading
import time
import uuid
from concurrent.futures import Future

import numpy as np

from ego_adr.errors import OneLineParser
from ego_adr.models.arguments import add_model_arguments
from ego_adr.models.base import BadRequest, Frames, GenerationConfig, Message, Request
from ego_adr.models.openai_api import is_loopback
from ego_adr.models.wire import decode_image, parse_frames_note


def _make_frames(images: list[np.ndarray], fps: float) -> Frames:
    if len({im.shape for im in images}) > 1:
        raise BadRequest(
            f"frames of one clip must have the same size, got {sorted({im.shape for im in images})}"
        )
    return Frames(np.stack(images), fps=float(fps))


def parse_messages(raw: list, default_fps: float = 1.0) -> list[Message]:
    """Chat-completions messages → our :class:`Message` list (see the module docstring for the frame rules)."""
    if not isinstance(raw, list) or not raw:
        raise BadRequest("'messages' must be a non-empty list")
    out = []
    for m in raw:
        if not isinstance(m, dict) or "role" not in m:
            raise BadRequest("each message needs a 'role'")
        content = m.get("content")
        if content is None:
            content = ""
        if isinstance(content, str):
            out.append(Message(m["role"], [content]))
            continue
        if not isinstance(content, list):
            raise BadRequest("message content must be a string or a list of parts")
        parts: list = []
        images: list[np.ndarray] = []
        fps = default_fps
        for p in content:
            kind = p.get("type") if isinstance(p, dict) else None
            if kind == "image_url":
                iu = p.get("image_url")
                url = iu.get("url") if isinstance(iu, dict) else iu
                if not isinstance(url, str):
                    raise BadRequest("image_url part without a url")
                images.append(decode_image(url))
                continue
            if images:  # a run of images ended: that is one clip
                parts.append(_make_frames(images, fps))
                images, fps = [], default_fps
            if kind == "text":
                text = p.get("text", "")
                note = parse_frames_note(text)
                if note is not None:
                    fps = note[1]
                    continue
                parts.append(text)
            else:
                raise BadRequest(f"unsupported content part type {kind!r} (text and image_url only)")
        if images:
            parts.append(_make_frames(images, fps))
        out.append(Message(m["role"], parts))
    return out


def generation_config(body: dict, max_tokens: int) -> GenerationConfig:
    """The request's decoding, as :class:`~ego_adr.models.openai_api.OpenAIChatModel` sends it: no temperature or
    0 is greedy; a temperature > 0 samples with ``top_p`` (default 1) and ``seed`` (default 0: a request without
    one is still reproducible). The model then decodes it exactly as a local call with the same config."""
    temperature = body.get("temperature")
    if temperature is None or temperature == 0:
        return GenerationConfig(max_new_tokens=max_tokens)
    for name, kinds, what in (("temperature", (int, float), "a number"), ("top_p", (int, float), "a number"),
                              ("seed", (int,), "an integer")):
        v = body.get(name)
        if v is not None and (isinstance(v, bool) or not isinstance(v, kinds)):
            raise BadRequest(f"'{name}' must be {what}, got {v!r}")
    top_p = body.get("top_p")
    return GenerationConfig.sampled(float(temperature), top_p=1.0 if top_p is None else float(top_p),
                                    seed=int(body.get("seed") or 0), max_new_tokens=max_tokens)


class _Batcher:
    """One worker thread that runs the model on batches of queued requests."""

    def __init__(self, model, max_batch_size: int, wait_s: float = 0.01):
        self.model = model
        self.max_batch_size = max(1, int(max_batch_size))
        self.wait_s = wait_s
        self.q: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="ego-adr-serve-batcher", daemon=True)
        self.thread.start()

    def submit(self, request: Request) -> Future:
        fut: Future = Future()
        self.q.put((request, fut))
        return fut

    def run(self, fn) -> Future:
        """``fn()`` on the worker thread, alone (the model is only ever called from there)."""
        fut: Future = Future()
        self.q.put((fn, fut))
        return fut

    @staticmethod
    def _call(item) -> None:
        fn, fut = item
        try:
            fut.set_result(fn())
        except Exception as e:  # the caller's answer, never the worker's end
            fut.set_exception(e)

    def stop(self) -> None:
        if self.thread.is_alive():
            self.q.put(None)
            self.thread.join(timeout=5)

    def _loop(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            if callable(item[0]):
                self._call(item)
                continue
            batch, pending = [item], None
            deadline = time.monotonic() + self.wait_s
            while len(batch) < self.max_batch_size:
                try:
                    nxt = self.q.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if nxt is None:
                    self.q.put(None)
                    break
                if callable(nxt[0]):  # a scoring call runs alone, after this batch
                    pending = nxt
                    break
                batch.append(nxt)
            try:
                gens = self.model.generate([r for r, _ in batch])
                if len(gens) != len(batch):
                    raise RuntimeError(f"model returned {len(gens)} generations for {len(batch)} requests")
                for (_, fut), g in zip(batch, gens, strict=True):
                    fut.set_result(g)
            except Exception as e:  # the protocol says this should not happen; never kill the worker
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(e)
            if pending is not None:
                self._call(pending)


def _completions(model, name: str, batcher: _Batcher, error):
    """The ``/v1/completions`` route of :func:`create_app`."""
    from starlette.responses import JSONResponse

    async def completions(req):
        """Prompt scoring only: ``echo`` with ``logprobs`` returns each prompt token's log-probability (what the
        OpenAI backend's candidate likelihoods ask a server for, as vLLM answers it); nothing is generated."""
        try:
            body = await req.json()
        except Exception:
            return error(400, "body is not JSON", "invalid_request_error")
        prompt = body.get("prompt") if isinstance(body, dict) else None
        if not isinstance(prompt, str) or not prompt:
            return error(400, "'prompt' must be a non-empty string", "invalid_request_error")
        if not body.get("echo") or body.get("logprobs") is None:
            return error(400, "ego_adr.models.serve answers /v1/completions only to score a prompt (echo with "
                         "logprobs); generate with /v1/chat/completions", "invalid_request_error")
        score = getattr(model, "prompt_logprobs", None)
        if score is None:
            return error(400, f"{name} gives no token probabilities", "invalid_request_error")
        try:
            tokens, offsets, lps = await asyncio.wrap_future(batcher.run(lambda: score(prompt)))
        except ValueError as e:
            return error(400, str(e), "invalid_request_error")
        except Exception as e:
            return error(500, f"{type(e).__name__}: {e}", "server_error")
        logprobs = {"tokens": tokens, "token_logprobs": lps, "text_offset": offsets, "top_logprobs": None}
        return JSONResponse({"id": f"cmpl-{uuid.uuid4().hex[:24]}", "object": "text_completion",
                             "created": int(time.time()), "model": name,
                             "choices": [{"index": 0, "text": prompt, "logprobs": logprobs, "finish_reason": "length"}],
                             "usage": {"prompt_tokens": len(tokens), "completion_tokens": 0,
                                       "total_tokens": len(tokens)}})

    return completions


def create_app(model, model_name: str | None = None, default_fps: float = 1.0, batch_wait_s: float = 0.01):
    """A Starlette app serving ``model`` (any object implementing the VLM protocol)."""
    from starlette.applications import Starlette
    from starlette.requests import Request as HTTPRequest
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    name = model_name or model.model_id
    batcher = _Batcher(model, model.capabilities.max_batch_size, batch_wait_s)

    def error(status: int, message: str, kind: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)

    async def chat(req: HTTPRequest):
        try:
            body = await req.json()
        except Exception:
            return error(400, "body is not JSON", "invalid_request_error")
        if not isinstance(body, dict):
            return error(400, "body must be a JSON object", "invalid_request_error")
        if body.get("stream"):
            return error(400, "streaming is not supported by ego_adr.models.serve", "invalid_request_error")
        try:
            messages = parse_messages(body.get("messages"), default_fps)
            max_tokens = body.get("max_completion_tokens") or body.get("max_tokens") or 256
            config = generation_config(body, int(max_tokens))
        except (BadRequest, ValueError, TypeError) as e:
            return error(400, str(e), "invalid_request_error")
        fut = batcher.submit(Request(messages, config, meta={"source": "ego_adr.models.serve"}))
        try:
            gen = await asyncio.wrap_future(fut)
        except Exception as e:
            return error(500, f"{type(e).__name__}: {e}", "server_error")
        if not gen.ok:
            return error(500, gen.error or "no output", "server_error")
        return JSONResponse(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": gen.text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
        )

    async def models(_req: HTTPRequest):
        return JSONResponse(
            {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "ego_adr"}]}
        )

    async def health(_req: HTTPRequest):
        return JSONResponse({"status": "ok", "model": name, "fingerprint": model.fingerprint})

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        yield
        batcher.stop()

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/completions", _completions(model, name, batcher, error), methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/health", health, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.batcher = batcher
    return app


class BackgroundServer:
    """The server on a background thread (tests, notebooks). ``port=0`` picks a free port."""

    def __init__(
        self, model, host: str = "127.0.0.1", port: int = 0, model_name: str | None = None, **app_kw
    ):
        import uvicorn

        self.app = create_app(model, model_name, **app_kw)
        config = uvicorn.Config(self.app, host=host, port=port, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="ego-adr-serve", daemon=True)
        self.host = host

    def start(self, timeout: float = 20.0) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("ego_adr.models.serve did not start")
            time.sleep(0.02)
        self.port = self.server.servers[0].sockets[0].getsockname()[1]
        return self

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.app.state.batcher.stop()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


#: The backends a server can load in-process (serving through another server, openai, is pointless here).
SERVABLE = ("hf", "vllm")


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    return run_cli(lambda: _serve(argv), interrupted="stopped")


def _serve(argv) -> int:
    ap = OneLineParser(
        prog="python -m ego_adr.models.serve",
        description="Serve a VLM behind an OpenAI-compatible /v1/chat/completions endpoint.",
    )
    add_model_arguments(ap, required=True, backends=SERVABLE, device_default="cpu", base_url=False)
    ap.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1; there is no auth)")
    ap.add_argument("--port", type=int, default=8000, help="default: 8000")
    ap.add_argument("--served-name", default=None, help="model name reported to clients (default: --model)")
    ap.add_argument("--default-fps", type=float, default=1.0,
                    help="fps of clips sent without a frames note (default: 1.0)")
    args = ap.parse_args(argv)
    from ego_adr.errors import UserError
    from ego_adr.models.arguments import check_model_arguments

    check_model_arguments(args, model=False)  # before the load, not torch's device list after it

    import uvicorn

    from ego_adr.models import load_model

    if not is_loopback(f"http://{args.host}"):
        print(f"warning: listening on {args.host} without authentication")
    try:
        model = load_model(args.model, backend=args.backend, device=args.device)
    except (ValueError, OSError) as e:  # an unknown model, no weights offline: one line, exit 2
        raise UserError(f"--model {args.model}: {e}") from None
    app = create_app(model, args.served_name or args.model, default_fps=args.default_fps)
    print(f"serving {model.model_id} at http://{args.host}:{args.port}/v1", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
