"""Issue 19, item 5: a failed judge call is never a result. Under the default protocol a judge outage leaves
retryable rows (no one-judge mean, exit 3, the report leads with it), and ``--retry-failed`` asks again; the
result then equals an uninterrupted run's. The answers come from the real tiny model; the judges are doubles that
score by the answer's length (the tiny random judges never write a parseable score, so equal runs would compare
nothing but Nones), and the outage is the same double failing every call -- the test is about the run code
around the judges. No stage cache, so the outage is really asked (a cached reply would hide it)."""

from __future__ import annotations

import json

import pytest

from ego_adr.models.base import Generation
from ego_adr.run.config import RunConfig


class LengthJudgeDouble:
    """A judge double: the score is the answer's length mod 6, in the rubric's JSON; ``down`` fails every call as
    an unreachable server does."""

    def __init__(self, name: str, down: bool = False) -> None:
        from ego_adr.models.base import Capabilities

        self.model_id, self.fingerprint, self.down = name, f"{name}@test", down
        self.capabilities = Capabilities(video=False, max_batch_size=4)

    def generate(self, requests):
        if self.down:
            return [Generation(None, error="[infrastructure] connection refused (judge server down)")
                    for _ in requests]
        out = []
        for r in requests:
            answer = r.messages[-1].content[0].split("Model answer: ")[1]
            out.append(Generation(json.dumps({"score": len(answer) % 6, "reason": "length"})))
        return out


def _judges(down: bool):
    def loaders(cfg):
        return ({"judge-a": lambda: LengthJudgeDouble("judge-a"),
                 "judge-b": lambda: LengthJudgeDouble("judge-b", down=down)}, "two length doubles", "test")

    return loaders


def _cfg(out, **kw) -> RunConfig:
    return RunConfig(task="open-end", model="tiny", limit=2, max_new_tokens=4, batch_size=2, output_dir=str(out),
                     use_cache=False, **kw)


def _scores(out) -> dict:
    rows = [json.loads(x) for x in (out / "judgements.jsonl").read_text().splitlines()]
    return {(r["sample_id"], r["qa_index"]): (r["score"], r["judge_scores"], r.get("failure")) for r in rows}


@pytest.mark.slow
def test_a_judge_outage_then_retry_failed_equals_an_uninterrupted_run(tmp_path, monkeypatch, tiny_model_dir,
                                                                      demo_root):
    from ego_adr.run import open_end
    from ego_adr.run.cli import _infrastructure_exit
    from ego_adr.run.runner import execute

    monkeypatch.setattr(open_end, "judge_loaders", _judges(down=False))
    _, whole = execute(_cfg(tmp_path / "whole"), progress=False)
    assert whole["n_scored"] == whole["n_rows"] > 0  # the doubles score every answer

    monkeypatch.setattr(open_end, "judge_loaders", _judges(down=True))
    out = tmp_path / "outage"
    _, hit = execute(_cfg(out), progress=False)
    rows = _scores(out)
    assert rows and all(score is None and failure.startswith("judge call failed") for score, _, failure in rows.values())
    assert hit["n_scored"] == 0 and hit["failures"] == {"judge_call_failed": len(rows)}  # no one-judge means
    assert (out / "report.md").read_text().split("\n\n")[1].startswith(f"**{len(rows)} answer(s) have no judgement")
    assert _infrastructure_exit(out) == 3

    monkeypatch.setattr(open_end, "judge_loaders", _judges(down=False))  # the server is back
    _, again = execute(_cfg(out), progress=False, retry_failed=True)
    assert _scores(out) == _scores(tmp_path / "whole")
    for k in ("avg_sim", "per_source", "per_judge", "n_scored", "failures"):
        assert again[k] == whole[k], k
    assert _infrastructure_exit(out) == 0
    assert len((out / "judgements.retried.jsonl").read_text().splitlines()) == len(rows)
