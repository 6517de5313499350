"""``--backend llamacpp`` from the command line (issue 46 item 2): the run starts its own llama.cpp server for a
packaged alias, replies as ``--backend openai`` against a server started by hand, shows its progress, and when it
is stopped (SIGTERM, as ``kill`` and ``timeout`` send) leaves neither the folder's ``.lock`` nor a server behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.real_models.test_real_text_paths import DATA, _small_root

pytestmark = pytest.mark.slow


def _args(root: Path, out: Path, *backend: str) -> list[str]:
    return ["evaluate", "--benchmark", "epic-tent-o", "--stream", "oracle-merged", "--monitor", "prego",
            "--model", "smollm2-135m", *backend, "--data-root", str(root), "--out", str(out),
            "--cache-dir", str(out.parent / f"cache-{out.name}")]


@pytest.fixture()
def root(tmp_path):
    if not (DATA / "dtgl" / "epic-tent" / "test.json").is_file():
        pytest.skip(f"the step-stream benchmark files are not at {DATA} (set EGO_ADR_ONLINE_MISTAKES)")
    return _small_root(tmp_path)


def test_the_llamacpp_backend_replies_as_a_server_started_by_hand_and_shows_progress(root, smollm2, tmp_path, capsys):
    from ego_adr.models.base import GenerationConfig, Message, Request
    from ego_adr.monitoring.__main__ import main

    out = tmp_path / "llamacpp"
    assert main(_args(root, out, "--backend", "llamacpp")) == 0
    err = capsys.readouterr().err
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert "prego oracle-merged: 100%" in err and f"{len(steps)}/{len(steps)}" in err  # the bar over the test steps
    ident = json.loads((out / "identity.json").read_text())
    assert ident["backend"] == "llamacpp" and ident["base_url"] is None
    examples = json.loads((out / "prompts.json").read_text())["examples"]["all"]
    for s in steps[:3]:  # the same prompt to the session's server, started by hand, through --backend openai
        ask = Request([Message.user(examples + s["evidence"]["query"])], GenerationConfig(max_new_tokens=4))
        assert smollm2.generate([ask])[0].text == s["evidence"]["replies"][0]


def test_a_run_stopped_by_sigterm_leaves_no_lock_and_no_server(root, tmp_path):
    out, root = tmp_path / "stopped", DATA  # all 168 steps: the run is still going when it is stopped
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen([sys.executable, "-m", "ego_adr.monitoring", *_args(root, out, "--backend", "llamacpp")],
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline, seen = time.monotonic() + 120, ""
    while "step/s" not in seen and time.monotonic() < deadline and proc.poll() is None:
        seen += os.read(proc.stderr.fileno(), 4096).decode(errors="replace")  # the bar: the model is answering
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert children, "no llama.cpp server was started"
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(60)
    time.sleep(1)
    assert rc == 130 and (out / "identity.json").exists() and not (out / ".lock").exists()
    assert not [c for c in children if Path(f"/proc/{c}").exists()]  # the server went with the run


def test_a_judge_on_the_llamacpp_backend_answers_and_a_bad_one_is_refused_before_any_work(tmp_path):
    from ego_adr.errors import UserError
    from ego_adr.eval.judges import JudgeSpec
    from ego_adr.run.config import RunConfig
    from ego_adr.run.judging import judge_request, load_judge
    from ego_adr.run.open_end import judge_specs

    spec = JudgeSpec.parse("smol=smollm2-135m@llamacpp")
    assert spec.backend == "llamacpp"
    judge = load_judge(spec)
    try:
        g = judge.generate([judge_request({"question": "What went wrong?", "reference": "The salt was forgotten.",
                                           "answer": "They forgot the salt."})])[0]
    finally:
        judge.close()
    assert g.ok and g.text, g.error
    cfg = RunConfig(task="open-end", model="smollm2-135m", judges=[f"x={tmp_path / 'absent.gguf'}"],
                    judge_backend="llamacpp")
    with pytest.raises(UserError, match="neither"):
        judge_specs(cfg)


def test_an_answer_is_kept_under_the_thread_count_that_gave_it(smollm2_server):
    """llama.cpp's numbers move a little with its thread count (docs/real_models.md), so the thread count is part
    of every stage-cache key: the cache never serves an answer computed on 2 threads to a run on 1; the
    fingerprint, which names the weights, is the same. (``smollm2_server``: skips where the packaged GGUF or
    llama.cpp is missing.)"""
    from ego_adr.models.base import GenerationConfig, Message, Request
    from ego_adr.models.cache import likelihood_key, request_key
    from ego_adr.models.likelihood import LikelihoodRequest
    from ego_adr.models.llamacpp_backend import LlamaCppModel

    one, two = LlamaCppModel("smollm2-135m", threads=1), LlamaCppModel("smollm2-135m", threads=2)
    try:
        assert one.fingerprint == two.fingerprint and (one.numerics, two.numerics) == ("threads=1", "threads=2")
        req = LikelihoodRequest("1, 2, 3,", (" 4", " 5"), {"stage": "t"})
        assert likelihood_key(one, req, "llamacpp") != likelihood_key(two, req, "llamacpp")
        chat = Request([Message("user", ["Say hi."])], GenerationConfig(max_new_tokens=4))
        assert request_key(one, chat, "llamacpp") != request_key(two, chat, "llamacpp")
    finally:
        one.close()
        two.close()
