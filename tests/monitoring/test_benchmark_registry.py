"""The online benchmarks' registry and their one command (issue 43): every room's benchmarks are found without the
layer naming a room, ``list`` prints each with what its monitors read, a benchmark's own flags belong to it, and
a user mistake is one line (exit 2) before anything is read or written."""

import pytest

from ego_adr.monitoring.benchmarks import BENCHMARKS, ROLES
from ego_adr.monitoring.cli import main

ALL = ("helpmeout", "egoadr-stream", "assembly101-o", "epic-tent-o", "assembly101-complete", "epic-tent-complete")


def test_every_room_declares_its_benchmarks_and_each_is_complete():
    assert set(ALL) <= set(BENCHMARKS.names())
    for spec in BENCHMARKS:
        reg = spec.monitor_registry()
        assert reg.names() and all(s.role in ROLES for s in spec.splits)
        assert spec.roles()["score"], spec.name  # every benchmark says what its numbers are scored on
        driver = spec.make_driver()
        assert driver.registry is reg and driver.spec is spec


def test_list_prints_every_benchmark_and_marks_what_reads_more(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for name in ALL:
        assert f"\n{name}: " in f"\n{out}"
    helpmeout = next(b for b in out.split("\n\n") if b.startswith("helpmeout: "))  # rooms are listed by name
    for spec in BENCHMARKS.get("helpmeout").monitor_registry():  # HelpMeOut's privileged references are starred
        line = next(x for x in helpmeout.splitlines() if x[4:].startswith(spec.name + " "))
        assert line.startswith("   *") == spec.name.endswith(("-privileged", "-knowledge")), line


@pytest.mark.parametrize("argv,needle", [
    (["evaluate", "--benchmark", "nope", "--monitor", "x", "--out", "{out}"], "epic-tent-complete"),
    (["evaluate", "--benchmark", "helpmeout", "--monitor", "nope", "--episodes", "{out}/e.jsonl", "--out", "{out}"],
     "unknown monitor 'nope' for helpmeout"),
    (["evaluate", "--benchmark", "egoadr-stream", "--monitor", "random", "--episodes", "x", "--out", "{out}"],
     "unrecognized arguments: --episodes"),
    (["evaluate", "--benchmark", "egoadr-stream", "--monitor", "random", "--monitor-option", "k=v",
      "--out", "{out}"], "monitor random does not take option 'k'"),
    (["evaluate", "--benchmark", "helpmeout", "--monitor", "llm", "--episodes", "{out}/e.jsonl", "--out",
      "{out}"], "needs --model"),
])
def test_a_mistake_is_one_line_and_nothing_is_written(argv, needle, tmp_path, capsys):
    out = tmp_path / "out"
    try:
        rc = main([a.replace("{out}", str(out)) for a in argv])
    except SystemExit as e:  # argparse's own refusals (an unknown flag) exit from the parser, one line too
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err
    assert not out.exists() or not any(out.iterdir())


def test_a_benchmarks_help_lists_its_monitors_and_its_own_flags(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--benchmark", "assembly101-o", "--help"])
    text = capsys.readouterr().out
    assert "--stream" in text and "--episodes" not in text
    for spec in BENCHMARKS.get("assembly101-o").monitor_registry():
        assert any(line.strip().startswith(spec.name + " ") for line in text.splitlines()), spec.name


def test_the_benchmark_flag_and_an_unknown_benchmark_name_every_benchmark(tmp_path, capsys):
    """Issue 46 item 4: ``--benchmark``'s help and the refusal of an unknown name list every registered benchmark
    (the cut and complete step streams, HelpMeOut, the video stream), from the registry."""
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    flag = capsys.readouterr().out.split("--benchmark B")[2].split("--monitor M")[0]
    assert main(["evaluate", "--benchmark", "assembly101", "--monitor", "all", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    for name in BENCHMARKS.names():
        assert name in "".join(flag.split()) and name in err, name
