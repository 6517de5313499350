"""PREGO's anticipation monitor: the prompt it builds (training sequences as examples, the prefix and nothing
after it), how a reply is read, the anticipated set of several sampled replies (PREGO's named decodings, each
sample its own cached call), an outage never becoming a verdict (exit 3, nothing written, the rerun resumes
from the stage cache), and offline runs with the tiny model."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from ego_adr.models.base import Capabilities, Generation
from ego_adr.online_mistakes.data.cut import Recording, Stream
from ego_adr.online_mistakes.monitors.prego import Prego, parse_symbol, task_of
from ego_adr.online_mistakes.types import TrainingSet

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
    # digits int() cannot read name no step (PREGO keeps the string); what int() reads, PREGO reads too
    assert parse_symbol("1²3") is None and parse_symbol("next: 1_2") == 12
    assert task_of(A08) == "a08" and task_of("annotations_4") is None


def _train() -> TrainingSet:
    return TrainingSet("assembly101-o", ((1, 2, 3), (1, 3, 2), (5, 6)), {i: f"s{i}" for i in range(1, 9)},
                       (A08.replace("9044", "9011"), A08.replace("9044", "9012"), B06))


Z99 = "nusar-2021_action_both_9000-z99_x"


def test_the_prompt_is_prego_s_same_toy_examples_and_only_the_prefix():
    from ego_adr.online_mistakes.fitting import feed

    model = NextStepModelDouble()
    mon = Prego(model=model, example_order="training")
    mon.fit(_train())
    stream = Stream("assembly101-o", "toy", "-", "-", (Recording(A08, (1, 2, 4, 7)), Recording(Z99, (5, 8))))
    rows = feed(mon, _train(), stream)
    first = model.prompts[0]
    # PREGO's default example file labels its examples Context: / Input: / Output:, its query does not
    assert first.startswith("Context: a08\nInput:\n -1, 1, 2\nOutput:\n 3\n---\n"
                            "Context: a08\nInput:\n -1, 1, 3\nOutput:\n 2\n---\nSequence type: a08\n")
    assert "6" not in first.split("---")[2]  # the other toy's sequence (5, 6) is not an example for a08
    for t, prompt in enumerate(model.prompts[:4]):  # the recording (1, 2, 4, 7): never a later step
        assert prompt.endswith("Sequence type: a08\nInput Sequence:\n " + ", ".join(map(str, [-1, 1, 2, 4][:t + 1]))
                               + "\nNext Symbol:\n")
    # a toy training lacks: PREGO's code prompts with an empty context (and still names the toy)
    assert model.prompts[4] == "Sequence type: z99\nInput Sequence:\n -1\nNext Symbol:\n"
    assert rows[4]["evidence"]["examples"] == "empty"
    # the double anticipates previous + 1: 1 after -1? no (0); 2 after 1 yes; 4 after 2 no; 7 after 4 no
    assert [r["flagged"] for r in rows[:4]] == [True, False, True, True]
    assert rows[1]["evidence"]["anticipated"] == [2] and rows[1]["evidence"]["replies"] == [" 2\n---"]
    assert mon.files["prompts.json"]["examples"]["a08"].count("Input:") == 2
    assert not [d for d in mon.deviations if "Context" in d or "empty" in d]  # PREGO's prompt: nothing to record


def test_our_earlier_prompt_is_three_named_deviations():
    model = NextStepModelDouble()
    mon = Prego(model=model, example_order="training", unseen_task="all", example_labels="query")
    mon.fit(_train())
    from ego_adr.online_mistakes.fitting import feed

    feed(mon, _train(), Stream("assembly101-o", "toy", "-", "-", (Recording(A08, (1,)), Recording(Z99, (5,)))))
    assert model.prompts[0].startswith("Sequence type: a08\nInput Sequence:\n -1, 1, 2\nNext Symbol:\n 3\n---\n")
    assert model.prompts[1].startswith("Sequence type: a08\nInput Sequence:\n -1, 1, 2\nNext Symbol:\n 3\n---\n")
    assert "Sequence type: b06a\nInput Sequence:\n -1, 5\nNext Symbol:\n 6\n---\n" in model.prompts[1]
    assert model.prompts[1].endswith("Sequence type: z99\nInput Sequence:\n -1\nNext Symbol:\n")
    named = " | ".join(mon.deviations)
    assert "empty context" in named and "Context: / Input: / Output:" in named and "train.json" in named
    with pytest.raises(ValueError, match="unseen_task"):
        Prego(model=model, unseen_task="some")


def test_prego_s_examples_come_in_prego_s_order_from_its_file(online_root):
    """PREGO's default example file (its supplementary ``assembly_context_prompt_train_onlyToy.json``) holds, for
    toy b06b, DTGL's three b06b training sequences in another order than train.json; a21's are copied here from
    it."""
    from ego_adr.online_mistakes.data.cut import load_training, read_test

    train = load_training(online_root, "assembly101-o")
    mon = Prego(model=NextStepModelDouble(), data_root=online_root)
    mon.fit(train)
    assert mon.examples["a21"] == ("Context: a21\nInput:\n -1, 39, 74, 58, 13\nOutput:\n 37\n---\n"
                                   "Context: a21\nInput:\n -1, 32, 58, 74, 58, 37\nOutput:\n 39\n---\n"
                                   "Context: a21\nInput:\n -1, 74, 58, 13\nOutput:\n 37\n---\n")
    assert mon.examples["b06b"].startswith("Context: b06b\nInput:\n -1, 15, 42, 74, 42, 32\nOutput:\n 37\n---\n")
    assert len(mon.examples) == 73 and sum(e.count("Context:") for e in mon.examples.values()) == 135
    anns, _, _ = read_test(online_root, "assembly101-o")
    assert sum(task_of(v) not in mon.examples for v in anns) == 66  # prompted with an empty context
    other = Prego(model=NextStepModelDouble(), data_root=online_root, example_order="training")
    other.fit(train)
    assert other.examples["b06b"].startswith("Context: b06b\nInput:\n -1, 40, 37, 9, 15, 42\n")  # train.json's


def test_on_epic_tent_prego_writes_sequence_type_none(online_root):
    from ego_adr.online_mistakes.data.cut import load_training
    from ego_adr.online_mistakes.fitting import feed

    train = load_training(online_root, "epic-tent-o")
    for option, line in (("prego", "Sequence type: None\n"), ("omit", "")):
        model = NextStepModelDouble(answer=lambda prefix: "1²3")  # digits int() cannot read: no step, counted
        mon = Prego(model=model, task_line=option)
        mon.fit(train)
        rows = feed(mon, train, Stream("epic-tent-o", "toy", "-", "-", (Recording("annotations_1", (4, 7)),)))
        assert model.prompts[0].endswith("---\n" + line + "Input Sequence:\n -1\nNext Symbol:\n")
        assert model.prompts[0].startswith("Input Sequence:\n -1, ")  # DTGL's training sequences, no type line
        assert all(r["flagged"] for r in rows)
        assert mon.stats()["unparseable"] == mon.stats()["unreadable_digits"] == 2
        assert ("Sequence type: None" in " ".join(mon.deviations)) == (option == "omit")


def test_a_failed_call_for_its_input_is_recorded_and_the_run_goes_on():
    from ego_adr.online_mistakes.fitting import feed

    mon = Prego(model=NextStepModelDouble(fail_after=1, retryable=False), example_order="training")
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
    from ego_adr.online_mistakes import driver

    root, out, cache = _mini_root(online_root, tmp_path), tmp_path / "out", tmp_path / "cache.sqlite"
    broken = NextStepModelDouble(fail_after=5)
    monkeypatch.setattr(driver, "_model", lambda a: CachedModel(broken, StageCache(cache), "double"))
    argv = ("evaluate", "--benchmark", "epic-tent-o", "--monitor", "prego", "--model", "tiny", "--data-root", root,
            "--out", out, "--quiet")
    code, _, err = cli(*argv)
    assert code == 3 and len(err.strip().splitlines()) == 1 and "rerun the same command" in err, err
    assert not (out / "steps.jsonl").exists() and not (out / "metrics.json").exists()
    healthy = NextStepModelDouble()
    monkeypatch.setattr(driver, "_model", lambda a: CachedModel(healthy, StageCache(cache), "double"))
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
    assert all(len(r["evidence"]["replies"]) == 1 and "seeds" not in r["evidence"] for r in rows)
    # the default is PREGO's numeric-symbol run: one greedy reply of at most 4 tokens, recorded as such
    hp = m["selection"]["hyper_parameters"]
    assert {k: hp[k] for k in ("decoding", "samples", "temperature", "top_p", "max_new_tokens")} == {
        "decoding": "numeric", "samples": 1, "temperature": 0.0, "top_p": None, "max_new_tokens": 4}
    ident = json.loads((out / "identity.json").read_text())
    assert (ident["option.decoding"], ident["option.samples"], ident["option.task_line"]) == ("numeric", None,
                                                                                               "prego")
    assert m["options"]["decoding"] == "numeric" and m["options"]["unseen_task"] == "empty"
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


# ---- sampled decoding: PREGO's set of several replies ----------------------------------------------------------
class SeededReplyModelDouble:
    """A model double for the set logic: the reply to a request is ``replies[seed]`` (greedy: seed 0); it records
    every request's decoding and fails, as told, the samples whose seeds are in ``fail`` (retryable or not)."""

    model_id = fingerprint = "seeded-reply-double"
    capabilities = Capabilities(video=False, text_only=True)

    def __init__(self, replies, fail=(), retryable=False):
        self.replies, self.fail, self.retryable = replies, set(fail), retryable
        self.configs: list = []

    def generate(self, requests):
        out = []
        for r in requests:
            self.configs.append(r.config)
            seed = r.config.seed
            if seed in self.fail:
                out.append(Generation(None, "timed out" if self.retryable else "bad request: refused",
                                      kind="infrastructure" if self.retryable else None))
            else:
                out.append(Generation(self.replies[seed]))
        return out


