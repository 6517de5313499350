"""``python -m ego_adr.agents launch``: the demo evaluation over A2A, end to end.

Serving lives in :mod:`ego_adr.agents.serving`, calling in :mod:`ego_adr.agents.client` (re-exported here).
``launch`` starts a white agent (tiny model, embedded demo videos) and a green agent as subprocesses on free
loopback ports, runs one evaluation of the demo set, prints the metrics and stops both (terminate, then kill
after a grace period; nothing is left running, also on Ctrl-C or error).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from ego_adr.agents.client import AgentClient, AgentReply, ask, send_text  # noqa: F401  (re-exported)
from ego_adr.agents.serving import (  # noqa: F401  (re-exported)
    READY_PREFIX,
    ServerThread,
    agent_card,
    bind_socket,
    build_app,
    check_bind,
    is_loopback,
    serve_forever,
    url_of,
)

TINY_MAX_NEW_TOKENS = 48


# ------------------------------------------------------------------------------------------------ launch
class _Agent:
    """A child agent process; its URL comes from its ready line."""

    def __init__(self, name: str, argv: list[str], log_path: Path, env: dict):
        self.name = name
        self.log = open(log_path, "w")  # noqa: SIM115 -- closed in stop()
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True, env=env)
        self.url: str | None = None

    def wait_ready(self, timeout: float) -> str:
        box: dict = {}

        def read():
            for line in self.proc.stdout:
                if line.startswith(READY_PREFIX):
                    box["url"] = line[len(READY_PREFIX):].strip()
                    break

        t = threading.Thread(target=read, daemon=True)
        t.start()
        t.join(timeout)
        if "url" not in box:
            raise RuntimeError(f"{self.name} agent did not start within {timeout:.0f}s "
                               f"(exit code {self.proc.poll()}); see {self.log.name}")
        self.url = box["url"]
        return self.url

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()
        self.log.close()


def start_folder_over(out: Path) -> list[str]:
    """``--fresh``: remove what an evaluation wrote in ``out`` (the green agent's files and both agents' logs) once
    its identity shows it is an evaluation's folder (:func:`ego_adr.folders.start_over`); returns the names."""
    from ego_adr.agents.green import EVALUATOR, KIND, WRITTEN
    from ego_adr.folders import COMMAND_KEY, FolderLock, start_over

    with FolderLock(out):  # an evaluation written before identities named their command: by its evaluator tag
        return start_over(out, {COMMAND_KEY: KIND}, (*WRITTEN, "white.log", "green.log"),
                          legacy=lambda stored: stored.get("evaluator") == EVALUATOR)


def run_launch(task: str = "multiple-choice", output_dir: str | None = None, frames: int = 8, mode: str = "auto",
               limit: int | None = None, concurrency: int = 2, model: str = "tiny",
               max_new_tokens: int | None = None, startup_timeout: float = 240.0, question_wording: str | None = None,
               public_evaluator_root: str | None = None, backend: str = "hf", device: str = "cpu",
               base_url: str | None = None, fresh: bool = False) -> dict:
    """Start white + green on free loopback ports, evaluate the demo set, stop both; return the metrics.
    ``backend``, ``device`` and ``base_url`` go to the white agent as its model arguments.

    The tiny random model never emits an end token, so every answer runs to the token limit; with it, answers are
    capped at :data:`TINY_MAX_NEW_TOKENS` to keep the demo short (real models keep Appendix C's 256).
    ``question_wording`` None: the public green agent's questions when its source is found, else ours (said so).
    ``fresh``: start the folder over first (the green agent's files and the logs, once the folder's identity shows
    it is an evaluation's; :func:`ego_adr.folders.start_over`).
    """
    from ego_adr.agents.messages import ProtocolError
    from ego_adr.agents.public_mc import find_public_root
    from ego_adr.video.demo import ensure_demo

    root = ensure_demo()
    if question_wording is None and task == "multiple-choice":
        try:
            public_evaluator_root = str(find_public_root(public_evaluator_root, str(root / "annotations")))
            question_wording = "public"
        except ProtocolError as e:
            question_wording = "ego_adr"
            print(f"note: asking with ego_adr's own wording: {e}", file=sys.stderr)
    out = Path(output_dir or Path("runs") / f"a2a-demo-{task}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    if fresh:  # before the agents start: their logs are among what goes
        start_folder_over(out)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    py = sys.executable
    white = _Agent("white", [py, "-m", "ego_adr.agents.white", "--model", model, "--mode", mode,
                             "--frames", str(frames), "--video-root", str(root / "videos"), "--port", "0",
                             "--backend", backend, "--device", device,
                             *(["--base-url", base_url] if base_url else []), "--max-new-tokens",
                             str(max_new_tokens or (TINY_MAX_NEW_TOKENS if model == "tiny" else 256))],
                   out / "white.log", env)
    agents = [white]
    try:
        green = _Agent("green", [py, "-m", "ego_adr.agents.green", "--port", "0"], out / "green.log", env)
        agents.append(green)
        white_url = white.wait_ready(startup_timeout)
        green_url = green.wait_ready(startup_timeout)
        print(f"white agent {white_url}  green agent {green_url}", file=sys.stderr)
        cfg = {"video_root": str(root / "videos"), "json_root": str(root / "annotations"),
               "procedure_json_path": str(root / "annotations" / "procedure.json"), "datasets": ["demo"],
               "task_type": task, "output_dir": str(out), "concurrency": concurrency, "limit": limit, "seed": 0,
               # open-ended: one QA pair per clip, as the public evaluator asks (it draws one at random)
               "qa_selection": "one", "question_wording": question_wording or "public",
               "public_evaluator_root": public_evaluator_root}
        from ego_adr.agents.messages import green_message

        reply = asyncio.run(send_text(green_url, green_message(white_url, cfg), timeout=3600))
        print(reply.text)
        metrics = json.loads((out / "metrics.json").read_text())
        return metrics
    finally:
        for a in reversed(agents):
            a.stop()


