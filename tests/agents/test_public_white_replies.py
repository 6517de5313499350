"""Reply for reply with the public white agent: ``python -m ego_adr.run --protocol public --mode direct`` and the
public EgoErrorVQA white agent's own code (``../shared/public-evaluator``, imported unmodified in a subprocess)
give byte-identical processor inputs and replies on the same clips with the same tiny Qwen2.5-VL weights.

Both sides run in the public runtime (transformers 4.57.3 and qwen-vl-utils 0.0.14 from its ``uv.lock``,
installed by ``.ci/run`` into ``.ci/public-runtime``; the system torch), bf16 on the CPU as the white agent loads
its model, one intra-op thread each (see ``public_white_runner.py``). The tiny model is built under that runtime
(a 5.x folder does not load in 4.57). The clips are stand-in videos at the public layout for real annotations
(developer split): 1280x720 and 1920x1080 frames make qwen-vl-utils' second, torchvision pass resize, and the
tiny processor's 112x112 cap makes the processor resize again, where float and uint8 frames differ.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
PUBLIC = Path(os.environ.get("EGO_ADR_PUBLIC_EVALUATOR") or SHARED / "public-evaluator")
DATA = Path(os.environ.get("EGO_ADR_SHARED_DATA") or SHARED / "egoerrorvqa")
RUNTIME = Path(os.environ.get("EGO_ADR_PUBLIC_RUNTIME") or REPO / ".ci" / "public-runtime")
A2A03 = Path(os.environ.get("EGO_ADR_A2A03") or REPO / ".ci" / "a2a03")
RUNNER = Path(__file__).with_name("public_white_runner.py")
FILES = {"captaincook4d": "captaincook4d_answer.json", "epic_tent": "epic_tent_answer_sec.json",
         "assembly101": "assembly101_answers.json", "egooops": "egooops_answer.json"}
SIZES = {"captaincook4d": (1280, 720), "epic_tent": (1920, 1080), "assembly101": (640, 360),
         "egooops": (1280, 720)}
PER_SOURCE = 2

pytestmark = pytest.mark.slow


def _short(records: list, n: int) -> list:
    """The first ``n`` records with a window under 30 s (short stand-in videos) and a prompt of their own."""
    out, seen = [], set()
    for r in records:
        s, e = r.get("start_time"), r.get("end_time")
        if not (isinstance(s, (int, float)) and isinstance(e, (int, float)) and 0 <= s < e <= 30):
            continue
        key = (r.get("task_id"), str(r.get("action_annotation")))
        if key not in seen:
            seen.add(key)
            out.append(r)
        if len(out) == n:
            break
    return out


def _env(*paths) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(str(p) for p in paths), OMP_NUM_THREADS="1",
                HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")


def _run(cmd: list, env: dict, timeout: int = 600) -> None:
    r = subprocess.run([sys.executable, "-W", "ignore", *map(str, cmd)], env=env, capture_output=True, text=True,
                       timeout=timeout)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])


@pytest.fixture(scope="module")
def both_sides(tmp_path_factory, missing_environment):
    if not (RUNTIME / "transformers").is_dir() or not (RUNTIME / "qwen_vl_utils").is_dir():
        missing_environment(f"the public runtime in {RUNTIME} (pip install --no-deps --target .ci/public-runtime "
                            "transformers==4.57.3 tokenizers==0.22.1 huggingface-hub==0.36.0 qwen-vl-utils==0.0.14)")
    if not (PUBLIC / "src" / "white_agent" / "agent.py").is_file() or not DATA.is_dir() or not A2A03.is_dir():
        pytest.skip("needs ../shared/public-evaluator, ../shared/egoerrorvqa and a2a-sdk 0.3.21 in .ci/a2a03")
    from ego_adr.data.egoerrorvqa import load_samples
    from ego_adr.video.synth import make_public_layout_videos

    base = tmp_path_factory.mktemp("public-white")
    json_root, videos = base / "json", base / "videos"
    json_root.mkdir()
    (json_root / "procedure.json").write_text((DATA / "procedure.json").read_text())
    for f in FILES.values():
        (json_root / f).write_text(json.dumps(_short(json.loads((DATA / f).read_text()), PER_SOURCE)))
    samples = load_samples(json_root, video_root=videos)
    for source, size in SIZES.items():
        make_public_layout_videos([s for s in samples if s.source == source], videos, fps=2.0, size=size)

    model = base / "tiny-4.57"
    out = base / "ours"  # ours first: its process builds the tiny model before the run (one torch start less)
    _run([RUNNER, "ours", base / "ours.json", model, "--", "--protocol", "public", "--mode", "direct", "--model",
          model, "--data-root", json_root, "--video-root", videos, "--device", "cpu", "--dtype", "bf16",
          "--batch-size", "1", "--protocol-option", f"public_source={PUBLIC}", "--cache-dir", base / "cache",
          "--output-dir", out], _env(RUNTIME, REPO))
    job = base / "job.json"
    job.write_text(json.dumps({"model": str(model), "config": {
        "video_root": str(videos), "json_root": str(json_root), "procedure_json_path": str(json_root / "procedure.json"),
        "datasets": list(FILES), "task_type": "multiple-choice"}}))
    _run([RUNNER, "public", PUBLIC, job, base / "public.json", base / "scratch"], _env(RUNTIME, A2A03))
    rows = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    return (json.loads((base / "public.json").read_text()), json.loads((base / "ours.json").read_text()), rows,
            json.loads((out / "run.json").read_text()), (out / "report.md").read_text(), len(samples))


def test_every_processor_input_and_reply_is_byte_identical(both_sides):
    public, ours, rows, _, _, n = both_sides
    assert ours["exit"] == 0 and len(public["calls"]) == len(ours["calls"]) == n >= 6
    theirs = {c["text"]: c for c in public["calls"]}
    assert len(theirs) == n  # one prompt per sample, so calls pair up by prompt
    for mine in ours["calls"]:
        other = theirs[mine["text"]]  # our prompt is the public agent's, character for character
        assert mine["videos"] == other["videos"]  # float32 (T, C, H, W) frames, same bytes
        assert mine["videos"][0]["dtype"] == "torch.float32"
        assert mine["input_ids"] == other["input_ids"]
        assert mine["outputs"] == other["outputs"]  # pixel_values_videos, video_grid_thw, second_per_grid_ts, ...
        assert mine["reply"] == other["reply"]
    assert sorted(r["answer"] for r in rows) == sorted(c["reply"] for c in public["calls"])
    assert {c["videos"][0]["shape"][2] for c in ours["calls"]} != {360}  # the second resize pass did act


def test_the_run_names_the_public_runtime_and_claims_identity_only_there(both_sides):
    _, _, _, run, report, _ = both_sides
    assert run["versions"]["transformers"] == "4.57.3" and run["versions"]["qwen-vl-utils"] == "0.0.14"
    assert run["protocol"]["public_agent"]["reply_identity"] is True
    assert "Every input equals the public white agent's" in report
    assert "transformers 4.57.3" in report
