"""The paper's ablations from one YAML each: ``python -m ego_adr.run.experiments configs/experiments/table6.yaml``.

An experiment file has ``name``, ``table`` (``table3`` = open-ended frame sweep in Table 3's layout,
``table4`` = multiple-choice frame sweep in Table 4's layout, ``table5`` = deep /
shallow / CoT per model, ``table6`` = match x narration), ``base`` (run settings shared by every cell, any
:class:`~ego_adr.run.config.RunConfig` field) and ``cells`` (each a ``label`` plus the settings it changes). Every
cell is an ordinary run in ``OUT/<label>/`` -- resumable, with its own predictions, metrics and report -- and all
cells share the stage cache, so a call that two cells need (the same narration of the same clip, the same
procedure bank) is made once, and re-running the grid costs no model call at all. The table is rendered from
the cells' predictions files, never from numbers kept on the side.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ego_adr.reasoning.protocol import PROTOCOLS
from ego_adr.run.config import ConfigError, RunConfig

TABLES = ("table3", "table4", "table5", "table6")


def load_experiment(path: str | Path) -> dict:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"experiment file {path} not found (see configs/experiments/)")
    try:
        exp = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path} is not readable YAML ({str(e).splitlines()[0]}); fix the file") from None
    except (UnicodeDecodeError, OSError) as e:
        raise ConfigError(f"{path} is not a readable text file ({type(e).__name__}); give a YAML file") from None
    if not isinstance(exp, dict):
        raise ConfigError(f"{path}: expected a mapping with name, table, base and cells")
    if exp.get("table") not in TABLES:
        raise ConfigError(f"{path}: 'table' must be one of {TABLES}")
    if not exp.get("cells"):
        raise ConfigError(f"{path}: no 'cells'")
    exp.setdefault("name", p.stem)
    exp.setdefault("base", {})
    return exp


def cell_configs(exp: dict, overrides: dict | None = None, out_root: Path | None = None,
                 tiny: bool = False) -> list[tuple[dict, RunConfig]]:
    """``tiny``: each cell runs the tiny random model of its own model's architecture (see :mod:`.tiny_cells`)."""
    out_root = Path(out_root or Path("runs") / "experiments" / (exp["name"] + ("-tiny" if tiny else "")))
    cells = []
    for cell in exp["cells"]:
        cell = dict(cell)
        label = cell.pop("label")
        run_cell = {k: v for k, v in cell.items() if k != "method"}
        values = {**exp["base"], **run_cell, **(overrides or {})}
        if tiny:
            from ego_adr.run.tiny_cells import tiny_cell

            values = tiny_cell(values)
        values["output_dir"] = str(out_root / label.replace(" ", "_").replace("/", "-"))
        from dataclasses import fields

        from ego_adr.run.checks import check_types

        unknown = sorted(set(values) - {f.name for f in fields(RunConfig)})
        if unknown:
            raise ConfigError(f"experiment {exp['name']}, cell {label!r}: unknown setting(s) {unknown}")
        check_types(values, f"experiment {exp['name']}, cell {label!r}", RunConfig)
        cells.append(({"label": label, **cell}, RunConfig(**values).validate()))
    return cells


def run_experiment(exp: dict, overrides: dict | None = None, out_root: Path | None = None, progress: bool = True,
                   model=None, tiny: bool = False, fresh: bool = False,
                   retry_failed: bool = False) -> tuple[str, list[dict]]:
    """Run every cell (resuming finished ones) and return the rendered table and per-cell results.

    Each cell is an ordinary run, so the run-identity rule holds per cell: a cell folder written with other
    settings (another ``--model``, ``--limit``, data...) stops the grid with one line unless ``fresh``."""
    from ego_adr.eval.mc import compute_mc_metrics, load_predictions
    from ego_adr.run.runner import execute

    results = []
    for cell, cfg in cell_configs(exp, overrides, out_root, tiny=tiny):
        out, _ = execute(cfg, progress=progress, model=model, fresh=fresh, retry_failed=retry_failed)
        if cfg.task == "open-end":  # scored from the cell's judgements file, as `eval score` would
            from ego_adr.eval.open_end import score_open_end_rows
            from ego_adr.store import read_jsonl

            metrics = score_open_end_rows(read_jsonl(out / "judgements.jsonl"))
        else:
            metrics = compute_mc_metrics(load_predictions(out / "predictions.jsonl"))
        run = json.loads((out / "run.json").read_text())
        results.append({"cell": cell, "config": cfg, "metrics": metrics, "out": str(out),
                        "model_calls": run.get("model_calls", 0), "cache_hits": run.get("cache_hits", 0),
                        "model_from_cell": "model" not in (overrides or {}), "failures": run.get("failures") or {},
                        "judges": run.get("judges")})
    return render(exp, results), results


