"""``--backend llamacpp``: a GGUF model (any ``.gguf`` path or a packaged alias) served by a child llama.cpp server
that the run starts and stops.

Why a backend of its own: on a CPU llama.cpp computes on the quantised weights and loads in a second, where the HF
backend dequantises for half a minute and then runs about six times slower (docs/real_models.md); but reaching it
took a server started by hand and ``--backend openai --base-url``. Here the run starts
:class:`~ego_adr.models.llamacpp.LlamaCppServer` itself when the model loads, and stops it when the run ends, is
interrupted, or its process dies (the child exits when its standard input closes).

What it answers:

- chat requests: exactly as ``--backend openai`` against the same server (the same ``/chat/completions`` payload,
  through :class:`~ego_adr.models.openai_api.OpenAIChatModel`), so a reply is the one the docs' runs recorded;
- candidate likelihoods (:mod:`ego_adr.models.likelihood`): the prefix and each candidate tokenised by the server,
  then each position where a candidate token must be scored asked once (``/completion`` with ``n_probs``, the
  probabilities of the raw logits: ``post_sampling_probs`` false), positions visited in token order so the
  server's prompt cache keeps their shared prefix; a token outside the returned top ``n_probs`` is read by a
  request that forces exactly that token (a GBNF grammar naming its id), so every number is exact.

Its fingerprint is the GGUF file's (name, size, first and last MiB), not the server's port: the stage cache holds
across runs, whichever port each run's server took. ``threads`` (``$EGO_ADR_LLAMACPP_THREADS``, default the cores
left idle when the model loads, at least 1) changes the numbers a little, not only the speed: llama.cpp splits its
sums over the threads, and the same candidates scored on 2 threads and on the default differed by up to 0.031 in
probability (5 of 538 alarms on epic-tent-complete, docs/real_models.md). So the thread count is part of every
stage-cache key (``numerics``, :func:`ego_adr.models.cache.request_key`): an answer is never served to a run on
another count. It is not part of the fingerprint, which names the weights (a run's identity, the probe's trials).
Set ``$EGO_ADR_LLAMACPP_THREADS`` for numbers that do not follow the machine's load. Requests with frames fail
alone (text only).
"""

from __future__ import annotations

import atexit
import os
import time
import weakref
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.models.base import INFRASTRUCTURE, SAMPLE, Capabilities, Generation, Request
from ego_adr.models.likelihood import LikelihoodRequest, Likelihoods, split

N_PROBS = 64  # the top tokens each position returns; a needed token outside them costs one forced request
N_CTX = 16384


def resolve_gguf(name: str) -> tuple[Path, str]:
    """(GGUF file, served name) of a packaged alias or a ``.gguf`` path; a :class:`UserError` otherwise."""
    from ego_adr.models.packaged import check_gguf, generative, locate

    key = str(name).strip()
    if key.lower() in generative():
        return locate(key.lower()), key.lower()
    p = Path(os.path.expanduser(key))
    if not p.is_file():
        raise UserError(f"--backend llamacpp takes a .gguf file or a packaged alias ({', '.join(generative())}); "
                        f"{name!r} is neither")
    try:
        check_gguf(p)
    except ValueError as e:
        raise UserError(f"--model {e}") from None
    return p, p.stem


def check_name(name: str | None) -> None:
    """``--model`` before any work: the file exists and is GGUF, or the alias's package is installed."""
    if name is None:
        from ego_adr.models.packaged import generative

        raise UserError(f"--backend llamacpp needs --model: a .gguf file or a packaged alias ({', '.join(generative())})")
    resolve_gguf(name)


