"""PREGO's anticipation monitor: the prompt it builds (training sequences as examples, the prefix and nothing
after it), how a reply is read, an outage never becoming a verdict (exit 3, nothing written, the rerun resumes
from the stage cache), and an offline run with the tiny model."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from ego_adr.models.base import Capabilities, Generation
from ego_adr.monitoring.steps.data import Recording, Stream
from ego_adr.monitoring.steps.monitors.prego import Prego, parse_symbol, task_of
from ego_adr.monitoring.steps.types import TrainingSet

A08 = "nusar-2021_action_both_9044-a08_9044_user_id_2021-02-05_154403"
B06 = "nusar-2021_action_both_9012-b06a_9012_user_id_2021-02-01_162904"


class NextStepModelDouble:
    """A model double: answers each prompt with ``answer(prefix)`` (the prefix parsed from the prompt's last
    ``Input Sequence``), records every prompt, and fails as told (``fail_after`` calls, retryable or not)."""

    model_id = fingerprint = "next-step-double"
    capabilities = Capabilities(video=False, text_only=True)

    def __init__(self, answer=lambda prefix: f" {prefix[-1] + 1}\n---", fail_after=None, retryable=True):
        self.answer, self.fail_after, self.retryable = answer, fail_after, retryable
        self.prompts: list[str] = []

    def generate(self, requests):
        out = []
        for r in requests:
            text = r.messages[0].content[0]
            if self.fail_after is not None and len(self.prompts) >= self.fail_after:
                out.append(Generation(None, "connection refused" if self.retryable else "bad request: too long",
                                      kind="infrastructure" if self.retryable else None))
                continue
            self.prompts.append(text)
            line = re.findall(r"Input Sequence:\n (.*)\nNext Symbol:\n$", text)[-1]
            out.append(Generation(self.answer([int(x) for x in line.split(", ")])))
        return out


def test_a_reply_is_read_as_prego_reads_it():
    assert parse_symbol(" 37\n---\nSequence type:") == 37
    assert parse_symbol("The next symbol is 12.") == 12
    assert parse_symbol("_5_") == 5
    assert parse_symbol("37, 74") is None and parse_symbol("") is None and parse_symbol(None) is None
    assert task_of(A08) == "a08" and task_of("annotations_4") is None


def _train() -> TrainingSet:
    return TrainingSet("assembly101-o", ((1, 2, 3), (1, 3, 2), (5, 6)), {i: f"s{i}" for i in range(1, 9)},
                       (A08.replace("9044", "9011"), A08.replace("9044", "9012"), B06))


def test_the_prompt_holds_the_same_toys_training_sequences_and_only_the_prefix():
    from ego_adr.monitoring.steps.harness import feed

    model = NextStepModelDouble()
    mon = Prego(model=model)
    mon.fit(_train())
    stream = Stream("assembly101-o", "toy", "-", "-", (Recording(A08, (1, 2, 4, 7)),
                                                       Recording("nusar-2021_action_both_9000-z99_x", (5, 8))))
    rows = feed(mon, _train(), stream)
    first = model.prompts[0]
    assert first.startswith("Sequence type: a08\nInput Sequence:\n -1, 1, 2\nNext Symbol:\n 3\n---\n"
                            "Sequence type: a08\nInput Sequence:\n -1, 1, 3\nNext Symbol:\n 2\n---\n")
    assert "6" not in first.split("---")[2]  # the other toy's sequence (5, 6) is not an example for a08
    for t, prompt in enumerate(model.prompts[:4]):  # the recording (1, 2, 4, 7): never a later step
        assert prompt.endswith("Sequence type: a08\nInput Sequence:\n " + ", ".join(map(str, [-1, 1, 2, 4][:t + 1]))
                               + "\nNext Symbol:\n")
    # a toy training lacks: every training sequence is an example, no Sequence type line
    assert model.prompts[4].startswith("Input Sequence:\n -1, 1, 2\nNext Symbol:\n 3\n---\n")
    assert "Input Sequence:\n -1, 5\nNext Symbol:\n 6\n---\n" in model.prompts[4]
    # the double anticipates previous + 1: 1 after -1? no (0); 2 after 1 yes; 4 after 2 no; 7 after 4 no
    assert [r["flagged"] for r in rows[:4]] == [True, False, True, True]
    assert rows[1]["evidence"]["anticipated"] == [2] and rows[1]["evidence"]["replies"] == [" 2\n---"]
    assert mon.files["prompts.json"]["examples"]["a08"].count("Input Sequence") == 2


def test_a_failed_call_for_its_input_is_recorded_and_the_run_goes_on():
    from ego_adr.monitoring.steps.harness import feed

    mon = Prego(model=NextStepModelDouble(fail_after=1, retryable=False))
    mon.fit(_train())
    rows = feed(mon, _train(), Stream("assembly101-o", "toy", "-", "-", (Recording(A08, (1, 2, 3)),)))
    assert [r["flagged"] for r in rows] == [True, True, True]
    assert "failed" in rows[1]["evidence"] and mon.stats()["failed"] == 2


def _mini_root(online_root, tmp_path, videos=2):
    root = tmp_path / "root"
    src = online_root / "dtgl" / "epic-tent"
    dst = root / "dtgl" / "epic-tent"
    dst.mkdir(parents=True)
    shutil.copy(src / "train.json", dst / "train.json")
    test = json.loads((src / "test.json").read_text())
    test["annotations"] = dict(list(test["annotations"].items())[:videos])
    (dst / "test.json").write_text(json.dumps(test))
    return root


def test_an_outage_is_exit_3_nothing_written_and_the_rerun_resumes_from_the_cache(online_root, cli, tmp_path,
                                                                                  monkeypatch):
    from ego_adr.models.cache import CachedModel, StageCache
    from ego_adr.monitoring.steps import evaluate

    root, out, cache = _mini_root(online_root, tmp_path), tmp_path / "out", tmp_path / "cache.sqlite"
    broken = NextStepModelDouble(fail_after=5)
    monkeypatch.setattr(evaluate, "_model", lambda a: CachedModel(broken, StageCache(cache), "double"))
    argv = ("evaluate", "--benchmark", "epic-tent-o", "--monitor", "prego", "--model", "tiny", "--data-root", root,
            "--out", out, "--quiet")
    code, _, err = cli(*argv)
    assert code == 3 and len(err.strip().splitlines()) == 1 and "rerun the same command" in err, err
    assert not (out / "steps.jsonl").exists() and not (out / "metrics.json").exists()
    healthy = NextStepModelDouble()
    monkeypatch.setattr(evaluate, "_model", lambda a: CachedModel(healthy, StageCache(cache), "double"))
    code, _, err = cli(*argv)
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["stats"]["cache_hits"] >= 5 and len(healthy.prompts) == m["stats"]["model_calls"]
    assert m["stats"]["calls"] == m["steps"] and m["deviations"]


def test_prego_runs_offline_with_the_tiny_model(online_root, cli, tmp_path):
    root, out = _mini_root(online_root, tmp_path), tmp_path / "out"
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "prego", "--model", "tiny",
                       "--data-root", root, "--out", out, "--cache-dir", tmp_path / "cache", "--quiet")
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    assert m["stats"]["calls"] == m["steps"] == 19 and m["stats"]["failed"] == 0
    rows = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert all(len(r["evidence"]["replies"]) == 1 for r in rows)
    prompts = json.loads((out / "prompts.json").read_text())
    assert prompts["examples"]["all"].count("Input Sequence") == 13
    assert (tmp_path / "cache" / "stage_cache.sqlite").is_file()
    assert "prego" in (out / "report.md").read_text() and "deviation" in (out / "report.md").read_text()


@pytest.mark.parametrize("flag", ["--model", "--device"])
def test_model_flags_are_checked_before_anything_is_read(online_root, cli, tmp_path, flag):
    value = "nosuch-model-x" if flag == "--model" else "gpu0"
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "prego", flag, value, "--data-root",
                       tmp_path, "--out", tmp_path / "out")
    assert code == 2 and value in err and not (tmp_path / "out").exists()
