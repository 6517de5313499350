"""``python -m ego_adr.monitoring``: every online benchmark through one command.

  evaluate --benchmark B --monitor M|a,b|all [--monitor-option K=V] ... --out OUT   one monitor (or several) on B
  list                                                                               benchmarks and their monitors
  download --out DIR                                                                 the files the benchmarks read

``evaluate --benchmark B --help`` lists B's monitors, their options and B's own flags. The benchmarks come from the
registry of :mod:`ego_adr.monitoring.benchmarks` (each room declares its own; this command names none), and every
one runs on the harness of :mod:`ego_adr.monitoring.harness`. See docs/monitoring.md.
"""

from __future__ import annotations

import argparse
import sys

from ego_adr.errors import OneLineParser, run_cli
from ego_adr.folders import add_out_argument
from ego_adr.monitoring.benchmarks import BENCHMARKS, listing


def _options_help(registry) -> str:
    lines = []
    for name in registry.names():
        for o in registry.options(name).values():
            values = "|".join(map(str, o.choices)) if o.choices else o.parse.__name__
            lines.append(f"  {name}: {o.name}={values} (default {o.default}) {o.help}")
    return "\n".join(lines) or "  none"


def _evaluate_parser(sub, benchmark: str | None):
    from ego_adr.monitoring.settings import add_common_arguments

    if benchmark is None:
        text = ("Stream monitors over an online benchmark and score them. Benchmarks (`evaluate --benchmark B "
                "--help` shows B's monitors and flags):\n" + BENCHMARKS.table())
        e = sub.add_parser("evaluate", help="stream monitors over a benchmark and score them", description=text,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        add_common_arguments(e, "a monitor of the benchmark, several (a,b), or all")
        return e, None
    spec = BENCHMARKS.get(benchmark)
    bench = spec.make_driver()
    reg = bench.registry
    text = (f"{spec.name}: {spec.description} ({spec.page})\n\nmonitors:\n{reg.help()}\n\nmonitor options "
            f"(--monitor-option KEY=VALUE):\n{_options_help(reg)}")
    e = sub.add_parser("evaluate", help="stream monitors over a benchmark and score them", description=text,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(e, "a monitor listed above, several (a,b), or all")
    bench.add_arguments(e)
    return e, bench


def build_parser(benchmark: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``benchmark``, its ``evaluate`` takes that benchmark's own flags too."""
    p = OneLineParser(prog="python -m ego_adr.monitoring", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    _evaluate_parser(sub, benchmark)
    sub.add_parser("list", help="every benchmark and its monitors, with what each reads (privileged ones marked)")
    d = sub.add_parser("download", help="fetch the files the benchmarks read, from their public repositories at "
                       "pinned commits")
    add_out_argument(d, "folder to lay the files out in (what --data-root then reads)", required=True)
    d.add_argument("--base-url", default=None, help="raw-file server (default https://raw.githubusercontent.com; "
                   "files are fetched as BASE/<owner>/<repo>/<commit>/<path>)")
    d.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    d.add_argument("--quiet", action="store_true")
    return p


def _benchmark_named(argv: list[str]) -> str | None:
    """The ``--benchmark`` of an ``evaluate`` command line (the parser's flags depend on it), else None."""
    if not argv or argv[0] != "evaluate":
        return None
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--benchmark")
    return pre.parse_known_args(argv[1:])[0].benchmark


def _download(a) -> int:
    from ego_adr.monitoring.benchmarks import downloads

    for fetch in downloads():
        rc = fetch(a.out, a.base_url, a.timeout, a.quiet)
        if rc:
            return rc
    return 0


def alias(old: str, argv: list[str]) -> int:
    """An older command that is now ``monitoring evaluate``: say the new command line once, then run it."""
    import shlex

    print(f"note: `{old}` is now `python -m ego_adr.monitoring {shlex.join(argv)}`", flush=True)
    return main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)

    def go() -> int:
        benchmark = _benchmark_named(argv)
        a = build_parser(benchmark).parse_args(argv)
        if a.cmd == "list":
            print(listing())
            return 0
        if a.cmd == "download":
            return _download(a)
        from ego_adr.monitoring.harness import evaluate
        from ego_adr.monitoring.settings import from_namespace

        spec = BENCHMARKS.get(a.benchmark)
        return evaluate(spec, from_namespace(a, spec.make_driver().Settings))

    return run_cli(go, interrupted="interrupted; nothing partial is kept as a result (rerun the command)")
