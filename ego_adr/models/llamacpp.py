"""A real llama.cpp OpenAI-compatible server in this process (xllamacpp), for a GGUF model.

Why: ``--backend openai`` must work against the servers people actually run, not only against our own
:mod:`ego_adr.models.serve`; llama.cpp's server is the usual way to serve a GGUF model on a CPU, and xllamacpp
ships it prebuilt (MIT, ~34 MB wheel, no compiler). The tests and ``scripts/bench_models.py`` start one with
:class:`LlamaCppServer`; a user runs ``llama-server -m FILE --alias NAME`` (or this class) the same way.

The served name is the alias (``model_alias``), so :meth:`~ego_adr.models.openai_api.OpenAIChatModel.check_served`
can tell a server of another model from the right one (llama.cpp answers whatever name a request carries).
The server listens on a free loopback port unless ``port`` names one: the endpoint is part of every cache key
(:attr:`~ego_adr.models.openai_api.OpenAIChatModel.fingerprint`), so a benchmark that must resume from its stage
cache serves on the same port each run. ``threads`` sets both generation and prompt threads (a shared 2-core
machine: 2; 1 when other jobs hold the cores, since llama.cpp's threads wait on each other). ``swa_full`` keeps a
full-size cache for sliding-window layers (llama.cpp's ``--swa-full``): without it a model with such layers (Gemma
3) recomputes the whole prompt on every request, even when it repeats the last one's prefix (HelpMeOut's monitor
asks once per step on a growing prefix).
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.errors import UserError


class LlamaCppServer:
    """``with LlamaCppServer(path, alias) as srv: srv.base_url`` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, gguf: str | Path, alias: str, *, threads: int = 2, n_ctx: int = 4096, parallel: int = 1,
                 port: int = 0, swa_full: bool = False):
        try:
            import xllamacpp
        except ImportError:
            raise UserError("a llama.cpp server needs xllamacpp: pip install -e '.[real-models]'") from None
        from ego_adr.models.packaged import check_gguf

        check_gguf(gguf)
        p = xllamacpp.CommonParams()
        p.model.path = str(gguf)
        p.model_alias = {alias}
        p.n_ctx, p.n_parallel = int(n_ctx), int(parallel)
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = int(threads)
        p.port, p.hostnames = int(port), ["127.0.0.1"]
        p.swa_full = bool(swa_full)
        self.alias, self.gguf, self._params, self._server = alias, Path(gguf), p, None

    def start(self) -> LlamaCppServer:
        import xllamacpp

        self._server = xllamacpp.Server(self._params)
        return self

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the server is not started")
        return f"{self._server.listening_address.rstrip('/')}/v1"

    def chat(self, payload: dict) -> dict:
        """One chat completion in process (no HTTP): llama.cpp's own timings ride along in ``timings``."""
        return self._server.handle_chat_completions(payload)

    def stop(self) -> None:
        self._server = None  # the server's destructor stops its loop and listener

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
