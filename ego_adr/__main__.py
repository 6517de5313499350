"""``python -m ego_adr``: the registry of command-line entry points -- every ``python -m`` a user runs, with the
flags the shared bad-input table (``tests/test_entry_points.py``) exercises -- printed as a list of commands.

Why a registry: "bad input gives one line and the right exit code" (2 a user mistake, 3 infrastructure, 130
interrupted; :mod:`ego_adr.errors`) is a rule for *every* entry point, and a rule that is tested on a list cannot
silently skip a new command. A new CLI is added here; the test then walks it with the same table (output folder a
file or read-only, cache folder read-only, bad device, bad model, binary and empty text files).

Only names are listed (strings, no imports). It sits at the top of the package, above every layer, because it
names commands of all of them; nothing imports it but the test. ``argv`` is a minimal valid command line with placeholders the test fills in: ``{text}`` a text input file
(procedure, predictions, experiment, episodes), ``{video}`` a video file, ``{out}`` the output folder, ``{evaldir}``
a HelpMeOut evaluate folder, ``{root}`` a video root. ``flags`` names the flag of each kind of input (``None``: the
command has no such input, e.g. ``check`` writes no folder); a flag spelled ``{out}`` is positional (in ``argv``).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class EntryPoint:
    name: str
    target: str  # "module:function", the function main(argv) -> exit code
    argv: tuple[str, ...]
    flags: dict = field(default_factory=dict)  # out, cache, device, model, text -> flag name or None
    defaults: dict = field(default_factory=dict)  # placeholder -> what a valid command puts there


_TEXT = "Boil the water. Pour it into the cup."

ENTRY_POINTS: tuple[EntryPoint, ...] = (
    EntryPoint("run", "ego_adr.run.cli:main", ("--limit", "1", "--output-dir", "{out}"),
               {"out": "--output-dir", "cache": "--cache-dir", "device": "--device", "model": "--model",
                "text": "--config"}),
    EntryPoint("launch_ray", "ego_adr.run.launch_ray:main", ("--local", "--", "--limit", "1", "--output-dir", "{out}"),
               {"out": "--output-dir", "cache": "--cache-dir", "device": "--device", "model": "--model",
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
    EntryPoint("agents launch", "ego_adr.agents.launch_cli:main", ("--limit", "1", "--output-dir", "{out}"),
               {"out": "--output-dir", "model": "--model"}),
    EntryPoint("agents.green", "ego_adr.agents.green:main", ("--port", "0",), {"port": "--port"}),
    EntryPoint("models.serve", "ego_adr.models.serve:main", ("--model", "tiny", "--port", "0"),
               {"device": "--device", "model": "--model"}),
    EntryPoint("models.tiny", "ego_adr.models.tiny:main", ("{out}",), {"out": "{out}"}),
    EntryPoint("data stats", "ego_adr.data.__main__:main", ("stats", "--data-root", "{root}"), {}),
    EntryPoint("data build", "ego_adr.data.__main__:main",
               ("build", "--annotations", "{text}", "--out", "{out}", "--model", "tiny"),
               {"out": "--out", "cache": "--cache-dir", "device": "--device", "model": "--model",
                "text": "--annotations"}, {"text": "{annotations}"}),
    EntryPoint("monitoring evaluate", "ego_adr.monitoring.__main__:main", ("evaluate", "--benchmark", "epic-tent-o",
               "--monitor", "count-based", "--data-root", "{root}", "--out", "{out}"), {"out": "--out", "cache":
               "--cache-dir", "device": "--device", "model": "--model", "text": "--stream"}),
    EntryPoint("build", "ego_adr.build.__main__:main",
               ("--annotations", "{text}", "--out", "{out}", "--model", "tiny"),
               {"out": "--out", "text": "--annotations"}, {"text": "{annotations}"}),
)


def _command(e: EntryPoint) -> str:
    if " " in e.name:  # a subcommand: "helpmeout generate" is python -m ego_adr.helpmeout generate
        package, sub = e.name.split(" ", 1)
        return f"python -m ego_adr.{package} {sub}"
    return "python -m " + e.target.split(":")[0].removesuffix(".__main__").removesuffix(".cli")


def main() -> int:
    print("ego_adr commands (each takes --help):")
    for e in ENTRY_POINTS:
        print(f"  {_command(e)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
