"""A new dataset is one module plus one registry entry: a source with its own JSON schema and its own video layout,
written here into a temporary module and registered from outside the package, runs end to end through
``ego_adr.run``, ``ego_adr.eval score`` and the green agent, without editing any file of ego_adr."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

PLUGIN = '''
"""A toy-kitchen dataset: its records say `clip`, `recipe`, `from_s`/`to_s`, `doing`, `verdict`; its videos lie at
{video_root}/toykitchen/<recipe>/cam_<clip>.mp4."""
from ego_adr.data.sources import SourceSpec, register
from ego_adr.data.sources.spec import Extracted, text


def normalise(r):
    return {"video_id": r["clip"], "task_id": r["recipe"], "start_time": r["from_s"], "end_time": r["to_s"],
            "close_end_answer": r.get("verdict"), "qa_pairs": r.get("qa"), "doing": r["doing"],
            "is_error": r.get("verdict") != ["correct"]}


def extract(r, context=None):
    return Extracted(action=text(r["doing"]), action_field="doing", reference=None,
                     is_correct=not r["is_error"], id_parts=(text(r["doing"])[:12],))


register(SourceSpec(
    name="toykitchen", files={"multiple-choice": "toykitchen_mc.json", "open-end": "toykitchen_qa.json"},
    video_path=lambda root, r: str(root / "toykitchen" / r["task_id"] / f"cam_{r['video_id']}.mp4"),
    extract=extract, label="Toy kitchen", public=False, normalise=normalise,
    description="a dataset registered from outside ego_adr (test)"))
'''

RECORDS = [
    {"clip": "a1", "recipe": "toast", "from_s": 0.5, "to_s": 2.5, "doing": "Put the bread in the toaster",
     "verdict": ["correct"]},
    {"clip": "a1", "recipe": "toast", "from_s": 3.0, "to_s": 5.0, "doing": "Spread butter on the toast",
     "verdict": ["Wrong order"]},
    {"clip": "b2", "recipe": "toast", "from_s": 0.0, "to_s": 3.0, "doing": "Put the bread in the toaster",
     "verdict": ["Omission"]},
]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from ego_adr.video.synth import make_test_video

    base = tmp_path_factory.mktemp("toykitchen")
    (base / "plugin").mkdir()
    (base / "plugin" / "toykitchen_source.py").write_text(PLUGIN)
    data = base / "data"
    data.mkdir()
    (data / "toykitchen_mc.json").write_text(json.dumps(RECORDS))
    qa = [{**r, "qa": [{"question": "Did I make a mistake?", "answer": "No." if r["verdict"] == ["correct"]
                        else "Yes."}]} for r in RECORDS]
    (data / "toykitchen_qa.json").write_text(json.dumps(qa))
    (data / "procedure.json").write_text(json.dumps(
        {"toast": "Put the bread in the toaster. Wait until it pops up. Spread butter on the toast."}))
    for clip in ("a1", "b2"):
        make_test_video(base / "videos" / "toykitchen" / "toast" / f"cam_{clip}.mp4", seconds=6, fps=8)
    env = {**os.environ, "EGO_ADR_PLUGINS": "toykitchen_source",
           "PYTHONPATH": os.pathsep.join([str(base / "plugin"), os.environ.get("PYTHONPATH", "")])}
    return base, data, base / "videos", env


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_registered_source_runs_and_scores_from_the_command_line(toy):
    base, data, videos, env = toy
    out = base / "run"
    cmd = [sys.executable, "-m", "ego_adr.run", "--data-root", str(data), "--video-root", str(videos),
           "--sources", "toykitchen", "--mode", "shallow", "--frames", "4", "--output-dir", str(out), "--quiet"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == len(RECORDS) and {r["source"] for r in rows} == {"toykitchen"}
    assert all(not (r["failure"] or "").startswith("video") for r in rows)  # its own video layout was found
    assert sorted(r["ground_truth"][0] for r in rows) == sorted(r["verdict"][0] for r in RECORDS)
    res = subprocess.run([sys.executable, "-m", "ego_adr.eval", "score", str(out / "predictions.jsonl"),
                          "--out", str(base / "scored")], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    metrics = json.loads((base / "scored" / "metrics.json").read_text())
    assert metrics["per_source"]["toykitchen"]["n"] == len(RECORDS)
    assert metrics["overall"] == json.loads((out / "metrics.json").read_text())["overall"]


@pytest.mark.slow  # starts a process or a server (see tests/README.md)
def test_registered_source_through_the_green_agent(toy):
    base, data, videos, env = toy
    sys.path.insert(0, str(base / "plugin"))
    try:
        import toykitchen_source  # noqa: F401  (registers the source in this process)
    finally:
        sys.path.remove(str(base / "plugin"))
    from ego_adr.agents.green import EvalConfig, evaluate
    from ego_adr.agents.serving import ServerThread, bind_socket, url_of
    from ego_adr.agents.white import WhiteAgent, build_white_app, load_agent_model

    model = load_agent_model("tiny", device="cpu", cache_dir=str(base / "cache"))
    agent = WhiteAgent(model, [videos], mode="shallow", frames=4, cache_dir=base / "cache", max_new_tokens=8)
    sock = bind_socket("127.0.0.1", 0)
    url = url_of(sock, "127.0.0.1")
    server = ServerThread(build_white_app(agent, url), sock).start()
    try:
        cfg = EvalConfig.from_dict({"video_root": str(videos), "json_root": str(data), "datasets": ["toykitchen"],
                                    "task_type": "multiple-choice", "output_dir": str(base / "green"),
                                    "question_wording": "ego_adr"})
        asyncio.run(evaluate(url, cfg))
    finally:
        server.stop()
        agent.close()
    rows = [json.loads(line) for line in (base / "green" / "predictions.jsonl").read_text().splitlines()]
    assert len(rows) == len(RECORDS) and {r["source"] for r in rows} == {"toykitchen"}
    metrics = json.loads((base / "green" / "metrics.json").read_text())
    assert metrics["per_source"]["toykitchen"]["n"] == len(RECORDS)
