"""Every entry point of the registry (``ego_adr.__main__``) against the same bad-input table: an output
folder that is a file or read-only, a read-only cache folder, a bad device, a bad model, a binary and an empty text
file, a busy port. Each must end with exactly one line on stderr that names the bad value, no traceback, and exit 2
(a user mistake, ``ego_adr.errors``) -- and before any model is loaded or any result written.

**Read-only folders when the tests run as root** (CI and this machine do): root ignores permission bits, so a
``chmod 555`` folder is writable for it and would prove nothing. As root the read-only folder is one under
``/sys``: sysfs refuses to create files for every user, root included, which is exactly what a read-only mount
does. As any other user it is a real ``chmod 555`` folder. The CLIs themselves never read permission bits; they
try a probe file (``ego_adr.run.checks.check_writable_dir``), which is why both cases are honest.

The commands are called in this process (their ``main(argv)``, the function ``python -m`` calls): an exception
escaping them is a traceback, so the test fails on one.
"""

from __future__ import annotations

import importlib
import json
import os
import socket
from pathlib import Path

import pytest

from ego_adr.__main__ import ENTRY_POINTS
from ego_adr.folders import OUT_ALIAS, OUT_FLAG

REPO = Path(__file__).resolve().parents[1]
CASES = ("out_is_file", "out_readonly", "out_alias_is_file", "cache_readonly", "bad_device", "bad_model",
         "text_binary", "text_empty", "port_busy")
NEEDS = {"out_is_file": "out", "out_readonly": "out", "out_alias_is_file": "out", "cache_readonly": "cache",
         "bad_device": "device", "bad_model": "model", "text_binary": "text", "text_empty": "text",
         "port_busy": "port"}


