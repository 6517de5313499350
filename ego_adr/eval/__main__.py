"""``python -m ego_adr.eval``: score, compare, merge predictions files and compute rater agreement.

Subcommands
  score PREDICTIONS.jsonl --out DIR    metrics.json, report.md, confusion_matrix.png, per_type_accuracy.png
                                       (the public evaluator's strict rule; a lenient reading beside it); also
                                       lmms-eval's own <date>_samples_<task>.jsonl of an egoerrorvqa task
  compare A.jsonl B.jsonl              paired comparison (B - A) with bootstrap CIs and McNemar's test
  agreement ratings.csv [--humans ..]  Cohen/Fleiss kappa, Pearson/Spearman (paper Table 8 layout)
  merge OUT.jsonl IN.jsonl ...         merge shard outputs (dedup by sample_id, see ego_adr.eval.merge)
  view RUN_DIR [RUN_DIR ...] [--out F] the evidence browser (report.html) of one run or several side by side

Exit status 2 for wrong arguments, missing files or unusable input, with a message saying what to do.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ego_adr.errors import OneLineParser, UserError
from ego_adr.folders import add_out_argument


class UsageError(UserError):
    """Bad arguments or input: reported in one line, exit status 2."""


def _read(path: str) -> tuple[list[dict], str]:
    """The rows of a predictions file, or one line saying why there are none (issue 46, item 7): a folder, a
    binary file and a file of no JSON rows are named as such, never as a stream of per-line warnings. Lines that
    are not rows (a run stopped mid-write cuts the last one) are said once, here, and the note is returned for the
    summary line (:func:`skipped_note`)."""
    p = Path(path)
    if p.is_dir():
        inside = p / "predictions.jsonl"
        hint = f"; did you mean {inside}?" if inside.is_file() else "; give the predictions file inside it"
        raise UsageError(f"{path} is a folder, not a predictions file{hint}")
    if not p.is_file():
        raise UsageError(f"predictions file not found: {path}")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
    if _binary(data[:65536]):
        raise UsageError(f"{path} is not a text predictions file (binary data); give a predictions.jsonl")
    from ego_adr.store import read_jsonl

    skipped: list = []
    rows = read_jsonl(p, skipped)
    last = len(data.rstrip(b"\n").split(b"\n"))
    if not rows:
        why = f" ({skipped_note(skipped, last)})" if skipped else " (the file is empty)"
        raise UsageError(f"{path} holds no prediction rows{why}")
    note = skipped_note(skipped, last) if skipped else ""
    if note:
        print(f"note: {path}: {note}; read without {'it' if len(skipped) == 1 else 'them'}", file=sys.stderr)
    return rows, note


def _binary(head: bytes) -> bool:
    """NUL bytes, or bytes that are not UTF-8 (a character cut at the end of ``head`` is not held against it)."""
    import codecs

    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return b"\0" in head


def skipped_note(skipped: list[tuple[int, str]], last: int) -> str:
    """``[(16, why)]`` -> ``"1 line skipped: line 16 (the last, cut short)"``; several: the first few numbers."""
    if len(skipped) == 1 and skipped[0][0] == last:
        return f"1 line skipped: line {last} (the last, cut short: a run stopped mid-write?)"
    nums = ", ".join(str(n) for n, _ in skipped[:5]) + (", ..." if len(skipped) > 5 else "")
    return f"{len(skipped)} line{'s' if len(skipped) > 1 else ''} skipped, not JSON rows: line {nums}"


def _score_open_end(rows: list[dict], out: Path, title: str, skipped: str = "") -> int:
    try:
        from ego_adr.eval import open_end
    except ImportError as e:
        raise UsageError(f"this is an open-ended predictions file, but its scorer is unavailable "
                         f"(ego_adr.eval.open_end could not be imported: {e})") from None
    from ego_adr.eval.report import write_metrics_json

    try:
        metrics = open_end.score_open_end_rows(rows)
    except ValueError as e:
        raise UsageError(str(e)) from None
    write_metrics_json(metrics, out)
    render = getattr(open_end, "render_open_end_report", None)
    body = render(metrics) if render else "```json\n" + json.dumps(metrics, indent=2, default=str) + "\n```\n"
    (out / "report.md").write_text(f"# {title}\n\nOpen-ended VQA (paper Section 3.4).\n\n{body}", encoding="utf-8")
    print(body)
    if skipped:
        print(f"rows scored: {len(rows)} ({skipped})")
    print(f"wrote {out / 'metrics.json'} and {out / 'report.md'}")
    return 0


def cmd_score(args) -> int:

    rows, args.skipped = _read(args.predictions)
    out = Path(args.out)
    _check_output_dir(out)
    with _lock(out):
        _check_score_target(Path(args.predictions), out)
        if args.fresh:  # the folder is the predictions' run's or holds no run (checked above): score's own files go
            from ego_adr.folders import discard, said_removed

            said_removed(out, discard(out, SCORE_FILES))
        return _score(args, rows, out)


#: What ``eval score`` writes in its folder (multiple choice: all five; open-ended: metrics and report), which
#: ``--fresh`` removes first, so no plot of an earlier scoring stays beside the new metrics.
SCORE_FILES = ("metrics.json", "report.md", "confusion_matrix.png", "per_type_accuracy.png", "per_source_f1.png")


def _check_score_target(predictions: Path, out: Path) -> None:
    """``--out`` holding another run's identity would get metrics that do not belong to its predictions."""
    from ego_adr.eval.merge import check_identities

    try:
        check_identities([predictions], out / "metrics.json", allow_mixed=False)
    except ValueError as e:
        raise UsageError(f"--out {out} holds a run of other settings than {predictions}: {e}; score into "
                         "another folder") from None


