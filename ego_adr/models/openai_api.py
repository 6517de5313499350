"""OpenAI-compatible chat backend: GPT-4o, Gemini's OpenAI endpoint, vLLM / SGLang servers, ``ego_adr.models.serve``.

Why a separate backend rather than an HF wrapper: hosted models and multi-GPU inference servers are reached over
HTTP, and the chat-completions wire format is the one they all share. Video is not part of that format, so a
:class:`~ego_adr.models.base.Frames` clip travels as a short text note ("N frames sampled uniformly ... at X fps")
followed by N ``image_url`` parts holding base64 JPEG (or PNG) frames. Our own server (:mod:`ego_adr.models.serve`)
recognises the note and rebuilds the clip with its frame rate, so a served HF model sees the same input as a local
one.

Decoding: the paper decodes greedily (Appendix C, H); OpenAI-style APIs have no ``do_sample`` switch, so greedy is
sent as ``temperature=0`` (hosted models may still be slightly non-deterministic at temperature 0).

Keys come only from the environment variable named by ``api_key_env`` (never a flag or a config value, so they do
not land in resolved configs or shell history). A loopback ``base_url`` may run without a key.

The ``openai`` package is used when installed (``pip install 'ego-adr[openai]'``); otherwise requests go through
``httpx`` (a core dependency). Retries (429, 408, 409, 5xx, connection errors and timeouts; never other 4xx) are
done here with exponential backoff and jitter in both cases, so behaviour does not depend on which client is used.
A request that still fails on a retryable status or an unreachable endpoint is returned with kind
``infrastructure`` (retryable: never cached, rerun by ``--retry-failed``); any other 4xx is a ``sample`` failure.
Once one request has found the endpoint unreachable through its whole retry sequence, later requests try once
each until one gets through, so an outage is noticed in one backoff sequence rather than one per sample.
"""

from __future__ import annotations

import base64
import os
import random
import re
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from .base import INFRASTRUCTURE, SAMPLE, Capabilities, Frames, Generation, Message, Request

DEFAULT_BASE_URL = "https://api.openai.com/v1"
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"}
RETRY_STATUS = {408, 409, 429}

#: The note placed before a clip's frames. ``ego_adr.models.serve`` parses it back (keep the two in sync via
#: :func:`frames_note` / :func:`parse_frames_note`).
_NOTE_RE = re.compile(
    r"^The following (\d+) frames? (?:are|is) sampled uniformly from the video clip at ([0-9.]+) frames per second\.$"
)


def frames_note(n: int, fps: float) -> str:
    return (
        f"The following {n} frames are sampled uniformly from the video clip at {fps:.4g} frames per second."
    )


def parse_frames_note(text: str) -> tuple[int, float] | None:
    """``(n_frames, fps)`` when ``text`` is exactly a note written by :func:`frames_note`, else None."""
    m = _NOTE_RE.match(text.strip())
    if not m:
        return None
    return int(m.group(1)), float(m.group(2))


def is_loopback(base_url: str) -> bool:
    host = (urlparse(base_url).hostname or "").lower()
    return host in LOOPBACK_HOSTS or host.startswith("127.")


def encode_frame(frame, *, max_side: int | None = 512, image_format: str = "jpeg", quality: int = 85) -> str:
    """RGB uint8 ``(H, W, 3)`` → ``data:`` URL. Downscales so the longer side is at most ``max_side``
    (hosted APIs bill and tile per pixel; 512 keeps "low" detail at its single-tile price)."""
    import cv2

    h, w = frame.shape[:2]
    if max_side and max(h, w) > max_side:
        scale = max_side / max(h, w)
        frame = cv2.resize(
            frame, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA
        )
    bgr = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)
    if image_format == "png":
        ok, buf = cv2.imencode(".png", bgr)
        mime = "image/png"
    elif image_format == "jpeg":
        ok, buf = cv2.imencode(".jpg", bgr, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
        mime = "image/jpeg"
    else:
        raise ValueError(f"image_format must be 'jpeg' or 'png', got {image_format!r}")
    if not ok:
        raise ValueError(f"could not encode a frame of shape {frame.shape} as {image_format}")
    return f"data:{mime};base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def to_openai_messages(
    messages: list[Message],
    *,
    max_side: int | None = 512,
    image_detail: str | None = "low",
    image_format: str = "jpeg",
    quality: int = 85,
) -> list[dict]:
    """Our messages → chat-completions messages. A message with one text part is sent as a plain string (some
    servers reject part lists in system messages); anything else as a list of parts."""
    out = []
    for m in messages:
        parts: list[dict] = []
        for p in m.content:
            if isinstance(p, str):
                parts.append({"type": "text", "text": p})
            elif isinstance(p, Frames):
                parts.append({"type": "text", "text": frames_note(p.num_frames, p.fps)})
                for frame in p.as_uint8():
                    image_url = {
                        "url": encode_frame(
                            frame, max_side=max_side, image_format=image_format, quality=quality
                        )
                    }
                    if image_detail:
                        image_url["detail"] = image_detail
                    parts.append({"type": "image_url", "image_url": image_url})
            else:
                raise TypeError(f"unsupported message part {type(p).__name__}")
        if len(parts) == 1 and parts[0]["type"] == "text":
            out.append({"role": m.role, "content": parts[0]["text"]})
        else:
            out.append({"role": m.role, "content": parts})
    return out


