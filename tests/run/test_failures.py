"""Issue 11, failures know their kind: an outage is retryable, never cached (stage cache or probe verdict), rerun by
--retry-failed, and a run of mostly outages says so. ``OutageModelDouble`` stands in for a model behind a server
that goes away: the code under test is the cache, probe, runner and CLI around it."""

import errno
import json

import pytest

from ego_adr.models.base import INFRASTRUCTURE, SAMPLE, Generation
from ego_adr.models.cache import CachedModel, StageCache
from ego_adr.models.doubles import ScriptedModelDouble
from ego_adr.reasoning.probe import ProbeUnreachable, cached_probe
from ego_adr.run.config import RunConfig
from ego_adr.run.failures import EXIT_INFRASTRUCTURE, decode_error_text, failure_kind, mark, summarise
from ego_adr.run.runner import execute


class OutageModelDouble(ScriptedModelDouble):
    """Answers like :class:`ScriptedModelDouble` while ``up``; while down every request fails the way the OpenAI
    backend reports a refused connection."""

    def __init__(self, up: bool = False, down_after: int | None = None, **kw):
        super().__init__(**kw)
        self.up = up
        self.down_after = down_after  # goes down after answering this many requests (an outage mid-run)

    def generate(self, requests):
        if self.down_after is not None and len(self.asked) >= self.down_after:
            self.up, self.down_after = False, None
        if self.up:
            return super().generate(requests)
        return [Generation(None, "ConnectError: [Errno 111] Connection refused", kind=INFRASTRUCTURE)
                for _ in requests]


def _rows(out):
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]


def test_kinds_of_errors():
    g = Generation(None, "ConnectError: refused", kind=INFRASTRUCTURE)
    assert g.retryable and g.error.startswith("[infrastructure]")
    assert Generation(None, "CUDA out of memory. Tried to allocate 2 GiB").retryable  # untagged backend (HF)
    assert Generation(None, "HTTP 400: image too large").kind == SAMPLE
    assert "[infrastructure]" not in decode_error_text(FileNotFoundError("x.mp4: file not found"))
    assert "[infrastructure]" in decode_error_text(MemoryError("decoder"))
    assert "[infrastructure]" in decode_error_text(OSError(errno.EIO, "Input/output error"))
    assert failure_kind({"failure": "video: ValueError: moov atom not found"}) == SAMPLE
    assert failure_kind({"failure": "unparseable"}) == SAMPLE and failure_kind({"failure": None}) is None


def test_a_stage_fallback_hiding_an_outage_is_an_infrastructure_failure():
    row = mark({"prediction": "No Error", "failure": None,
                "stages": {"match_error": "[infrastructure] ConnectError: refused"}})
    assert row["failure_kind"] == INFRASTRUCTURE and row["prediction"] is None
    assert row["stages"]["fallback_prediction"] == "No Error"


def test_retryable_failures_are_never_stored_in_the_stage_cache(tmp_path):
    from ego_adr.models.base import Message, Request

    model = OutageModelDouble()
    cached = CachedModel(model, StageCache(tmp_path / "c.sqlite"), "hf")
    req = Request([Message.user("hello")], meta={"stage": "narrate"})
    assert not cached.generate([req])[0].ok and len(cached.cache) == 0
    assert cached.stats()["retryable_failures"] == 1
    model.up = True
    assert cached.generate([req])[0].ok and len(cached.cache) == 1


def test_a_probe_that_cannot_reach_its_model_is_an_error_and_caches_nothing(tmp_path):
    model = OutageModelDouble()
    with pytest.raises(ProbeUnreachable, match="Connection refused"):
        cached_probe(model, tmp_path)
    assert not list(tmp_path.rglob("*.json"))
    model.up = True
    verdict = cached_probe(model, tmp_path)
    assert not verdict.reason.startswith("stage 1: exception") and list(tmp_path.rglob("*.json"))


def test_outage_run_is_retryable_and_retry_failed_ends_as_an_uninterrupted_run(tmp_path, demo_root):
    cfg = dict(mode="shallow", limit=6, cache_dir=str(tmp_path / "cache"))
    model = OutageModelDouble()
    out = tmp_path / "interrupted"
    execute(RunConfig(output_dir=str(out), **cfg), progress=False, model=model)
    rows = _rows(out)
    assert len(rows) == 6 and all(r["failure_kind"] == INFRASTRUCTURE for r in rows)
    summary = summarise(rows)
    assert summary["exit_code"] == EXIT_INFRASTRUCTURE and summary["n_infrastructure"] == 6
    # a plain resume does not pretend: the failures stay; --retry-failed reruns exactly those
    model.up = True
    execute(RunConfig(output_dir=str(out), **cfg), progress=False, model=model)
    assert len(model.asked) == 0
    execute(RunConfig(output_dir=str(out), **cfg), progress=False, model=model, retry_failed=True)
    assert len(model.asked) == 6
    whole = tmp_path / "whole"
    execute(RunConfig(output_dir=str(whole), mode="shallow", limit=6, cache_dir=str(tmp_path / "cache2")),
            progress=False, model=ScriptedModelDouble())
    key = lambda r: (r["prediction"], r["failure"], r["raw"], r["stages"])  # noqa: E731
    assert {r["sample_id"]: key(r) for r in _rows(out)} == {r["sample_id"]: key(r) for r in _rows(whole)}
    assert len((out / "predictions.retried.jsonl").read_text().splitlines()) == 6
    run = json.loads((out / "run.json").read_text())
    assert run["totals"]["retried"] == 6 and run["failures"]["n_failed"] == 0 and len(run["invocations"]) == 3