def _score(args, rows: list[dict], out: Path) -> int:
    from ego_adr.eval.mc import compute_mc_metrics, is_open_end_rows, is_open_row
    from ego_adr.eval.report import exclusion_line, summary_table, write_metrics_json, write_report

    title = args.title or Path(args.predictions).stem
    rows = _from_lmms_eval(args, rows)
    if is_open_end_rows(rows):
        if not all(is_open_row(r) for r in rows):
            raise UsageError(f"{args.predictions} mixes open-ended and multiple-choice rows; score each task's "
                             "file separately")
        return _score_open_end(rows, out, title, args.skipped)
    sources = None
    if args.sources:  # aliases (epic-tent) name the registered source, as everywhere else
        from ego_adr.data import sources as source_registry

        sources = []
        for x in (x.strip() for x in args.sources.split(",") if x.strip()):
            try:
                sources.append(source_registry.get(x).name)
            except KeyError:
                sources.append(x)  # a foreign source: its rows are reported as such
    metrics = compute_mc_metrics(rows, n_boot=args.n_boot, seed=args.seed, sources=sources)
    if not metrics["overall"]["n"] and not metrics["unscored"]["n"]:
        raise UsageError(f"{args.predictions}: no row can be scored ({exclusion_line(metrics['excluded'])}); "
                         "is this a multiple-choice predictions file of the sources you named?")
    write_metrics_json(metrics, out)
    paths = write_report(metrics, out, title=title, notes=args.notes, frames=args.frames)
    o = metrics["overall"]
    print(summary_table(metrics, args.frames))
    print(f"\nscoring: {metrics['scoring']['name']} (the public evaluator's rule)  "
          f"TP {o['tp']}  FP {o['fp']}  TN {o['tn']}  FN {o['fn']}  n {o['n']}"
          + (f" ({args.skipped})" if args.skipped else "") + "  "
          f"not an option {o['n_unparseable']}  no answer {o['n_failed']}  "
          f"duplicates dropped {metrics['n_duplicates_dropped']}")
    len_ = metrics["lenient"]
    print(f"lenient reading (not the paper's protocol): Acc {100 * len_['accuracy']:.1f}  "
          f"Pre {100 * len_['precision']:.1f}  Recall {100 * len_['recall']:.1f}  F1 {100 * len_['f1']:.1f}  "
          f"({len_['n_lenient_only']} answers only lenient reading understands)")
    ci = metrics["ci95"]
    print("95% CI: " + "  ".join(f"{k} [{100 * v[0]:.1f}, {100 * v[1]:.1f}]" for k, v in ci.items()))
    if metrics["ci95_flags"].get("note"):
        print(f"warning: intervals flagged: {metrics['ci95_flags']['note']}")
    for kind in ("excluded", "unscored"):
        if metrics[kind]["n"]:
            print(f"{kind}: {exclusion_line(metrics[kind])}")
    print(f"wrote {out / 'metrics.json'}, " + ", ".join(str(p) for p in paths.values()))
    return 0


