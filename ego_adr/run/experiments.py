"""The paper's ablations from one YAML each: ``python -m ego_adr.run.experiments configs/experiments/table6.yaml``.

An experiment file has ``name``, ``table`` (``table4`` = frame sweep in Table 3/4 layout, ``table5`` = deep /
shallow / CoT per model, ``table6`` = match x narration), ``base`` (run settings shared by every cell, any
:class:`~ego_adr.config.RunConfig` field) and ``cells`` (each a ``label`` plus the settings it changes). Every
cell is an ordinary run in ``OUT/<label>/`` -- resumable, with its own predictions, metrics and report -- and all
cells share the stage cache, so a call that two cells need (the same narration of the same clip, the same
procedure bank) is made once, and re-running the grid costs no model call at all. The table is rendered from
the cells' predictions files, never from numbers kept on the side.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ego_adr.run.config import ConfigError, RunConfig

TABLES = ("table4", "table5", "table6")


def load_experiment(path: str | Path) -> dict:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"experiment file {path} not found (see configs/experiments/)")
    exp = yaml.safe_load(p.read_text()) or {}
    if exp.get("table") not in TABLES:
        raise ConfigError(f"{path}: 'table' must be one of {TABLES}")
    if not exp.get("cells"):
        raise ConfigError(f"{path}: no 'cells'")
    exp.setdefault("name", p.stem)
    exp.setdefault("base", {})
    return exp


def cell_configs(exp: dict, overrides: dict | None = None, out_root: Path | None = None) -> list[tuple[dict, RunConfig]]:
    out_root = Path(out_root or Path("runs") / "experiments" / exp["name"])
    cells = []
    for cell in exp["cells"]:
        cell = dict(cell)
        label = cell.pop("label")
        run_cell = {k: v for k, v in cell.items() if k != "method"}
        values = {**exp["base"], **run_cell, **(overrides or {})}
        values["output_dir"] = str(out_root / label.replace(" ", "_").replace("/", "-"))
        cells.append(({"label": label, **cell}, RunConfig(**values).validate()))
    return cells


def run_experiment(exp: dict, overrides: dict | None = None, out_root: Path | None = None, progress: bool = True,
                   model=None) -> tuple[str, list[dict]]:
    """Run every cell (resuming finished ones) and return the rendered table and per-cell results."""
    from ego_adr.eval.mc import compute_mc_metrics, load_predictions
    from ego_adr.run.runner import execute

    results = []
    for cell, cfg in cell_configs(exp, overrides, out_root):
        out, _ = execute(cfg, progress=progress, model=model)
        metrics = compute_mc_metrics(load_predictions(out / "predictions.jsonl"))
        run = json.loads((out / "run.json").read_text())
        results.append({"cell": cell, "config": cfg, "metrics": metrics, "out": str(out),
                        "model_calls": run.get("model_calls", 0), "cache_hits": run.get("cache_hits", 0)})
    return render(exp, results), results


def _mark(v: object) -> str:
    return "✓" if v in (True, None) else "×"


def render(exp: dict, results: list[dict]) -> str:
    from ego_adr.eval.report import render_table, table4_rows

    table = exp["table"]
    if table == "table4":
        return table4_rows([(r["cell"]["label"], r["config"].frames, r["metrics"]) for r in results])
    rows = []
    for r in results:
        o = r["metrics"]["overall"]
        rows.append({"method": r["cell"].get("method", r["config"].model or "tiny-demo"),
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ego_adr.run.experiments",
                                description="Run a paper ablation grid from configs/experiments/*.yaml")
    p.add_argument("experiment", help="YAML file, e.g. configs/experiments/table6.yaml")
    p.add_argument("--out", help="root folder of the cells (default runs/experiments/<name>)")
    p.add_argument("--model", help="override the model of every cell")
    p.add_argument("--data-root")
    p.add_argument("--video-root")
    p.add_argument("--limit", type=int)
    p.add_argument("--device")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--max-new-tokens", type=int)
    p.add_argument("--protocol", choices=["ego-adr", "public"],
                   help="inputs that change a number for every cell (docs/protocol.md; default ego-adr)")
    p.add_argument("--protocol-option", dest="protocol_options", action="append",
                   help="one deviation from the protocol for every cell, key=value (repeatable)")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    over = {k: v for k, v in vars(args).items() if k not in ("experiment", "out", "quiet") and v is not None}
    try:
        if "protocol_options" in over:
            from ego_adr.reasoning.protocol import ProtocolError, parse_options

            try:
                over["protocol_options"] = {k: v for part in over["protocol_options"]
                                            for k, v in parse_options(part).items()}
            except ProtocolError as e:
                raise ConfigError(str(e)) from None
        exp = load_experiment(args.experiment)
        table, results = run_experiment(exp, over, Path(args.out) if args.out else None, progress=not args.quiet)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    title = exp.get("title", exp["name"])
    print(f"\n## {title}\n\n{table}")
    out_root = Path(results[0]["out"]).parent
    (out_root / "table.md").write_text(f"## {title}\n\n{table}\n")
    print(f"\ncells in {out_root}/ ; table in {out_root / 'table.md'}; model calls "
          f"{sum(r['model_calls'] for r in results)}, cache hits {sum(r['cache_hits'] for r in results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