class APIError(Exception):
    """A failed HTTP exchange; ``status`` is None for connection errors and timeouts."""

    def __init__(self, status: int | None, message: str, retry_after: float | None = None):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRY_STATUS or self.status >= 500


def _retry_after(headers) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class OpenAIChatModel:
    """VLM protocol over an OpenAI-compatible ``/chat/completions`` endpoint.

    ``concurrency`` bounds simultaneous HTTP requests for this instance, across threads and calls.
    ``image_format="png"`` with ``max_side=None`` sends frames losslessly (used to check that a served model sees
    exactly the local input); JPEG at 512 px is the economical default for hosted APIs.
    """

    backend = "openai"  # reported by the model itself (the stage-cache key, run.json)

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        max_retries: int = 5,
        timeout: float = 120,
        image_detail: str | None = "low",
        max_side: int | None = 512,
        image_format: str = "jpeg",
        jpeg_quality: int = 85,
        retry_base_seconds: float = 1.0,
        retry_max_seconds: float = 30.0,
        use_openai_sdk: bool | None = None,
        **extra,
    ):
        if extra:
            warnings.warn(f"OpenAIChatModel ignores unknown options: {sorted(extra)}", stacklevel=2)
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if image_format not in ("jpeg", "png"):
            raise ValueError(f"image_format must be 'jpeg' or 'png', got {image_format!r}")
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.api_key_env = api_key_env
        self.api_key = os.environ.get(api_key_env) or None
        if self.api_key is None and not is_loopback(self.base_url):
            raise RuntimeError(
                f"no API key for {self.base_url}: export {api_key_env}=... (keys are read from the environment only; "
                "choose another variable with api_key_env, e.g. GEMINI_API_KEY)"
            )
        self.concurrency = int(concurrency)
        self.max_retries = int(max_retries)
        self.timeout = float(timeout)
        self.image_detail = image_detail
        self.max_side = max_side
        self.image_format = image_format
        self.jpeg_quality = jpeg_quality
        self.retry_base_seconds = retry_base_seconds
        self.retry_max_seconds = retry_max_seconds
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._endpoint_down = threading.Event()  # set after a whole retry sequence found nobody
        self._client = None
        self._client_lock = threading.Lock()
        if use_openai_sdk is None:
            try:
                import openai  # noqa: F401

                use_openai_sdk = True
            except ImportError:
                use_openai_sdk = False
        elif use_openai_sdk:
            try:
                import openai  # noqa: F401
            except ImportError as e:
                raise ImportError("use_openai_sdk=True needs: pip install 'ego-adr[openai]'") from e
        self.use_openai_sdk = bool(use_openai_sdk)

    # --- VLM protocol -------------------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return self.model

    @property
    def fingerprint(self) -> str:
        return f"openai:{self.base_url}:{self.model}"

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(video=True, text_only=True, max_batch_size=self.concurrency)

    def generate(self, requests: list[Request]) -> list[Generation]:
        if not requests:
            return []
        if len(requests) == 1:
            return [self._generate_one(requests[0])]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(requests))) as pool:
            return list(pool.map(self._generate_one, requests))

    # --- internals ----------------------------------------------------------------------------------------
    def payload(self, request: Request) -> dict:
        cfg = request.config
        return {
            "model": self.model,
            "messages": to_openai_messages(
                request.messages,
                max_side=self.max_side,
                image_detail=self.image_detail,
                image_format=self.image_format,
                quality=self.jpeg_quality,
            ),
            "max_tokens": int(cfg.max_new_tokens),
            # greedy (the paper's setting) is temperature 0 on these APIs; sampling uses the API default of 1
            "temperature": 1.0 if cfg.do_sample else 0.0,
        }

    def _generate_one(self, request: Request) -> Generation:
        t0 = time.perf_counter()
        try:
            payload = self.payload(request)
        except Exception as e:  # a bad frame fails this request only
            return Generation(None, f"encode: {type(e).__name__}: {e}", time.perf_counter() - t0)
        attempt = 0
        while True:
            try:
                with self._slots:
                    text = self._post(payload)
                self._endpoint_down.clear()
                if text is None:
                    return Generation(None, "empty response (no message content)", time.perf_counter() - t0)
                return Generation(text, None, time.perf_counter() - t0)
            except APIError as e:
                down = e.status is None and self._endpoint_down.is_set()
                if not e.retryable or attempt >= self.max_retries or down:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    if e.status is None and attempt >= self.max_retries:
                        # the endpoint stayed unreachable through a whole retry sequence: later requests fail
                        # fast (one attempt each) until one of them gets through, so an outage costs one
                        # backoff sequence per run, not one per sample
                        self._endpoint_down.set()
                    kind = INFRASTRUCTURE if e.retryable else SAMPLE
                    return Generation(None, f"{e}{tries}", time.perf_counter() - t0, kind=kind)
                time.sleep(self._backoff(attempt, e.retry_after))
                attempt += 1
            except Exception as e:  # a malformed reply etc.: recorded, never raised
                return Generation(None, f"{type(e).__name__}: {e}", time.perf_counter() - t0)

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.retry_max_seconds, self.retry_base_seconds * (2**attempt))
        delay *= 0.5 + random.random()  # jitter: concurrent workers do not retry in lock step
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.retry_max_seconds))
        return delay

    def _headers(self) -> dict:
        h = {"Content-Type": "application/json"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def _get_client(self):
        with self._client_lock:
            if self._client is None:
                if self.use_openai_sdk:
                    import openai

                    self._client = openai.OpenAI(
                        base_url=self.base_url,
                        api_key=self.api_key or "EMPTY",
                        timeout=self.timeout,
                        max_retries=0,  # retries are ours, identical for both clients
                    )
                else:
                    import httpx

                    limits = httpx.Limits(
                        max_connections=self.concurrency, max_keepalive_connections=self.concurrency
                    )
                    self._client = httpx.Client(timeout=self.timeout, limits=limits, headers=self._headers())
            return self._client

    def _post(self, payload: dict) -> str | None:
        client = self._get_client()
        if self.use_openai_sdk:
            return self._post_sdk(client, payload)
        return self._post_httpx(client, payload)

    def _post_httpx(self, client, payload: dict) -> str | None:
        import httpx

        try:
            r = client.post(f"{self.base_url}/chat/completions", json=payload)
        except (httpx.TimeoutException, httpx.TransportError) as e:
            raise APIError(None, f"{type(e).__name__}: {e}") from e
        if r.status_code != 200:
            raise APIError(r.status_code, _error_message(r), _retry_after(r.headers))
        return _content(r.json())

    def _post_sdk(self, client, payload: dict) -> str | None:
        import openai

        try:
            resp = client.chat.completions.create(**payload)
        except openai.APIStatusError as e:
            raise APIError(
                e.status_code, str(e.message), _retry_after(getattr(e.response, "headers", None))
            ) from e
        except (openai.APIConnectionError, openai.APITimeoutError) as e:
            raise APIError(None, f"{type(e).__name__}: {e}") from e
        return _content(resp.model_dump())

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _error_message(r) -> str:
    try:
        body = r.json()
        err = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(err, dict):
            return str(err.get("message") or err)[:500]
        return str(err)[:500]
    except Exception:
        return (r.text or r.reason_phrase or "")[:500]


def _content(body: dict) -> str | None:
    choices = body.get("choices") or []
    if not choices:
        raise ValueError(f"reply without choices: {str(body)[:200]}")
    msg = choices[0].get("message") or {}
    content = msg.get("content")
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content