def _one_recording(steps=(3, 4, 5)):
    return Stream("assembly101-o", "toy", "-", "-", (Recording(A08, steps),))


def test_the_anticipated_set_is_the_union_of_the_parsed_sampled_replies():
    from ego_adr.online_mistakes.fitting import feed

    double = SeededReplyModelDouble([" 3\n---", "5", "no idea", "3.", "the next is 4"])
    mon = Prego(model=double, decoding="sampled", samples=5, example_order="training")
    mon.fit(_train())
    rows = feed(mon, _train(), _one_recording())
    ev = rows[0]["evidence"]
    assert ev["seeds"] == [0, 1, 2, 3, 4] and ev["replies"] == double.replies
    assert ev["anticipated"] == [3, 4, 5]  # "no idea" adds nothing; the repeated 3 counts once
    assert [r["flagged"] for r in rows] == [False, False, False]
    assert mon.stats()["unparseable"] == 3 and mon.stats()["calls"] == 15
    cfgs = double.configs
    assert {(c.do_sample, c.temperature, c.top_p, c.max_new_tokens) for c in cfgs} == {(True, 0.6, 0.9, 8)}
    assert [c.seed for c in cfgs] == [0, 1, 2, 3, 4] * 3  # seed = sample index, at every step
    # a step outside the set is a mistake
    rows = feed(mon, _train(), _one_recording((3, 7)))
    assert [r["flagged"] for r in rows] == [False, True]


