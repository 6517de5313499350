"""``python -m ego_adr``: the registry of command-line entry points -- every ``python -m`` a user runs, with the
flags the shared bad-input table (``tests/test_entry_points.py``) exercises -- printed as a list of commands.

Why a registry: "bad input gives one line and the right exit code" (2 a user mistake, 3 infrastructure, 130
interrupted; :mod:`ego_adr.errors`) is a rule for *every* entry point, and a rule that is tested on a list cannot
silently skip a new command. A new CLI is added here; the test then walks it with the same table (output folder a
file or read-only, cache folder read-only, bad device, bad model, binary and empty text files).

It is also the list a user reads: ``python -m ego_adr --help`` prints every entry with its ``about`` line, and
``tests/test_entry_points.py`` checks that every ``python -m`` module and every subcommand of the package is in it
(or in :data:`NOT_COMMANDS`, with why), so a new command cannot go unlisted. An entry with no ``flags`` is listed
but walks no bad-input case.

Only names are listed (strings; the one import is the shared registry type, :mod:`ego_adr.registry`). It sits at the top of the package, above every layer, because it
names commands of all of them; nothing imports it but the test. ``target`` is ``module:function`` (the
function ``main(argv) -> exit code``), or a bare module for one that runs on import (the lmms-eval task folder).
``argv`` is a minimal valid command line with placeholders the test fills in: ``{text}`` a text input file
(procedure, predictions, experiment, episodes), ``{video}`` a video file, ``{out}`` the output folder, ``{evaldir}``
a HelpMeOut evaluate folder, ``{root}`` a video root. ``flags`` names the flag of each kind of input (``None``: the
command has no such input, e.g. ``check`` writes no folder); a flag spelled ``{out}`` is positional (in ``argv``).
Every command that writes a folder names it ``--out`` (``--output-dir`` is the same flag, issue 38 item 2).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ego_adr.registry import Registry


@dataclass(frozen=True)
class EntryPoint:
    name: str
    target: str  # "module:function", the function main(argv) -> exit code
    argv: tuple[str, ...]
    flags: dict = field(default_factory=dict)  # out, cache, device, model, text -> flag name or None
    defaults: dict = field(default_factory=dict)  # placeholder -> what a valid command puts there
    about: str = ""  # the line `python -m ego_adr --help` prints beside the command


_TEXT = "Boil the water. Pour it into the cup."

ENTRY_POINTS: Registry[EntryPoint] = Registry("command", (
    EntryPoint("run", "ego_adr.run.cli:main", ("--limit", "1", "--out", "{out}"),
               {"out": "--out", "cache": "--cache-dir", "device": "--device", "model": "--model",
                "text": "--config"}),
    EntryPoint("launch_ray", "ego_adr.run.launch_ray:main", ("--local", "--", "--limit", "1", "--out", "{out}"),
               {"out": "--out", "cache": "--cache-dir", "device": "--device", "model": "--model",
                "text": "--config"}),
    EntryPoint("experiments", "ego_adr.run.experiments:main", ("{text}", "--limit", "1", "--out", "{out}"),
               {"out": "--out", "cache": "--cache-dir", "device": "--device", "model": "--model", "text": "{text}"},
               {"text": "configs/experiments/table6.yaml"}),
    EntryPoint("stream", "ego_adr.stream.cli:main", ("--video", "{video}", "--procedure", "{text}", "--out", "{out}"),
               {"out": "--out", "cache": "--cache-dir", "device": "--device", "model": "--model",
                "text": "--procedure"}, {"text": _TEXT}),
    EntryPoint("check", "ego_adr.check.__main__:main", ("--video", "{video}", "--procedure", "{text}"),
               {"out": None, "cache": "--cache-dir", "device": "--device", "model": "--model",
                "text": "--procedure"}, {"text": _TEXT}),
    EntryPoint("helpmeout generate", "ego_adr.helpmeout.cli:main", ("generate", "--episodes", "2", "--out", "{out}"),
               {"out": "--out"}),
    EntryPoint("helpmeout evaluate", "ego_adr.helpmeout.cli:main",
               ("evaluate", "--monitor", "random", "--episodes", "{text}", "--out", "{out}"),
               {"out": "--out", "text": "--episodes"}, {"text": "{episodes}"}),
    EntryPoint("helpmeout summarize", "ego_adr.helpmeout.cli:main", ("summarize", "{evaldir}", "--out", "{out}"),
               {"out": "--out"}),
    EntryPoint("eval score", "ego_adr.eval.__main__:main", ("score", "{text}", "--out", "{out}"),
               {"out": "--out", "text": "{text}"}, {"text": "{predictions}"}),
    EntryPoint("eval merge", "ego_adr.eval.__main__:main", ("merge", "{out}/merged.jsonl", "{text}"),
               {"out": "{out}", "text": "{text}"}, {"text": "{predictions}"}),
    EntryPoint("agents.white", "ego_adr.agents.white:main", ("--model", "tiny", "--video-root", "{root}", "--port", "0"),
               {"cache": "--cache-dir", "device": "--device", "model": "--model", "port": "--port"}),
    EntryPoint("agents launch", "ego_adr.agents.launch_cli:main", ("--limit", "1", "--out", "{out}"),
               {"out": "--out", "cache": None, "device": "--device", "model": "--model"}),
    EntryPoint("agents.green", "ego_adr.agents.green:main", ("--port", "0",), {"port": "--port"}),
    EntryPoint("models.serve", "ego_adr.models.serve:main", ("--model", "tiny", "--port", "0"),
               {"device": "--device", "model": "--model"}),
    EntryPoint("models.tiny", "ego_adr.models.tiny:main", ("{out}",), {"out": "{out}"}),
    EntryPoint("data stats", "ego_adr.data.__main__:main", ("stats", "--data-root", "{root}"), {}),
    EntryPoint("data build", "ego_adr.data.__main__:main",
               ("build", "--annotations", "{text}", "--out", "{out}", "--model", "tiny"),
               {"out": "--out", "cache": "--cache-dir", "device": "--device", "model": "--model",
                "text": "--annotations"}, {"text": "{annotations}"}),
    EntryPoint("monitoring evaluate", "ego_adr.monitoring.cli:main", ("evaluate", "--benchmark", "epic-tent-o",
               "--monitor", "count-based", "--data-root", "{root}", "--out", "{out}"), {"out": "--out", "cache":
               "--cache-dir", "device": "--device", "model": "--model", "text": "--stream"}),
    EntryPoint("benchmark_builder", "ego_adr.benchmark_builder.__main__:main",
               ("--annotations", "{text}", "--out", "{out}", "--model", "tiny"),
               {"out": "--out", "text": "--annotations"}, {"text": "{annotations}"}),
    # listed for `python -m ego_adr --help` and the coverage test; no bad-input case applies (no flags)
    EntryPoint("eval view", "ego_adr.eval.__main__:main", ("view", "{evaldir}", "--out", "{out}/view.html"),
               about="the evidence browser (report.html) of one run folder, or several side by side"),
    EntryPoint("eval compare", "ego_adr.eval.__main__:main", ("compare", "{text}", "{text}"),
               about="paired comparison of two multiple-choice runs (B - A): bootstrap CIs, McNemar's test"),
    EntryPoint("eval agreement", "ego_adr.eval.__main__:main", ("agreement", "{text}"),
               about="inter-rater agreement of a ratings CSV (paper Table 8 layout)"),
    EntryPoint("helpmeout validate", "ego_adr.helpmeout.cli:main", ("validate", "{text}"),
               about="replay every HelpMeOut trajectory; non-zero exit on any invalid one"),
    EntryPoint("helpmeout templates", "ego_adr.helpmeout.cli:main", ("templates",),
               about="list the HelpMeOut task templates (Table 7 layout)"),
    EntryPoint("data convert", "ego_adr.data.__main__:main", ("convert", "--data-root", "{root}", "--out",
                                                               "{out}/input.jsonl"),
               about="the public release's files -> the build input schema"),
    EntryPoint("benchmark_builder review", "ego_adr.benchmark_builder.__main__:main", ("review", "{out}"),
               about="write the review sheet (CSV) and page (HTML) of a built data root (docs/build.md)"),
    EntryPoint("benchmark_builder merge", "ego_adr.benchmark_builder.__main__:main", ("merge", "{out}", "{text}"),
               about="merge the reviewers' sheets into the data root (docs/build.md)"),
    # `monitoring evaluate` walks the bad-input table above; its second subcommand is listed:
    EntryPoint("monitoring download", "ego_adr.monitoring.cli:main", ("download", "--out", "{out}"),
               about="fetch the files the benchmarks read (the step streams') at pinned commits"),
    EntryPoint("monitoring list", "ego_adr.monitoring.cli:main", ("list",),
               about="every online benchmark and its monitors, with what each reads (privileged ones marked)"),
    EntryPoint("models.memory_planner", "ego_adr.models.memory_planner:main", ("--model", "qwen2.5-vl"),
               about="the memory planner: frames x pixels x batch that fit a GPU, per model family"),
    EntryPoint("integrations.lmms_eval", "ego_adr.integrations.lmms_eval.__main__", (),
               about="prints the EgoErrorVQA task folder for `lmms-eval --include_path` (docs/lmms_eval.md); "
                     "`lmms-eval --model ego_adr` runs our pipeline inside lmms-eval"),
), describe=lambda e: e.about or _ABOUT.get(e.name, ""))

#: Modules that run as ``python -m`` / a script but are not user commands, and why (the coverage test reads it).
NOT_COMMANDS = {
    "ego_adr.__main__": "this list",
    "ego_adr.integrations.lmms_eval.tasks.egoerrorvqa.make_yamls": "a developer step that regenerates committed "
    "task files (tests/integrations/test_lmms_eval_tasks.py checks them)",
}

_ABOUT = {  # the commands that walk the bad-input table say what they do here, to keep their entries short
    "run": "one experiment: procedure + clips + a VLM -> predictions, metrics, report (--dry-run: the plan)",
    "launch_ray": "a run cut into chunks over local processes or a Ray cluster",
    "experiments": "a grid of runs from a YAML file (the paper's tables)",
    "stream": "online monitoring of one video against a procedure",
    "check": "a verdict on one clip (or a CSV/JSONL of clips), with the evidence",
    "helpmeout generate": "generate the HelpMeOut episodes (train/val/test)",
    "helpmeout evaluate": "now monitoring evaluate --benchmark helpmeout (still runs, and says so)",
    "helpmeout summarize": "the HelpMeOut paper tables from evaluate folders",
    "eval score": "score a predictions file (the public evaluator's rule) -> metrics.json, report.md",
    "eval merge": "merge shard predictions files into one",
    "agents.white": "the Ego-ADR white agent over A2A (1.0 and 0.3 on one port)",
    "agents launch": "a white and a green agent on loopback, evaluating the demo",
    "agents.green": "the EgoErrorVQA green agent over A2A",
    "models.serve": "any of our models behind an OpenAI-compatible /v1/chat/completions",
    "models.tiny": "build a tiny random model folder (offline)",
    "data stats": "Table 2 of the paper for any data root",
    "data build": "a benchmark from error-annotated recordings (docs/build.md)",
    "benchmark_builder": "the same as data build, from its own layer",
    "monitoring evaluate": "every online benchmark (HelpMeOut, the Ego-ADR video stream, the step streams): "
                           "monitors streamed and scored (docs/monitoring.md)",
}


def _command(e: EntryPoint) -> str:
    if " " in e.name:  # a subcommand: "helpmeout generate" is python -m ego_adr.helpmeout generate
        package, sub = e.name.split(" ", 1)
        return f"python -m ego_adr.{package} {sub}"
    return "python -m " + e.target.split(":")[0].removesuffix(".__main__").removesuffix(".cli")


def main(argv: list[str] | None = None) -> int:
    rows = [(_command(e), ENTRY_POINTS.help_of(e)) for e in ENTRY_POINTS]
    width = max(len(c) for c, _ in rows)
    print("ego_adr commands (each takes --help; exit 0 done, 2 a mistake, 3 infrastructure, 130 interrupted):")
    for command, about in rows:
        print(f"  {command:<{width}}  {about}".rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
