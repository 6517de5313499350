"""OpenAI-compatible chat backend: GPT-4o, Gemini's OpenAI endpoint, vLLM / SGLang servers, ``ego_adr.models.serve``.

Why a separate backend rather than an HF wrapper: hosted models and multi-GPU inference servers are reached over
HTTP, and the chat-completions wire format is the one they all share. Video is not part of that format, so a
:class:`~ego_adr.models.base.Frames` clip travels as a short text note ("N frames sampled uniformly ... at X fps")
followed by N ``image_url`` parts (:mod:`ego_adr.models.wire`). How the pictures are encoded is the named
``frame_transfer``: ``lossless`` (PNG, decoded size, exact rate: the default for a loopback endpoint, where our
own server :mod:`ego_adr.models.serve` then answers exactly like the local model) or ``jpeg-512`` (the default for
hosted APIs). It is part of the fingerprint, so it shows in ``run.json``/``identity.json`` and in every cache key.

Decoding: the paper decodes greedily (Appendix C, H); OpenAI-style APIs have no ``do_sample`` switch, so greedy is
sent as ``temperature=0`` (hosted models may still be slightly non-deterministic at temperature 0). A sampled
request (``GenerationConfig.do_sample``) sends its ``temperature``, ``top_p`` and ``seed``: vLLM, SGLang and our
own server seed each request with it (:mod:`ego_adr.models.serve` answers exactly like the local HF model), while
hosted APIs document the seed as best effort.

Keys come only from the environment variable named by ``api_key_env`` (never a flag or a config value, so they do
not land in resolved configs or shell history). A loopback ``base_url`` may run without a key.

The ``openai`` package is used when installed (``pip install 'ego-adr[openai]'``); otherwise requests go through
``httpx`` (a core dependency). Retries (429, 408, 409, 5xx, connection errors and timeouts; never other 4xx) are
done here with exponential backoff and jitter in both cases, so behaviour does not depend on which client is used.
A request that still fails on a retryable status or an unreachable endpoint is returned with kind
``infrastructure`` (retryable: never cached, rerun by ``--retry-failed``); any other 4xx is a ``sample`` failure.
Once one request has found the endpoint unreachable through its whole retry sequence, later requests try once
each until one gets through, so an outage is noticed in one backoff sequence rather than one per sample.
The first backoff is ``retry_base_seconds`` (1 s), else ``$EGO_ADR_RETRY_BASE_SECONDS`` where a process that builds
its clients itself (lmms-eval's judges) must wait less: the test suite's judge outage (the defaults stay).
"""

from __future__ import annotations

import os
import random
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

from .base import INFRASTRUCTURE, SAMPLE, Capabilities, Generation, Request
from .wire import (  # noqa: F401  (re-exported: the wire format)
    PRESET,
    Transfer,
    encode_frame,
    frames_note,
    parse_frames_note,
    resolve_transfer,
    to_openai_messages,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RETRY_BASE_ENV = "EGO_ADR_RETRY_BASE_SECONDS"
LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "[::1]"}
RETRY_STATUS = {408, 409, 429}

def is_loopback(base_url: str) -> bool:
    host = (urlparse(base_url).hostname or "").lower()
    return host in LOOPBACK_HOSTS or host.startswith("127.")


class APIError(Exception):
    """A failed HTTP exchange; ``status`` is None for connection errors and timeouts."""

    def __init__(self, status: int | None, message: str, retry_after: float | None = None):
        super().__init__(f"HTTP {status}: {message}" if status else message)
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return self.status is None or self.status in RETRY_STATUS or self.status >= 500


def _retry_base() -> float:
    """The first backoff when the caller names none: 1 s, or ``$EGO_ADR_RETRY_BASE_SECONDS`` (seconds >= 0)."""
    raw = os.environ.get(RETRY_BASE_ENV, "").strip() or "1"
    if not raw.replace(".", "", 1).isdigit():
        from ego_adr.errors import UserError

        raise UserError(f"${RETRY_BASE_ENV} must be a number of seconds >= 0, got {raw!r}")
    return float(raw)


def _retry_after(headers) -> float | None:
    try:
        value = headers.get("retry-after") if headers is not None else None
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