def _readonly(tmp: Path) -> Path:
    if os.geteuid() == 0:
        return Path("/sys/ego_adr_readonly_test")  # see the module docstring
    d = tmp / "readonly"
    d.mkdir()
    d.chmod(0o555)
    return d / "sub"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("inputs")
    (base / "clip.mp4").write_bytes(b"\x00not a video\x00" * 64)
    (base / "binary.txt").write_bytes(bytes(range(256)) * 8)
    (base / "empty.txt").write_text("")
    (base / "a_file").write_text("a file where a folder is expected\n")
    (base / "annotations.csv").write_text("source,recording,task,step,start,end,labels,description\n"
                                          "mykitchen,tea_01,make tea,Fill the kettle with water,1.0,4.0,correct,\n")
    rows = [{"sample_id": f"s{i}", "source": "demo", "task_id": "t", "ground_truth": ["correct"],
             "prediction": "correct", "raw": "correct", "failure": None} for i in range(3)]
    (base / "run").mkdir()
    (base / "run" / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ev = base / "eval-random"
    ev.mkdir()
    (ev / "metrics.json").write_text(json.dumps({"monitor": "random", "M1": 0.5}))
    from ego_adr.helpmeout.cli import main as helpmeout

    assert helpmeout(["generate", "--episodes", "6", "--test-size", "2", "--out", str(base / "hmo"), "--quiet"]) == 0
    return {"video": str(base / "clip.mp4"), "root": str(base), "evaldir": str(ev),
            "predictions": str(base / "run" / "predictions.jsonl"), "episodes": str(base / "hmo" / "test.jsonl"),
            "annotations": str(base / "annotations.csv"), "binary": str(base / "binary.txt"), "empty": str(base / "empty.txt"), "file": str(base / "a_file")}


def _argv(ep, case: str, inputs: dict, tmp: Path) -> tuple[list[str], str]:
    """The command line of ``ep`` with the bad input of ``case``, and the text the error line must contain."""
    fill = {**inputs, "out": str(tmp / "out"), "text": ep.defaults.get("text", "{predictions}")}
    fill["text"] = fill["text"].format(**inputs) if "{" in fill["text"] else fill["text"]
    flag = ep.flags.get(NEEDS[case])
    extra: list[str] = []
    expect = ""
    if case in ("out_is_file", "out_readonly", "out_alias_is_file"):
        fill["out"] = str(_readonly(tmp)) if case == "out_readonly" else inputs["file"]
        expect = fill["out"]
    elif case == "cache_readonly":
        ro = str(_readonly(tmp))
        extra, expect = [flag, ro], ro
    elif case == "bad_device":
        extra, expect = [flag, "gpu"], "gpu"
    elif case == "bad_model":
        extra, expect = [flag, "nosuch-model-h18"], "nosuch-model-h18"
    elif case in ("text_binary", "text_empty"):
        fill["text"] = inputs["binary" if case == "text_binary" else "empty"]
        expect = Path(fill["text"]).name
        if not flag.startswith("{") and flag not in ep.argv:
            extra = [flag, fill["text"]]
    argv = [a.format(**fill) if "{" in a else a for a in ep.argv]
    if case == "out_alias_is_file":  # the other spelling of the one output flag reaches the same check
        argv = [OUT_ALIAS if a == OUT_FLAG else a for a in argv]
    if "--" in argv:  # the launcher: its run arguments come after '--'
        argv += extra
    else:
        argv += extra
    return argv, expect


def _call(target: str, argv: list[str]) -> int:
    module, fn = target.split(":")
    try:
        return getattr(importlib.import_module(module), fn)(argv)
    except SystemExit as e:  # argparse: its own exit code
        return e.code if isinstance(e.code, int) else 2


PARAMS = [(ep, case) for ep in ENTRY_POINTS for case in CASES if ep.flags.get(NEEDS[case])
          and not (case == "out_alias_is_file" and not ep.flags["out"].startswith("--"))]


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _cli_modules() -> dict[str, Path]:
    """Every module of the package that runs as ``python -m`` or as a script: each ``__main__.py`` and each file
    with an ``if __name__ == "__main__":`` block. A ``__main__.py`` that only hands over to ``X.main`` stands
    for ``X`` (``ego_adr/run/__main__.py`` is ``ego_adr.run.cli``)."""
    import ast

    out = {}
    for path in sorted((REPO / "ego_adr").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if path.name != "__main__.py" and '__name__ == "__main__"' not in text:
            continue
        module = _module_of(path)
        if path.name == "__main__.py":
            tree = ast.parse(text)
            handed = [n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
                      and n.module.startswith("ego_adr.") and any(a.name == "main" for a in n.names)]
            if handed and not any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
                module = handed[0]
                path = REPO / Path(*module.split(".")).with_suffix(".py")
        out[module] = path
    return out


def _subcommands(path: Path) -> set[str]:
    """The subcommands a CLI module dispatches on: ``add_parser("x")``, a ``COMMANDS = {"x": ...}`` table, or
    ``argv[0] == "x"``."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_parser" and node.args
                and isinstance(node.args[0], ast.Constant)):
            names.add(node.args[0].value)
        elif (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "COMMANDS" for t in node.targets)
              and isinstance(node.value, ast.Dict)):
            names |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
        elif (isinstance(node, ast.Compare) and isinstance(node.left, ast.Subscript)
              and getattr(node.left.value, "id", None) == "argv" and isinstance(node.ops[0], ast.Eq)
              and isinstance(node.comparators[0], ast.Constant)):
            names.add(node.comparators[0].value)
    return names


def test_the_registry_lists_every_command_and_subcommand_of_the_package():
    """Issue 28, item 9: ``python -m ego_adr --help`` is the registry, and it left out eval view/compare/agreement,
    helpmeout validate, data convert, models.planner and the lmms-eval integration. Every ``python -m`` module and
    every subcommand is listed (or in NOT_COMMANDS, with why)."""
    from ego_adr.__main__ import NOT_COMMANDS

    listed = {(ep.target.split(":")[0], ep.name.split(" ", 1)[1] if " " in ep.name else None)
              for ep in ENTRY_POINTS}
    dispatchers = {"ego_adr.agents.__main__": ["ego_adr.agents.launch_cli", "ego_adr.agents.white",
                                               "ego_adr.agents.green"]}  # its three commands are modules
    missing = []
    for module, path in _cli_modules().items():
        if module in NOT_COMMANDS:
            continue
        for target in dispatchers.get(module, [module]):
            subs = _subcommands(path) if target == module else set()
            targets = {t for t, _ in listed if t in (target, f"{target.rsplit('.', 1)[0]}.__main__")}
            if not targets:
                missing.append(target)
            missing += [f"{target} {s}" for s in sorted(subs)
                        if not any((t, s) in listed for t in targets | {target})]
    assert missing == []
    assert {"ego_adr.eval.__main__", "ego_adr.data.__main__", "ego_adr.helpmeout.cli"} <= set(_cli_modules())
    assert len(PARAMS) >= 40  # the table is walked for real, not skipped into nothing


def test_help_prints_every_entry_with_what_it_does(capsys):
    from ego_adr.__main__ import main

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for needle in ("python -m ego_adr.eval view", "python -m ego_adr.eval compare", "python -m ego_adr.eval "
                   "agreement", "python -m ego_adr.helpmeout validate", "python -m ego_adr.data convert",
                   "python -m ego_adr.models.memory_planner", "python -m ego_adr.integrations.lmms_eval"):
        assert needle in out
    import re

    bare = [line for line in out.splitlines()[1:] if not re.match(r"^\s+python -m \S+( [a-z-]+)?\s{2,}\S", line)]
    assert bare == []  # each command with its about line


def test_data_help_shows_the_commands_not_the_internal_layering():
    """Issue 28, item 9: ``python -m ego_adr.data --help`` printed the module's notes on its upward import."""
    import contextlib
    import io

    from ego_adr.data.__main__ import COMMANDS, main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["--help"]) == 0
    text = buf.getvalue()
    assert all(f"  {c} " in text for c in COMMANDS) and "Exit status" in text
    assert "import" not in text and "layer" not in text


@pytest.mark.parametrize(("ep", "case"), PARAMS, ids=[f"{ep.name}-{case}" for ep, case in PARAMS])
def test_bad_input_is_one_line_and_exit_2(ep, case, inputs, tmp_path, capsys):
    argv, expect = _argv(ep, case, inputs, tmp_path)
    held = None
    if case == "port_busy":
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = str(held.getsockname()[1])
        argv = [*argv, "--port", port]
        expect = port
    try:
        code = _call(ep.target, argv)
    finally:
        if held is not None:
            held.close()
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip() and " INFO " not in x]  # the agents' startup log lines
    assert code == 2, f"{ep.name} {argv}: exit {code}\n{err}"
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert expect in lines[0], lines[0]
    assert "unrecognized" not in lines[0] and "ambiguous" not in lines[0]  # the flag was taken, its value refused
    assert not (tmp_path / "out" / "predictions.jsonl").exists()


