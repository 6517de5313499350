"""``python -m ego_adr.data``: what is in a data root, and building one.

Subcommands
  stats --data-root DIR [--json] [--sources S,..] [--paper]   Table 2 of the paper for any data root
  convert --data-root DIR --out FILE.jsonl                    the public release's files -> the build input schema
  build --annotations FILE --out DIR [--model qwen2.5-7b|tiny] a benchmark from error-annotated recordings
  build review DIR / build merge DIR SHEET.csv ...             the people-in-the-loop steps (docs/build.md)

This module is an entry point, like ``python -m ego_adr.run``: the ``build`` subcommands call an LLM, so they live
in :mod:`ego_adr.benchmark_builder` (above ``models/``), which offers them here in its ``data_commands.py`` (found on
disk by :func:`ego_adr.registry.discover`: ``data/`` names no package above it, issue 43); the command name users
are given stays, and ``python -m ego_adr.benchmark_builder`` runs the same commands from their own layer.

Exit status 2 for a wrong flag or unusable input (one line), 3 when a model or the machine failed.
"""

from __future__ import annotations

import json
import sys

from ego_adr.errors import OneLineParser, UserError, run_cli


def _stats(argv: list[str]) -> int:
    from ego_adr.data.egoerrorvqa import DataError
    from ego_adr.data.stats import compare_shares, compare_with_paper, format_table2, table2

    p = OneLineParser(
        prog="python -m ego_adr.data stats",
        description="Table 2 (clips, correct / error samples, QA pairs, question and answer lengths "
        "in words) per source and task, for any data root.",
    )
    p.add_argument("--data-root", required=True, help="a folder with procedure.json and the sources' files")
    p.add_argument(
        "--sources", help="comma-separated (default: the root's declared sources, else the public four)"
    )
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument(
        "--paper",
        action="store_true",
        help="also list every cell that differs from the paper's Table 2, and each source's shares beside it",
    )
    a = p.parse_args(argv)
    sources = [s for s in (a.sources or "").split(",") if s.strip()] or None
    try:
        res = table2(a.data_root, sources)
    except (DataError, KeyError, ValueError) as e:
        raise UserError(str(e.args[0]) if isinstance(e, KeyError) else str(e)) from None
    if a.paper:
        res["differs_from_paper"] = compare_with_paper(res)
        res["shares_beside_paper"] = compare_shares(res)
    if a.json:
        print(json.dumps(res, indent=1))
        return 0
    print(format_table2(res))
    if a.paper:
        diffs = res["differs_from_paper"]
        print("\nagainst the paper's Table 2: " + ("every number equal" if not diffs else "; ".join(diffs)))
        print("\nshares (Section 3.1 keeps them when it subsamples):")
        print("".join(f"  {line}\n" for line in res["shares_beside_paper"]), end="")
    return 0


def _convert(argv: list[str]) -> int:
    from ego_adr.data.build_convert import main as convert_main

    return convert_main(argv)


#: The subcommands a room above offers here (``data_commands.py``, found by :func:`ego_adr.registry.discover`):
#: ``build`` is :mod:`ego_adr.benchmark_builder`'s, which calls a model and so sits above ``models/``.
OFFERED = "data_commands"


COMMANDS = {"stats": _stats, "convert": _convert}  # this package's own; build comes from _commands()


def _commands() -> dict:
    from ego_adr.registry import discover

    return {**COMMANDS, **{name: fn for mod in discover(OFFERED) for name, fn in mod.COMMANDS.items()}}
#: What ``--help`` prints: the commands, not the notes on this module's place in the layers (issue 28, item 9).
HELP = __doc__.split("\n\nThis module is an entry point")[0].replace(
    "Subcommands", "usage: python -m ego_adr.data COMMAND [ARGS]   (each COMMAND takes --help)\n\nSubcommands", 1) + (
    "\n\nExit status 0 done, 2 a wrong flag or unusable input (one line), 3 when a model or the machine failed.")


def main(argv: list[str] | None = None) -> int:
    """Every subcommand through the one CLI wrapper: one line and exit 2 / 3 / 130 (ego_adr.errors)."""
    return run_cli(lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(HELP)
        return 0 if argv else 2
    commands = _commands()
    cmd = commands.get(argv[0])
    if cmd is None:
        raise UserError(f"unknown subcommand {argv[0]!r}; expected one of {', '.join(commands)}")
    return cmd(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