def test_openai_backend_reports_an_outage_as_retryable_and_stops_retrying_once_it_knows(tmp_path):
    """A dead port: the first request runs its retry sequence, later ones try once each while the endpoint is
    known down; once the server is up again the next request gets through normally."""
    import socket

    from ego_adr.models.base import Message, Request
    from ego_adr.models.openai_api import OpenAIChatModel
    from ego_adr.models.serve import BackgroundServer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OpenAIChatModel("double", base_url=f"http://127.0.0.1:{port}/v1", max_retries=2,
                             retry_base_seconds=0.01, use_openai_sdk=False)
    req = Request([Message.user("hello")], meta={"stage": "narrate"})
    first, second = client.generate([req])[0], client.generate([req])[0]
    assert first.retryable and "after 3 attempts" in first.error
    assert second.retryable and "attempts" not in second.error  # one attempt: the outage is already known
    with BackgroundServer(ScriptedModelDouble(), port=port, model_name="double"):
        assert client.generate([req])[0].ok


def test_outage_in_the_middle_of_a_run_then_retry_failed(tmp_path, demo_root):
    cfg = dict(mode="shallow", limit=6, batch_size=2, cache_dir=str(tmp_path / "cache"))
    model = OutageModelDouble(up=True, down_after=2)  # the first batch of two is answered, then the server dies
    out = tmp_path / "interrupted"
    execute(RunConfig(output_dir=str(out), **cfg), progress=False, model=model)
    kinds = [r["failure_kind"] for r in _rows(out)]
    assert kinds.count(None) == 2 and kinds.count(INFRASTRUCTURE) == 4
    model.up = True
    execute(RunConfig(output_dir=str(out), **cfg), progress=False, model=model, retry_failed=True)
    assert len(model.asked) == 6  # exactly the four failed samples were asked again
    whole = tmp_path / "whole"
    execute(RunConfig(output_dir=str(whole), mode="shallow", limit=6, batch_size=2,
                      cache_dir=str(tmp_path / "cache2")), progress=False, model=ScriptedModelDouble())
    key = lambda r: (r["prediction"], r["failure"], r["raw"], r["stages"])  # noqa: E731
    assert {r["sample_id"]: key(r) for r in _rows(out)} == {r["sample_id"]: key(r) for r in _rows(whole)}


def test_a_run_whose_videos_are_all_missing_is_not_a_result(tmp_path):
    """Issue 18, item 2: one input reason for most rows -> exit 2 with that reason; unparsed replies never count."""
    from ego_adr.run.failures import EXIT_USER, dominant_line, summarise

    def row(i, **kw):
        return {"sample_id": f"s{i}", "prediction": None, "raw": None, "failure_kind": "sample", **kw}

    missing = [row(i, failure=f"video: VideoError: /data/v{i}.mp4: file not found") for i in range(4)]
    s = summarise(missing)
    assert s["exit_code"] == EXIT_USER and s["dominant_sample_failure"] == {
        "reason": "video: VideoError: <path>: file not found", "n": 4,
        "example": "video: VideoError: /data/v0.mp4: file not found"}
    assert dominant_line(s, tmp_path).startswith("4 of 4 samples failed for one reason (video: VideoError")
    answered = [{"sample_id": f"a{i}", "prediction": "correct", "raw": "correct"} for i in range(5)]
    assert summarise(missing + answered)["exit_code"] == 0  # 4 of 9: most rows have an answer
    unparsed = [row(i, failure="unparseable", raw="I think so") for i in range(6)]
    assert summarise(unparsed)["exit_code"] == 0 and summarise(unparsed)["dominant_sample_failure"] is None


def test_not_a_result_counts_failures_by_kind_not_by_text(tmp_path, shared_data):
    """Issue 28, item 5: with every video missing, the real annotations' long Assembly101 paths were cut into
    another reason string ("6 of 8 samples failed for one reason"). Every row is one reason: 8 of 8. The model
    is a double: the code under test is the runner's failure summary around it."""
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.run.failures import dominant_line, reason_class, summarise

    empty = tmp_path / "no-videos"
    empty.mkdir()
    out = tmp_path / "run"
    execute(RunConfig(data_root=str(shared_data), video_root=str(empty), limit=8, output_dir=str(out),
                      cache_dir=str(tmp_path / "cache")), progress=False, model=ScriptedModelDouble())
    rows = _rows(out)
    texts = [r["failure"] for r in rows]
    assert len(rows) == 8 and max(map(len, texts)) > 120  # the long paths are there
    s = summarise(rows)
    assert s["dominant_sample_failure"]["n"] == 8 and s["exit_code"] == 2
    assert s["dominant_sample_failure"]["reason"] == "video: VideoError: <path>: file not found"
    assert dominant_line(s, out).startswith("8 of 8 samples failed for one reason (video: VideoError: <path>: file "
                                            f"not found, e.g. video: VideoError: {empty}/")
    assert "**NOT A RESULT: 8 of 8 samples failed" in (out / "report.md").read_text()
    # what varies from sample to sample is not the kind: windows, quoted values, URLs
    assert reason_class("window 12.5-15.0 s after the end (10.0 s)") == reason_class("window 3-4 s after the end (2 s)")
    assert reason_class("no step 'Boil water'") == reason_class('no step "Cut the bread into two halves"')
    assert reason_class("HTTP 503 from http://h:8000/v1/x") == reason_class("HTTP 502 from https://api.example/v1")