def test_a_failed_sample_is_recorded_and_the_other_samples_still_make_the_set():
    from ego_adr.errors import InfrastructureError
    from ego_adr.online_mistakes.fitting import feed

    mon = Prego(model=SeededReplyModelDouble(["3", "5", "4"], fail={1}), decoding="sampled", samples=3,
                example_order="training")
    mon.fit(_train())
    rows = feed(mon, _train(), _one_recording((5, 4)))
    assert rows[0]["evidence"]["replies"] == ["3", None, "4"] and rows[0]["evidence"]["anticipated"] == [3, 4]
    assert rows[0]["evidence"]["failed"] == ["bad request: refused"] and mon.stats()["failed"] == 2
    assert [r["flagged"] for r in rows] == [True, False]  # 5 only came from the failed sample
    mon = Prego(model=SeededReplyModelDouble(["3", "5", "4"], fail={2}, retryable=True), decoding="sampled",
                samples=3, example_order="training")
    mon.fit(_train())
    with pytest.raises(InfrastructureError, match="rerun the same command"):  # one outage: no verdict at all
        feed(mon, _train(), _one_recording())


def test_each_sample_is_its_own_cached_call(tmp_path):
    from ego_adr.models.cache import CachedModel, StageCache
    from ego_adr.online_mistakes.fitting import feed

    def run():
        double = SeededReplyModelDouble(["3", "5", "4", "9"])
        cached = CachedModel(double, StageCache(tmp_path), "double")
        mon = Prego(model=cached, decoding="sampled", samples=4, example_order="training")
        mon.fit(_train())
        return feed(mon, _train(), _one_recording()), cached, double

    first, cached, double = run()
    assert (cached.model_calls, cached.cache_hits, len(double.configs), len(cached.cache)) == (12, 0, 12, 12)
    again, cached, double = run()
    assert (cached.model_calls, cached.cache_hits, len(double.configs)) == (0, 12, 0) and again == first