def table3_rows(results: list[dict]) -> str:
    """Paper Table 3's layout: Method, frames, one column per source (Cook, Tent, Toy, Hand), Avg-Sim. (the
    sample-size-weighted mean, Section 3.4); the mean of the judges first, then each judge's own row."""
    from ego_adr.eval.open_end import source_columns
    from ego_adr.eval.report import render_table

    labels = source_columns()
    labels.update({s: s for r in results for s in r["metrics"]["per_source"] if s not in labels})  # e.g. the demo
    cols = [("method", "Method", None), ("frames", "frames", None),
            *[(src, lab, ".2f") for src, lab in labels.items()], ("avg", "Avg-Sim.", ".2f"), ("n", "scored", "d")]
    rows, judge_rows = [], []
    for r in results:
        m, cfg = r["metrics"], r["config"]
        method = (r["cell"].get("method") if r.get("model_from_cell", True) else None) or cfg.model or "tiny-demo"
        frames = f"{cfg.frames}f"
        rows.append({"method": method, "frames": frames, "avg": m["avg_sim"], "n": m["n_scored"],
                     **{src: (m["per_source"].get(src) or {}).get("mean") for src in labels}})
        for name, j in m["per_judge"].items():
            judge_rows.append({"method": f"{method} - judge {name}", "frames": frames, "avg": j["mean"], "n": j["n"],
                               **{src: j["per_source"].get(src) for src in labels}})
    from ego_adr.eval.open_end import empty_table_note
    from ego_adr.run.open_end import TINY_JUDGES

    notes = {empty_table_note(r["metrics"], str(r.get("judges") or "").startswith(TINY_JUDGES)) for r in results}
    notes = sorted(n for n in notes if n)  # issue 28 item 9: a table of "-" says why
    return (render_table(rows, cols) + "\n\nPer judge (each judge's own mean; the rows above average them):\n\n"
            + render_table(judge_rows, cols) + "".join(f"\n\nNote: {n}" for n in notes))


def _mark(v: object) -> str:
    return "✓" if v in (True, None) else "×"


def render(exp: dict, results: list[dict]) -> str:
    from ego_adr.eval.report import cot_note

    table = _render(exp, results)
    if exp["table"] == "table3":
        return table
    notes = [(r["cell"]["label"], cot_note(r["metrics"])) for r in results]  # issue 29 item 1
    return table + "".join(f"\n\nNote ({label}): {n}" for label, n in notes if n)


def _render(exp: dict, results: list[dict]) -> str:
    from ego_adr.eval.report import render_table, table4_rows

    table = exp["table"]
    if table == "table3":
        return table3_rows(results)
    if table == "table4":
        return table4_rows([(r["cell"]["label"], r["config"].frames, r["metrics"]) for r in results])
    rows = []
    for r in results:
        o = r["metrics"]["overall"]
        # the label names the model that produced the numbers: a --model override replaces the YAML's method
        method = r["cell"].get("method") if r.get("model_from_cell", True) else None
        rows.append({"method": method or r["config"].model or "tiny-demo",
                     "level": r["cell"]["label"], "match": _mark(r["cell"].get("match", True)),
                     "narration": _mark(r["cell"].get("narration", True)), "tp": o["tp"],
                     "precision": o["precision"], "recall": o["recall"], "f1": o["f1"],
                     "calls": r["model_calls"], "hits": r["cache_hits"]})
    if table == "table5":
        cols = [("method", "Method", None), ("level", "Level", None), ("tp", "TP", "d"),
                ("precision", "Precision", "pct"), ("recall", "Recall", "pct"), ("f1", "F1", "pct")]
    else:
        cols = [("match", "Match", None), ("narration", "Narration", None), ("precision", "Precision", "pct"),
                ("recall", "Recall", "pct"), ("f1", "F1", "pct")]
    cols += [("calls", "model calls", "d"), ("hits", "cache hits", "d")]
    return render_table(rows, cols)