def test_every_command_names_its_output_folder_out():
    """Issue 38, item 2: one output flag for every command (``--output-dir`` kept as its other spelling, walked by
    the ``out_alias_is_file`` case above)."""
    flags = {ep.name: ep.flags["out"] for ep in ENTRY_POINTS if ep.flags.get("out")}
    assert len(flags) >= 10
    assert {f for f in flags.values() if f.startswith("--")} == {OUT_FLAG}


def test_a_reader_that_stops_early_gets_no_traceback(tmp_path):
    """``python -m ego_adr.helpmeout templates | head -1``: the pipe closes after one line; the command says
    nothing more and exits 0 (it raised BrokenPipeError with a traceback before)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "ego_adr.helpmeout", "templates"], cwd=root,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)
    proc.stdout.read(1)
    proc.stdout.close()  # the reader goes away
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


MODEL_COMMANDS = [ep for ep in ENTRY_POINTS if ep.flags.get("model")]


@pytest.mark.parametrize("ep", MODEL_COMMANDS, ids=[ep.name for ep in MODEL_COMMANDS])
def test_every_command_that_takes_a_model_declares_the_same_model_arguments(ep, capsys, monkeypatch):
    """Issue 37, item 4: ``--model`` was declared ten times with four help texts and ``--backend`` hard-coded in
    several; every command now adds them with ``ego_adr.models.arguments`` (same help, the registry's backends)."""
    from ego_adr.models.backends import names as backend_names
    from ego_adr.models.families import model_help

    monkeypatch.setenv("COLUMNS", "10000")  # argparse wraps help at the terminal's width (hyphenated names too)
    if "--" in ep.argv:  # the launcher: the model arguments are the run's, after '--'
        argv = [*ep.argv[:ep.argv.index("--") + 1], "--help"]
    elif not ep.argv[0].startswith(("-", "{")):  # a subcommand
        argv = [ep.argv[0], "--help"]
    else:
        argv = ["--help"]
    assert _call(ep.target, argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert " ".join(model_help(None).split()) in text  # the shared help, whatever the command's default
    assert "--backend" in text and any(f"{b}:" in text for b in backend_names())
    if ep.flags.get("device"):
        assert "auto, cpu, mps, cuda or cuda:N" in text