def _from_lmms_eval(args, rows: list[dict]) -> list[dict]:
    """lmms-eval's ``samples_<task>.jsonl`` -> the rows ego_adr scores (ego_adr.eval.lmms_samples); other files
    unchanged."""
    from ego_adr.eval import lmms_samples as L

    if not L.is_lmms_samples(rows):
        if args.judgements:
            raise UsageError("--judgements goes with an lmms-eval open-ended samples file (samples_<task>.jsonl)")
        return rows
    from ego_adr.store import cache_root

    path = Path(args.predictions)
    try:
        if any((r.get(L.ROW_KEY) or {}).get("task") == "open-end" for r in rows):
            out, found = L.open_end_rows(rows, path, Path(args.judgements) if args.judgements else None,
                                         cache_root())
            print(f"lmms-eval samples: {len(rows)} open-ended answers, judged in {found}")
            return out
        out = L.mc_rows(rows, path)
    except L.SamplesError as e:
        raise UsageError(str(e)) from None
    print(f"lmms-eval samples: {len(rows)} multiple-choice replies (filtered_resps) scored by ego_adr.eval")
    return out


def cmd_compare(args) -> int:
    from ego_adr.eval.compare import compare_runs, format_comparison

    a, b = _read(args.a)[0], _read(args.b)[0]
    try:
        res = compare_runs(a, b, n_boot=args.n_boot, seed=args.seed)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not res["n_common"]:  # never silent (issue 18): nothing to compare is not a comparison
        raise UsageError(f"{args.a} and {args.b} have no scorable sample in common ({res['n_only_a']} only in A, "
                         f"{res['n_only_b']} only in B); compare two runs of the same samples")
    labels = args.labels or _labels(Path(args.a), Path(args.b))
    print(format_comparison(res, labels[0], labels[1]))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


def _labels(a: Path, b: Path) -> tuple[str, str]:
    """Names for the two sides: the file stems, or (both ``predictions``, as every run writes) the folders'."""
    if a.stem != b.stem:
        return a.stem, b.stem
    pa, pb = a.resolve().parent, b.resolve().parent
    if pa.name != pb.name:
        return pa.name, pb.name
    return str(a.parent), str(b.parent)


def cmd_agreement(args) -> int:
    from ego_adr.eval.agreement import agreement, format_agreement

    humans = [h.strip() for h in args.humans.split(",") if h.strip()] if args.humans else None
    try:
        res = agreement(args.ratings, humans=humans, id_column=args.id_column)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(str(e)) from None
    print(format_agreement(res))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return 0


def cmd_merge(args) -> int:
    from ego_adr.eval.merge import merge_predictions

    inputs = list(args.inputs_pos) + list(args.inputs or [])
    if not inputs:
        raise UsageError("merge needs input files: merge OUT.jsonl IN1.jsonl IN2.jsonl ... or --inputs GLOB")
    out = Path(args.out)
    _check_output_file(out)
    try:
        with _lock(out.parent):
            res = merge_predictions(inputs, out, allow_mixed=args.allow_mixed)
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(str(e)) from None
    for p, n in res["inputs"]:
        print(f"  {n:6d} rows  {p}")
    print(f"read {res['rows_read']} rows, wrote {res['rows_written']} to {res['out']} "
          f"({res['duplicates_dropped']} duplicates dropped; answered {res['answered']}, "
          f"unparseable {res['unparseable']}, no answer {res['no_answer']})")
    print("per source: " + ", ".join(f"{s} {n}" for s, n in sorted(res["per_source"].items())))
    ident = res["identity"]
    if ident["mixed"]:
        print(f"MIXED RUNS (--allow-mixed): the inputs differ in {', '.join(ident['mixed'])}; this file is not "
              f"one run's output (recorded in {Path(res['out']).name.removesuffix('.jsonl')}.merge.json)")
    if ident["without_identity"]:
        print(f"note: {len(ident['without_identity'])} input(s) have no identity.json beside them, so their "
              "settings could not be compared")
    return 0


def cmd_view(args) -> int:
    from ego_adr.eval.browser import write_report_html

    for d in args.run_dirs:
        if not (Path(d) / "predictions.jsonl").is_file():
            raise UsageError(f"{d} is not a run folder (no predictions.jsonl in it)")
    out = write_report_html(args.run_dirs, args.out or view_default(args.run_dirs), thumb_width=args.thumb_width,
                            title=args.title)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB; open it in a browser, no server needed)")
    return 0


