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
from ego_adr.errors import OneLineParser

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


def run_launch(task: str = "multiple-choice", output_dir: str | None = None, frames: int = 8, mode: str = "auto",
               limit: int | None = None, concurrency: int = 2, model: str = "tiny",
               max_new_tokens: int | None = None, startup_timeout: float = 240.0, question_wording: str | None = None,
               public_evaluator_root: str | None = None) -> dict:
    """Start white + green on free loopback ports, evaluate the demo set, stop both; return the metrics.

    The tiny random model never emits an end token, so every answer runs to the token limit; with it, answers are
    capped at :data:`TINY_MAX_NEW_TOKENS` to keep the demo short (real models keep Appendix C's 256).
    ``question_wording`` None: the public green agent's questions when its source is found, else ours (said so).
    """
    from ego_adr.agents.protocol import ProtocolError
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
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    py = sys.executable
    white = _Agent("white", [py, "-m", "ego_adr.agents.white", "--model", model, "--mode", mode,
                             "--frames", str(frames), "--video-root", str(root / "videos"), "--port", "0",
                             "--device", "cpu", "--max-new-tokens",
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
        from ego_adr.agents.protocol import green_message

        reply = asyncio.run(send_text(green_url, green_message(white_url, cfg), timeout=3600))
        print(reply.text)
        metrics = json.loads((out / "metrics.json").read_text())
        return metrics
    finally:
        for a in reversed(agents):
            a.stop()


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog="python -m ego_adr.agents launch",
                                description="Evaluate the Ego-ADR white agent with the green agent on the "
                                            "embedded demo set, over A2A on loopback; stops both at the end.")
    p.add_argument("--task", choices=["multiple-choice", "open-end"], default="multiple-choice")
    p.add_argument("--output-dir", default=None, help="default: runs/a2a-demo-<task>")
    p.add_argument("--model", default="tiny", help="white agent model (default: the tiny random model)")
    p.add_argument("--mode", default="auto")
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help=f"white agent answer cap (default: {TINY_MAX_NEW_TOKENS} for the tiny model, else 256)")
    p.add_argument("--question-wording", choices=["public", "ego_adr"], default=None,
                   help="multiple-choice questions: the public green agent's (read from its source) or ours "
                        "(default: public when its source is found, else ours, with a note)")
    p.add_argument("--public-evaluator-root", default=None,
                   help="folder with the public evaluator's src/ (default: $EGO_ADR_PUBLIC_EVALUATOR)")
    a = p.parse_args(argv)
    run_launch(a.task, a.output_dir, a.frames, a.mode, a.limit, a.concurrency, a.model, a.max_new_tokens,
               question_wording=a.question_wording, public_evaluator_root=a.public_evaluator_root)
    return 0
