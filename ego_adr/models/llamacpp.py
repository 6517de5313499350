"""A real llama.cpp OpenAI-compatible server (xllamacpp) for a GGUF model, in a child process of its own.

Why: ``--backend openai`` must work against the servers people actually run, not only against our own
:mod:`ego_adr.models.serve`; llama.cpp's server is the usual way to serve a GGUF model on a CPU, and xllamacpp
ships it prebuilt (MIT, ~34 MB wheel, no compiler). The tests and ``scripts/bench_*.py`` start one with
:class:`LlamaCppServer`; a user runs ``llama-server -m FILE --alias NAME`` (or this class) the same way.

Why a child process: llama.cpp's server inside a process that had already run torch (a pytest worker that had run
other test files) crashed that process with a segmentation fault; two native thread pools (torch's OpenMP and
llama.cpp's) do not share one process safely. The child holds llama.cpp alone, prints the address it listens
on, and stops when its standard input closes, so it never outlives the process that started it; it ignores Ctrl-C
(which a terminal sends to the whole process group), so a request in flight ends and the parent stops it. Its log (llama.cpp
writes a line per request) goes to a file, whose tail a failed start quotes.

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

import atexit
import importlib.util
import json
import selectors
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ego_adr.errors import UserError

# what the child runs: argv = gguf, alias, threads, n_ctx, parallel, port, swa_full (0/1)
_CHILD = """
import os
import signal
import sys
import xllamacpp

signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent stops us

gguf, alias, threads, n_ctx, parallel, port, swa_full = sys.argv[1:8]
p = xllamacpp.CommonParams()
p.model.path = gguf
p.model_alias = {alias}
p.n_ctx, p.n_parallel = int(n_ctx), int(parallel)
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = int(threads)
p.port, p.hostnames = int(port), ["127.0.0.1"]
p.swa_full = swa_full == "1"
server = xllamacpp.Server(p)
print(server.listening_address, flush=True)
sys.stdin.read()  # until the parent closes it (or dies)
os._exit(0)  # at once: the server's own shutdown (its threads joined) was seen to hang once the parent had gone
"""


#: Children told to exit and not waited for (``stop(wait=False)``): waited for when the interpreter exits, so none is
#: left for a process that may not reap orphans.
_CLOSING: list[subprocess.Popen] = []


def _reap() -> None:
    for proc in _CLOSING:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


atexit.register(_reap)


class LlamaCppServer:
    """``with LlamaCppServer(path, alias) as srv: srv.base_url`` (``http://127.0.0.1:PORT/v1``)."""

    def __init__(self, gguf: str | Path, alias: str, *, threads: int = 2, n_ctx: int = 4096, parallel: int = 1,
                 port: int = 0, swa_full: bool = False, start_timeout: float = 180.0):
        if importlib.util.find_spec("xllamacpp") is None:
            raise UserError("a llama.cpp server needs xllamacpp: pip install -e '.[real-models]'")
        from ego_adr.models.packaged import check_gguf

        check_gguf(gguf)
        self.alias, self.gguf = alias, Path(gguf)
        self._argv = [str(gguf), alias, str(int(threads)), str(int(n_ctx)), str(int(parallel)), str(int(port)),
                      "1" if swa_full else "0"]
        self.start_timeout = float(start_timeout)
        self._proc: subprocess.Popen | None = None
        self._address: str | None = None
        self.log: Path | None = None

    def start(self) -> LlamaCppServer:
        fd, log = tempfile.mkstemp(prefix=f"llamacpp-{self.alias}-", suffix=".log")
        self.log = Path(log)
        with open(fd, "wb") as err:
            self._proc = subprocess.Popen([sys.executable, "-c", _CHILD, *self._argv], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=err, text=True)
        sel = selectors.DefaultSelector()
        sel.register(self._proc.stdout, selectors.EVENT_READ)
        line, deadline = "", time.monotonic() + self.start_timeout
        while not line and self._proc.poll() is None and time.monotonic() < deadline:
            if sel.select(timeout=0.5):
                line = self._proc.stdout.readline().strip()
                if not line:
                    break  # the child closed its output: it is exiting
        sel.close()
        if not line.startswith("http"):
            tail = self.log.read_text(errors="replace").strip().splitlines()[-3:] if self.log.exists() else []
            self.stop()
            raise RuntimeError(f"llama.cpp's server for {self.gguf.name} did not start within "
                               f"{self.start_timeout:.0f} s: " + (" | ".join(tail) or "no log"))
        self._address = line.rstrip("/")
        return self

    @property
    def base_url(self) -> str:
        if self._address is None:
            raise RuntimeError("the server is not started")
        return f"{self._address}/v1"

    def chat(self, payload: dict, timeout: float = 600.0) -> dict:
        """One chat completion straight to the server; llama.cpp's own timings ride along in ``timings``."""
        import httpx

        r = httpx.post(f"{self.base_url}/chat/completions", content=json.dumps(payload),
                       headers={"Content-Type": "application/json"}, timeout=timeout)
        r.raise_for_status()
        return r.json()

    def stop(self, wait: bool = True) -> None:
        """Close the child's input, so it exits; ``wait``: wait for it (killing it after 10 s)."""
        proc, self._proc, self._address = self._proc, None, None
        if proc is None:
            return
        if not wait:
            proc.stdin.close()
            proc.stdout.close()
            if self.log is not None:
                self.log.unlink(missing_ok=True)
            _CLOSING.append(proc)
            return
        try:
            proc.stdin.close()  # the child's read returns: it exits
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        except KeyboardInterrupt:  # asked to stop while waiting: do not wait, and pass the interrupt on
            proc.kill()
            raise
        if proc.stdout is not None:
            proc.stdout.close()
        if self.log is not None:  # started and stopped by hand or by ``with``: the log goes with the server
            self.log.unlink(missing_ok=True)

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
