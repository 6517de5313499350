"""One ``steps.jsonl`` schema for the three online benchmarks (issue 34 item 9): HelpMeOut's rows
(``helpmeout/evaluation/scoring.py``), the video stream's (``stream/metrics.py``) and the step streams'
(``online_mistakes/fitting.py``) all pass the layer's check (:func:`ego_adr.monitoring.per_step.schema_errors`),
and the check refuses rows that are not the layer's."""

from __future__ import annotations

from ego_adr.monitoring.per_step import group_episodes, schema_errors, step_row


def _valid(rows: list[dict]) -> None:
    assert rows
    bad = [(i, schema_errors(r)) for i, r in enumerate(rows) if schema_errors(r)]
    assert not bad, bad[:3]
    group_episodes(rows)  # and the layer's metrics can read them


def test_helpmeout_rows_are_the_layer_s():
    from ego_adr.helpmeout.evaluation.scoring import step_rows
    from ego_adr.helpmeout.generator.episodes import generate
    from ego_adr.helpmeout.monitors import build_monitor, run_monitor

    eps = generate(12, 5, progress=False)
    _valid(step_rows(eps, run_monitor(build_monitor("random", seed=0), eps, progress=False), 0.5))


def test_video_stream_rows_are_the_layer_s():
    from ego_adr.stream.metrics import step_rows

    # two annotated recordings as stream/episodes.py builds them (what step_rows reads of them)
    eps = [{"id": "r1", "correct": False, "categories": ["Wrong action"], "end_labels": [],
            "segments": [{"start": 0.0, "end": 4.0, "error": False}, {"start": 4.0, "end": 9.0, "error": True}]},
           {"id": "r2", "correct": True, "categories": [], "end_labels": [],
            "segments": [{"start": 0.0, "end": 5.0, "error": False}]}]
    outs = [{"id": e["id"], "ticks": [{"t": 4.0, "window": [0.0, 4.0], "prob": 0.3, "error_type": "Wrong action"},
                                      {"t": 8.0, "window": [4.0, 8.0], "prob": 0.7, "error_type": None}],
             "alerts": [], "end": {"prob": 0.1}} for e in eps]
    rows = step_rows(list(zip(eps, outs)))
    _valid(rows)
    assert [(r["episode"], r["label"]) for r in rows] == [("r1", 0), ("r1", 1), ("r1", 0), ("r2", 0), ("r2", 0)]


def test_step_stream_rows_are_the_layer_s():
    from ego_adr.online_mistakes.data.cut import Recording, Stream
    from ego_adr.online_mistakes.fitting import run_monitor
    from ego_adr.online_mistakes.types import TrainingSet

    train = TrainingSet("toy", ((1, 2, 3), (1, 3, 2)), {i: f"s{i}" for i in range(1, 5)}, ("v0", "v1"))
    stream = Stream("toy", "s", "-", "-", (Recording("t1", (1, 2, 4)), Recording("t2", (3,))))
    for name in ("count-based", "one-step-memory", "egoadr-graph"):
        rows, _ = run_monitor(name, train, stream)
        _valid(rows)
        assert [r["step_id"] for r in rows] == [1, 2, 4, 3]  # the benchmark's own field beside the layer's
        assert {r["error_onset"] for r in rows if r["episode"] == "t1"} == {2}


def test_the_check_names_what_is_wrong():
    ok = step_row("e", 0, 1, 0.5, {"errorful": True})
    assert schema_errors(ok) == []
    assert schema_errors({k: v for k, v in ok.items() if k != "episode"}) == ["no episode"]
    assert schema_errors(ok | {"flagged": "yes"}) == ["flagged is str, not bool or NoneType"]
    assert schema_errors(ok | {"index": True}) == ["index is bool, not int"]
    assert schema_errors(ok | {"p_error": 1.5}) == ["p_error 1.5 is not a probability"]
    assert schema_errors(ok | {"video": "e"}) == []  # a benchmark's own field is allowed