def test_the_named_decodings_are_prego_s_and_a_change_is_named():
    from ego_adr.online_mistakes.monitors.prego import DECODINGS, resolve_decoding

    assert resolve_decoding() == ("numeric", DECODINGS["numeric"])
    n, s = DECODINGS["numeric"], DECODINGS["sampled"]
    assert (n.samples, n.temperature, n.top_p, n.max_new_tokens) == (1, 0.0, None, 4)
    assert (s.samples, s.temperature, s.top_p, s.max_new_tokens) == (25, 0.6, 0.9, 8)
    label, dec = resolve_decoding("numeric", samples=5, temperature=0.8)
    assert label == "numeric (samples 5, temperature 0.8)" and (dec.top_p, dec.max_new_tokens) == (0.9, 4)
    label, dec = resolve_decoding("sampled", samples=1, temperature=0)  # greedy: no top-p to speak of
    assert label == "sampled (samples 1, temperature 0)" and dec.top_p is None
    for bad in ({"samples": 5}, {"samples": 0}, {"temperature": -1.0}, {"max_new_tokens": 0},
                {"name": "sampled", "temperature": 0}):  # 25 samples at temperature 0: one reply 25 times
        with pytest.raises(ValueError):
            resolve_decoding(**bad)
    # the sampled decoding's departures from PREGO are recorded; the numeric one has none about decoding
    greedy, sampled = Prego(model=NextStepModelDouble()), Prego(model=NextStepModelDouble(), decoding="sampled")
    assert len(greedy.deviations) == 1 and not any("seed" in d or "emoji" in d for d in greedy.deviations)
    assert sampled.deviations[:1] == greedy.deviations and len(sampled.deviations) == 3


@pytest.mark.parametrize("flags", [("--samples", "5"), ("--temperature", "-1"), ("--decoding", "emoji")])
def test_a_decoding_that_cannot_be_used_is_one_line_before_anything_is_read(online_root, cli, tmp_path, flags):
    code, _, err = cli("evaluate", "--benchmark", "epic-tent-o", "--monitor", "prego", "--model", "tiny", *flags,
                       "--data-root", tmp_path, "--out", tmp_path / "out")
    assert code == 2 and len(err.strip().splitlines()) == 1 and flags[0] in err, err
    assert not (tmp_path / "out").exists()


def test_prego_sampled_runs_offline_with_the_tiny_model_and_resumes_from_the_cache(online_root, cli, tmp_path):
    root, out = _mini_root(online_root, tmp_path, videos=1), tmp_path / "out"
    argv = ("evaluate", "--benchmark", "epic-tent-o", "--monitor", "prego", "--model", "tiny", "--decoding",
            "sampled", "--samples", "3", "--data-root", root, "--out", out, "--cache-dir", tmp_path / "cache",
            "--quiet")
    code, _, err = cli(*argv)
    assert code == 0, err
    m = json.loads((out / "metrics.json").read_text())
    hp = m["selection"]["hyper_parameters"]
    assert {k: hp[k] for k in ("decoding", "samples", "temperature", "top_p", "max_new_tokens")} == {
        "decoding": "sampled (samples 3)", "samples": 3, "temperature": 0.6, "top_p": 0.9, "max_new_tokens": 8}
    assert m["stats"]["calls"] == 3 * m["steps"] == m["stats"]["model_calls"] and m["stats"]["failed"] == 0
    rows = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert all(r["evidence"]["seeds"] == [0, 1, 2] and len(r["evidence"]["replies"]) == 3 for r in rows)
    assert any(len(set(r["evidence"]["replies"])) > 1 for r in rows)  # the seeds drew different replies
    ident = json.loads((out / "identity.json").read_text())
    assert (ident["option.decoding"], ident["option.samples"], ident["option.temperature"]) == ("sampled", 3, None)
    report = (out / "report.md").read_text()
    assert "temperature=0.6" in report and "samples=3" in report and "emoji" in report
    assert "decoding=sampled" in report  # the options, as given
    before = (out / "steps.jsonl").read_text()
    finished = (out / "metrics.json").read_text()
    code, _, err = cli(*argv)  # the same command again: the finished folder is read back, not redone
    assert code == 0 and (out / "metrics.json").read_text() == finished
    (out / "metrics.json").unlink()  # an unfinished folder: redone, every reply from the cache
    code, _, err = cli(*argv)
    m2 = json.loads((out / "metrics.json").read_text())
    assert code == 0 and m2["stats"]["model_calls"] == 0 and m2["stats"]["cache_hits"] == m["stats"]["calls"]
    assert (out / "steps.jsonl").read_text() == before
    code, _, err = cli(*argv[:9], "--samples", "2", *argv[11:])  # other settings: refused in one line
    assert code == 2 and "samples 3 -> 2" in err.strip().splitlines()[-1]  # (above it: the weights' progress bar)


def test_without_prego_s_example_file_assembly101_is_one_line_before_anything_is_written(online_root, cli, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(online_root / "dtgl" / "assembly101", root / "dtgl" / "assembly101")
    out = tmp_path / "out"
    code, _, err = cli("evaluate", "--benchmark", "assembly101-o", "--monitor", "prego", "--model", "tiny",
                       "--data-root", root, "--out", out)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "example_order=training" in err, err
    assert not out.exists() or not any(out.iterdir())