def view_default(run_dirs: list[str]) -> Path:
    """Where ``eval view`` writes without ``--out``: one run's own ``report.html``; several runs' page beside the
    first run (``runs/compare-A-B.html``), never the current folder, which is often a checkout (issue 46)."""
    first = Path(run_dirs[0]).resolve()
    if len(run_dirs) == 1:
        return first / "report.html"
    names = [Path(d).resolve().name for d in run_dirs]
    stem = "compare-" + "-".join(names)
    if len(stem) > 120:
        stem = f"compare-{names[0]}-and-{len(names) - 1}-more"
    return first.parent / f"{stem}.html"


def _lock(folder: Path):
    """The output folder's run lock (``ego_adr.run.identity.FolderLock``): no two writers at once."""
    from ego_adr.folders import FolderLock

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot create the output folder {folder}: {e.strerror or e}") from None
    return FolderLock(folder)


def _check_output_file(path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"the output {path} is a folder; give a file name such as {path / 'predictions.jsonl'}")
    _check_output_dir(path.parent)


def _check_output_dir(folder: Path) -> None:
    """``folder`` can be written (a probe file is tried: permission bits lie for root, see ego_adr.run.checks)."""
    from ego_adr.store import check_writable_dir

    check_writable_dir(folder, "the output folder")  # a UserError: one line, exit 2


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m ego_adr.eval", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("score", help="score a predictions file (multiple-choice or open-ended)")
    s.add_argument("predictions")
    add_out_argument(s, "output folder (metrics.json, report.md)", required=True,
                     fresh="metrics.json, report.md and the plots; a run's own folder keeps its predictions")
    s.add_argument("--title", help="report title (default: the predictions file's name)")
    s.add_argument("--notes", help="text put under the report title")
    s.add_argument("--frames", help="frames column of the table, e.g. 8f")
    s.add_argument("--sources", help="comma-separated sources this file should hold; rows of others are excluded "
                                     "and listed (default: every source in the file is scored)")
    s.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples for the 95%% CIs (default: 1000)")
    s.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    s.add_argument("--judgements", help="an lmms-eval open-ended samples file's judgements (default: found by its "
                                        "answers beside it, in --output_path or in the cache; docs/lmms_eval.md)")
    s.set_defaults(func=cmd_score)

    c = sub.add_parser("compare", help="paired comparison of two multiple-choice runs (B - A)")
    c.add_argument("a")
    c.add_argument("b")
    c.add_argument("--labels", nargs=2, metavar=("A", "B"),
                   help="names of the two sides (default: the file names, or the run folders')")
    c.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default: 1000)")
    c.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    c.add_argument("--json", help="also write the result as JSON here")
    c.set_defaults(func=cmd_compare)

    a = sub.add_parser("agreement", help="inter-rater agreement of a ratings CSV (one column per rater)")
    a.add_argument("ratings")
    a.add_argument("--humans", help="comma-separated columns forming the human panel; the rest are judges")
    a.add_argument("--id-column", help="column naming the item (default: none; rows are items)")
    a.add_argument("--json", help="also write the result as JSON here")
    a.set_defaults(func=cmd_agreement)

    m = sub.add_parser("merge", help="merge shard predictions files into one")
    m.add_argument("out")
    m.add_argument("inputs_pos", nargs="*", metavar="IN.jsonl")
    m.add_argument("--inputs", nargs="+", help="input files or quoted glob patterns")
    m.add_argument("--allow-mixed", action="store_true",
                   help="join inputs whose folders record different run settings (default: refuse); the merge "
                        "then names the differences on stdout and in OUT.merge.json")
    m.set_defaults(func=cmd_merge)

    v = sub.add_parser("view", help="the evidence browser: report.html of one run folder, or several side by side")
    v.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    v.add_argument("--out", help="the HTML file to write (default: one run's own report.html; several runs' "
                                 "page beside the first run, e.g. runs/compare-A-B.html)")
    v.add_argument("--thumb-width", type=int, default=96, help="thumbnail width in pixels (0: no thumbnails)")
    v.add_argument("--title")
    v.set_defaults(func=cmd_view)
    return p


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    def go() -> int:
        args = build_parser().parse_args(argv)
        if getattr(args, "n_boot", 1) < 1:
            raise UsageError("--n-boot must be >= 1")
        return args.func(args)

    return run_cli(go, interrupted="interrupted; rerun the same command")


if __name__ == "__main__":
    sys.exit(main())