def main(argv: list[str] | None = None, prog: str | None = None, experiment: str | None = None) -> int:
    """``prog``/``experiment``: a thin script (scripts/table5.py) passes its own name and its fixed YAML, so its
    usage line is its own and it takes no experiment argument."""
    from ego_adr.folders import add_out_argument
    from ego_adr.models.arguments import add_model_arguments
    from ego_adr.run.cli import OneLineParser

    p = OneLineParser(prog=prog or "python -m ego_adr.run.experiments",
                                description=f"Run the paper ablation grid {Path(experiment).stem}" if experiment
                                else "Run a paper ablation grid from configs/experiments/*.yaml",
                                epilog="Exit status: 0 done; 2 a mistake in the command or a cell folder holding "
                                       "other settings (one line says what to do); 3 infrastructure failures; 130 "
                                       "interrupted (rerun to resume).")
    if experiment is None:
        p.add_argument("experiment", help="YAML file, e.g. configs/experiments/table6.yaml")
    add_out_argument(p, "root folder of the cells (default runs/experiments/<name>)",
                     fresh="each cell's run files, as `ego_adr.run --fresh` removes them; table.md is rewritten")
    add_model_arguments(p, purpose="the model of every cell instead of its own: ",
                        model_default_text="each cell's own", backend=None, device_default=None, dtype=True)
    p.add_argument("--data-root", help="EgoErrorVQA json folder (default: the embedded demo set)")
    p.add_argument("--video-root", help="videos in the public layout")
    p.add_argument("--limit", type=int, help="at most N samples per cell in total, round robin over the sources "
                                             "(default: all)")
    p.add_argument("--batch-size", type=int, help="requests per model call (default: per backend)")
    p.add_argument("--max-new-tokens", type=int, help="generation budget per call (default: 256, Appendix C)")
    p.add_argument("--cache-dir", help="every cache (default: $EGO_ADR_CACHE, else ~/.cache/ego_adr)")
    p.add_argument("--protocol", choices=list(PROTOCOLS),
                   help="inputs that change a number for every cell (docs/protocol.md; default ego-adr)")
    p.add_argument("--protocol-option", dest="protocol_options", action="append",
                   help="one deviation from the protocol for every cell, key=value (repeatable)")
    p.add_argument("--tiny", action="store_true",
                   help="offline: every cell on the tiny random model of its own model's architecture")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--retry-failed", action="store_true", help="rerun samples that failed on infrastructure")
    from ego_adr.errors import run_cli

    return run_cli(lambda: _main(p.parse_args(argv), experiment), user_errors=(FileNotFoundError,),
                   interrupted="interrupted: finished samples are saved; rerun the same command to resume")


def _main(args, experiment: str | None) -> int:
    if experiment is not None:
        args.experiment = experiment
    over = {k: v for k, v in vars(args).items()
            if k not in ("experiment", "out", "quiet", "fresh", "retry_failed", "tiny") and v is not None}
    from ego_adr.reasoning.probe import ProbeUnreachable

    try:
        from ego_adr.run.checks import check_types

        if args.tiny and args.model:
            raise ConfigError("--tiny picks each cell's tiny model from the cell's own model; drop --model")
        if "protocol_options" in over:  # key=value strings -> the dict RunConfig holds, before the type check
            from ego_adr.reasoning.protocol import ProtocolError, parse_options

            try:
                over["protocol_options"] = {k: v for part in over["protocol_options"]
                                            for k, v in parse_options(part).items()}
            except ProtocolError as e:
                raise ConfigError(str(e)) from None
        check_types(over, "command line", RunConfig)
        exp = load_experiment(args.experiment)
        table, results = run_experiment(exp, over, Path(args.out) if args.out else None, progress=not args.quiet,
                                        tiny=args.tiny, fresh=args.fresh, retry_failed=args.retry_failed)
    except ProbeUnreachable as e:
        raise ProbeUnreachable(f"{e}; nothing was cached: start the model server and rerun") from None
    from ego_adr.run.tiny_cells import tiny_title

    title = tiny_title(exp.get("title", exp["name"]), [r["config"] for r in results])
    print(f"\n## {title}\n\n{table}")
    out_root = Path(results[0]["out"]).parent
    (out_root / "table.md").write_text(f"## {title}\n\n{table}\n")
    print(f"\ncells in {out_root}/ ; table in {out_root / 'table.md'}; model calls "
          f"{sum(r['model_calls'] for r in results)}, cache hits {sum(r['cache_hits'] for r in results)}")
    from ego_adr.run.failures import EXIT_INFRASTRUCTURE, EXIT_USER

    codes = {r["cell"]["label"]: r["failures"].get("exit_code") for r in results}
    mistaken = [label for label, c in codes.items() if c == EXIT_USER]
    if mistaken and not any(c == EXIT_INFRASTRUCTURE for c in codes.values()):
        print(f"error: cell(s) {', '.join(mistaken)}: most samples failed for one input reason (e.g. every video "
              "missing): their numbers are not results; see each cell's report.md", file=sys.stderr)
        return EXIT_USER
    outage = [label for label, c in codes.items() if c == EXIT_INFRASTRUCTURE]
    if outage:
        print(f"error: cell(s) {', '.join(outage)} failed mostly on infrastructure (model or server unreachable, "
              "out of memory): their numbers are not results; rerun with --retry-failed once it is back",
              file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