class OpenAIChatModel:
    """VLM protocol over an OpenAI-compatible ``/chat/completions`` endpoint.

    ``concurrency`` bounds simultaneous HTTP requests for this instance, across threads and calls.
    ``frame_transfer`` names how frames travel (:data:`ego_adr.models.wire.TRANSFERS`; default ``lossless`` to a
    loopback ``base_url``, ``jpeg-512`` to any other); ``image_format``, ``max_side``, ``image_detail`` and
    ``jpeg_quality`` replace single settings of it (the result is named after them, see
    :func:`~ego_adr.models.wire.resolve_transfer`).
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
        frame_transfer: str | None = None,
        image_detail=PRESET,
        max_side=PRESET,
        image_format=PRESET,
        jpeg_quality=PRESET,
        retry_base_seconds: float | None = None,
        retry_max_seconds: float = 30.0,
        use_openai_sdk: bool | None = None,
        **extra,
    ):
        if extra:
            warnings.warn(f"OpenAIChatModel ignores unknown options: {sorted(extra)}", stacklevel=2)
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.transfer: Transfer = resolve_transfer(frame_transfer, is_loopback(self.base_url),
                                                   image_format=image_format, max_side=max_side,
                                                   detail=image_detail, quality=jpeg_quality)
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
        self.retry_base_seconds = _retry_base() if retry_base_seconds is None else retry_base_seconds
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
        """Endpoint, model and frame transfer: answers to JPEG frames are not answers to lossless ones, so the
        transfer is in every cache key (and shows in run.json / identity.json as the model's fingerprint)."""
        return f"openai:{self.base_url}:{self.model}:frames={self.transfer.name}"

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

    def served_models(self) -> list[str] | None:
        """The names the server lists at ``/models`` (ids, and the aliases llama.cpp's server adds); ``None`` when
        it lists nothing usable (unreachable, 404, an error, not JSON): then nothing can be checked here, and an
        unreachable server is found by the requests themselves (retryable failures, never cached)."""
        import httpx

        try:
            r = httpx.get(f"{self.base_url}/models", headers=self._headers(), timeout=min(self.timeout, 10.0))
            data = r.json().get("data") if r.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            return None
        if not isinstance(data, list):
            return None
        names = [str(m.get("id")) for m in data if isinstance(m, dict) and m.get("id")]
        names += [str(a) for m in data if isinstance(m, dict) for a in (m.get("aliases") or [])]
        return names or None

    def check_served(self) -> None:
        """A server that lists its models and not the one asked for would answer every request with another
        model (llama.cpp's server ignores the name asked for): a :class:`~ego_adr.errors.UserError` before any
        request, so no reply of the wrong model is cached or recorded under this model's name."""
        names = self.served_models()
        if names is None or self.model in names or f"models/{self.model}" in names:
            return
        from ego_adr.errors import UserError

        raise UserError(f"the server at {self.base_url} serves {', '.join(dict.fromkeys(names))}, not "
                        f"{self.model!r}: pass --model {names[0]}, or start the server with {self.model} (llama.cpp: "
                        f"--alias {self.model})")

    def loglikelihood(self, requests: list) -> list:
        """Candidate likelihoods from a server that echoes prompt log-probabilities, one ``/completions`` request
        per candidate (:mod:`ego_adr.models.openai_likelihood`); a failure belongs to its request."""
        return [self._likelihoods(r) for r in requests]

    def _likelihoods(self, request):
        import httpx

        from ego_adr.models.likelihood import Likelihoods
        from ego_adr.models.openai_likelihood import read

        t0 = time.perf_counter()
        if request.form != "raw":
            return Likelihoods(None, error="bad request: a chat prefix needs the model's chat template, which the "
                               "OpenAI protocol does not expose; send a raw prefix", seconds=time.perf_counter() - t0)
        lps, counts = [], []
        for cand in request.candidates:
            payload = {"model": self.model, "prompt": request.prefix + cand, "max_tokens": 1, "temperature": 0.0,
                       "echo": True, "logprobs": 1}
            try:
                r = httpx.post(f"{self.base_url}/completions", json=payload, headers=self._headers(),
                               timeout=self.timeout)
                if r.status_code != 200:
                    raise APIError(r.status_code, _error_message(r), _retry_after(r.headers))
                lp, n = read(r.json(), len(request.prefix), len(request.prefix) + len(cand))
            except (httpx.TimeoutException, httpx.TransportError, APIError) as e:
                retry = not isinstance(e, APIError) or e.retryable
                return Likelihoods(None, error=f"{type(e).__name__}: {e}", seconds=time.perf_counter() - t0,
                                   kind=INFRASTRUCTURE if retry else SAMPLE)
            except (ValueError, KeyError, TypeError, IndexError) as e:
                return Likelihoods(None, error=f"{self.base_url} returned no prompt log-probabilities ({e}): it "
                                   "cannot score candidates", seconds=time.perf_counter() - t0)
            lps.append(lp)
            counts.append(n)
        return Likelihoods(lps, counts, seconds=time.perf_counter() - t0)

    # --- internals ----------------------------------------------------------------------------------------
    def payload(self, request: Request) -> dict:
        cfg = request.config
        return {
            "model": self.model,
            "messages": to_openai_messages(
                request.messages,
                max_side=self.transfer.max_side,
                image_detail=self.transfer.detail,
                image_format=self.transfer.image_format,
                quality=self.transfer.quality,
                exact_fps=self.transfer.exact_fps,
            ),
            "max_tokens": int(cfg.max_new_tokens),
            # greedy (the paper's setting) is temperature 0 on these APIs
            "temperature": 0.0,
            **sampling_fields(cfg),
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


def sampling_fields(cfg) -> dict:
    """What a sampled config adds to (and replaces in) the payload; nothing for a greedy one, whose payload is
    what it was before sampling existed."""
    if not cfg.do_sample:
        return {}
    return {"temperature": cfg.temperature, "top_p": cfg.top_p, "seed": cfg.seed}


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