def default_threads() -> int:
    env = os.environ.get("EGO_ADR_LLAMACPP_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise UserError(f"EGO_ADR_LLAMACPP_THREADS={env!r}: give a whole number of threads") from None
    idle = (os.cpu_count() or 1) - int(os.getloadavg()[0] + 0.5)
    return max(1, min(8, idle))


class LlamaCppModel:
    """A GGUF model behind a child llama.cpp server owned by this object (module docstring)."""

    backend = "llamacpp"

    def __init__(self, name_or_path: str, *, threads: int | None = None, n_ctx: int = N_CTX,
                 timeout: float = 3600.0, **_ignored) -> None:
        from ego_adr.models.llamacpp import LlamaCppServer
        from ego_adr.models.openai_api import OpenAIChatModel
        from ego_adr.models.packaged import file_fingerprint

        self.path, self.served = resolve_gguf(name_or_path)
        self._name = str(name_or_path)
        self._fingerprint = f"llamacpp:{self.path.name}@{file_fingerprint(self.path)}"
        self.threads = int(threads or default_threads())
        # what besides the weights its numbers depend on: part of every stage-cache key (module docstring)
        self.numerics = f"threads={self.threads}"
        self.server = LlamaCppServer(self.path, self.served, threads=self.threads, n_ctx=n_ctx, swa_full=True)
        self.server.start()
        # the run's end or this object going away: close the child's input and do not wait (an interrupt that
        # arrived during a wait inside a finalizer would be printed and lost, and the command would go on)
        self._finalizer = weakref.finalize(self, self.server.stop, False)
        self._finalizer.atexit = False
        atexit.register(self.server.stop)  # at exit, waited for: an orphan's exit status may be nobody's to reap
        self.root = self.server.base_url.removesuffix("/v1")
        self.timeout = float(timeout)
        self._chat = OpenAIChatModel(self.served, base_url=self.server.base_url, concurrency=1, max_retries=2,
                                     timeout=timeout)
        self._http = None

    @property
    def model_id(self) -> str:
        return self._name

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(video=False, text_only=True, max_batch_size=1)

    def close(self) -> None:
        """Stop the server now, waiting for it to exit."""
        self._chat.close()
        if self._http is not None:
            self._http.close()
            self._http = None
        if self._finalizer.detach() is not None:
            self.server.stop()

    # --- generation ----------------------------------------------------------------------------------------------
    def generate(self, requests: list[Request]) -> list[Generation]:
        out = []
        for r in requests:
            if r.has_frames:
                out.append(Generation(None, "text-only model received video frames"))
            else:
                out.append(self._chat.generate([r])[0])
        return out

    # --- likelihoods ---------------------------------------------------------------------------------------------
    def loglikelihood(self, requests: list[LikelihoodRequest]) -> list[Likelihoods]:
        return [self._one(r) for r in requests]

    def _one(self, request: LikelihoodRequest) -> Likelihoods:
        import httpx

        t0 = time.perf_counter()
        try:
            return self._score(request, t0)
        except (httpx.TimeoutException, httpx.TransportError) as e:
            return Likelihoods(None, error=f"llama.cpp server: {type(e).__name__}: {e}",
                               seconds=time.perf_counter() - t0, kind=INFRASTRUCTURE)
        except _Refused as e:
            kind = INFRASTRUCTURE if e.status >= 500 or e.status in (408, 429) else SAMPLE
            return Likelihoods(None, error=str(e), seconds=time.perf_counter() - t0, kind=kind)
        except ValueError as e:
            return Likelihoods(None, error=f"bad request: {e}", seconds=time.perf_counter() - t0)

    def _score(self, request: LikelihoodRequest, t0: float) -> Likelihoods:
        if request.form == "chat":
            prefix, special = self._post("/apply-template", {"messages": request.chat()})["prompt"], False
        else:
            prefix, special = request.prefix, True
        context = self._tokens(prefix, special)
        parts = [split(context, self._tokens(prefix + c, special)) for c in request.candidates]
        if any(not cont for _, cont in parts):
            raise ValueError("a candidate adds no token to the prefix")
        if any(not base for base, _ in parts):
            raise ValueError("the prefix has no token to condition on (an empty prefix of a model without a "
                             "start-of-text token)")
        needed: dict[tuple[int, ...], set[int]] = {}
        for base, cont in parts:
            for j, tok in enumerate(cont):
                needed.setdefault(tuple(base) + tuple(cont[:j]), set()).add(tok)
        found = {node: self._position(list(node), toks) for node, toks in sorted(needed.items())}
        logprobs = [sum(found[tuple(base) + tuple(cont[:j])][tok] for j, tok in enumerate(cont))
                    for base, cont in parts]
        return Likelihoods(logprobs, [len(c) for _, c in parts], seconds=time.perf_counter() - t0)

    def _position(self, prompt: list[int], tokens: set[int]) -> dict[int, float]:
        """log P(token | prompt) for each of ``tokens``: the top ``N_PROBS`` of one request, a forced request for
        any token outside them."""
        body = {"prompt": prompt, "n_predict": 1, "n_probs": max(N_PROBS, len(tokens)), "temperature": 0,
                "post_sampling_probs": False, "cache_prompt": True}
        top = self._post("/completion", body)["completion_probabilities"][0]["top_logprobs"]
        got = {int(e["id"]): float(e["logprob"]) for e in top if int(e["id"]) in tokens}
        for tok in sorted(tokens - set(got)):
            forced = dict(body, n_probs=1, grammar=f"root ::= <[{tok}]>")
            row = self._post("/completion", forced)["completion_probabilities"][0]
            if int(row["id"]) != tok:
                raise ValueError(f"llama.cpp did not generate the forced token {tok}")
            got[tok] = float(row["logprob"])
        return got

    def _tokens(self, text: str, special: bool) -> list[int]:
        return [int(t) for t in self._post("/tokenize", {"content": text, "add_special": special,
                                                         "parse_special": not special})["tokens"]]

    def _post(self, path: str, body: dict) -> dict:
        import httpx

        if self._http is None:
            self._http = httpx.Client(timeout=self.timeout)
        r = self._http.post(self.root + path, json=body)
        if r.status_code != 200:
            raise _Refused(r.status_code, f"llama.cpp server {path}: HTTP {r.status_code}: {r.text[:300]}")
        return r.json()

    def __repr__(self) -> str:
        return f"LlamaCppModel({self._name!r}, {self.root})"


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
