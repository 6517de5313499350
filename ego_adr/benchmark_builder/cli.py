"""``python -m ego_adr.data build ...``: the build, review and merge commands (docs/build.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ego_adr.errors import EXIT_INFRASTRUCTURE, OneLineParser, UserError

PROG = "python -m ego_adr.data build"


def _print_summary(s: dict) -> None:
    c = s["counts"]
    print(
        f"{s['out']}: {s['segments']} segments, {s['pairs_final']} open-ended pairs in the final set "
        f"(LLM-made {c.get('llm_made', 0)}, kept {c.get('kept', 0)}, revised {c.get('revised', 0)}, removed "
        f"{c.get('removed', 0)}, unreviewed {c.get('unreviewed', 0)}, added {c.get('added', 0)})"
    )
    for p in s.get("issues", [])[:20] + s.get("problems", [])[:20]:
        print(f"  {p}")


def _check_up_front(a) -> None:
    """The output and cache folders are writable and the device exists, before a model is loaded (issue 18)."""
    from ego_adr.models.arguments import check_model_arguments
    from ego_adr.store import check_writable_dir

    check_writable_dir(a.out, "--out")
    if a.cache_dir:
        check_writable_dir(a.cache_dir, "--cache-dir")
    check_model_arguments(a, model=False)  # the name: the build's own loader (tiny is its text model)


def _options(p) -> None:
    p.add_argument(
        "--no-llm-labels",
        action="store_true",
        help="a label that is neither one of our options nor in --labels makes a bad row (default: the LLM "
        "names its error type, provenance llm-labelled; Section 3.3)",
    )
    p.add_argument(
        "--llm-misleading",
        action="store_true",
        help="the LLM also writes misleading questions about correct steps (a deviation, named in the card: "
        "in the paper the final annotator writes them, Section 3.3)",
    )
    p.add_argument(
        "--subsample",
        type=int,
        metavar="N",
        help="keep N segments, proportionally per source and correct/error (Section 3.1, Table 2)",
    )
    p.add_argument("--subsample-seed", type=int, default=0, help="the draw's seed (default 0)")


def _build(argv: list[str]) -> int:
    from ego_adr.benchmark_builder.builder import Options, build
    from ego_adr.benchmark_builder.llm import DEFAULT_MODEL
    from ego_adr.data.build_input import InputError
    from ego_adr.folders import add_out_argument
    from ego_adr.models.arguments import add_model_arguments

    p = OneLineParser(
        prog=PROG, description="Build a benchmark data root from an annotation file (CSV/JSONL)."
    )
    p.add_argument("--annotations", required=True, help="the annotation rows (docs/build.md: the schema)")
    add_out_argument(p, "the data root to write", required=True,
                     fresh="build/, review/ (its review decisions are lost), procedure.json, sources.json, README.md "
                           "and each source's sample files")
    # the generator runs through transformers here (build/llm.py): hf is its one backend
    add_model_arguments(p, model=DEFAULT_MODEL, purpose="the LLM that writes procedures and QA pairs: ",
                        model_default_text=f"{DEFAULT_MODEL}, the paper's (Section 3.3)", backends=("hf",),
                        device_default=None, base_url=False)
    p.add_argument("--labels", help="mapping of the dataset's own error labels to our options (JSON or CSV)")
    p.add_argument("--procedures", help="given procedure texts (procedure.json format), kept as they are")
    p.add_argument("--cache-dir", help="stage cache folder (default: the cache root)")
    _options(p)
    a = p.parse_args(argv)
    _check_up_front(a)
    options = Options(
        llm_labels=not a.no_llm_labels,
        llm_misleading=a.llm_misleading,
        subsample=a.subsample,
        subsample_seed=a.subsample_seed,
    )
    try:
        s = build(
            a.annotations,
            a.out,
            a.model,
            labels=a.labels,
            given_procedures=a.procedures,
            cache_dir=a.cache_dir,
            device=a.device,
            fresh=a.fresh,
            options=options,
        )
    except InputError as e:
        raise UserError(str(e)) from None
    _print_summary(s)
    print(
        f"  procedures: {json.dumps(s['procedures'])}; bad rows {s['bad_rows']}; unparseable replies "
        f"{s['unparseable']}; outages {s['outages']}"
    )
    lab = s["labels"]
    print(
        f"  labels: given {lab['given']}, mapped {lab['mapped']}, llm-labelled {lab['llm-labelled']} "
        f"(rows the LLM could not type, left out: {s['label_failures']})"
    )
    calls = s["calls"]
    print(f"  model calls {calls['model_calls']}, stage-cache hits {calls['cache_hits']}")
    if s["subsample"]:
        sub = s["subsample"]
        print(f"  subsample: {sub['kept']} of {sub['rows']} rows, seed {sub['seed']} (build/subsample.json)")
    if s["outages"]:
        print(f"  {s['outages']} segments got no pair because the model failed; rerun the same command")
        return EXIT_INFRASTRUCTURE
    print(f"  next: {PROG} review {a.out} --video-root VIDEOS")
    return 0


def _review(argv: list[str]) -> int:
    from ego_adr.benchmark_builder.final import DEFAULT_REVIEWERS, load_state, write_roles
    from ego_adr.benchmark_builder.merge import DEFAULT_ADDER
    from ego_adr.benchmark_builder.review import write_review

    p = OneLineParser(prog=f"{PROG} review", description="Write the review sheet (CSV) and page (HTML).")
    p.add_argument("dir", help="a build folder")
    p.add_argument("--video-root", help="where the videos are (for the frames on the page)")
    p.add_argument("--reviewers", default=",".join(DEFAULT_REVIEWERS), help="comma-separated (default A,B,C)")
    p.add_argument(
        "--adder",
        default=DEFAULT_ADDER,
        help=f"the one person who adds pairs (Appendix A; default {DEFAULT_ADDER})",
    )
    p.add_argument("--frames", type=int, default=4, help="frames per segment on the page (default 4)")
    a = p.parse_args(argv)
    out = Path(a.dir)
    segments, generated, _ = load_state(out)
    reviewers = [r.strip() for r in a.reviewers.split(",") if r.strip()]
    if not reviewers or any(":" in r for r in reviewers):
        raise UserError("--reviewers: give comma-separated names without ':'")
    adder = a.adder.strip()
    if not adder or ":" in adder or adder in reviewers:
        raise UserError(f"--adder {a.adder!r}: give one name without ':' that is not one of the --reviewers")
    write_roles(out, reviewers, adder)
    res = write_review(
        out, segments, {g["sample_id"]: g for g in generated}, reviewers, a.video_root, a.frames, adder
    )
    print(
        f"wrote {res['sheet']} ({res['lines']} lines) and {res['page']} ({res['segments_with_frames']} of "
        f"{res['segments']} segments with frames)"
    )
    print(
        f"  next: reviewers {','.join(reviewers)} decide each pair, adder {adder} adds pairs on new lines, then "
        f"{PROG} merge {a.dir} SHEET.csv [SHEET.csv ...]"
    )
    return 0


def _merge(argv: list[str]) -> int:
    from ego_adr.benchmark_builder.final import finalise

    p = OneLineParser(prog=f"{PROG} merge", description="Import reviewers' sheets and write the final set.")
    p.add_argument("dir", help="a build folder")
    p.add_argument("sheets", nargs="+", help="filled review sheets (CSV)")
    a = p.parse_args(argv)
    s = finalise(Path(a.dir), [Path(x) for x in a.sheets])
    _print_summary(s)
    ag = s["agreement"]
    if ag.get("fleiss_kappa") is not None:
        print(
            f"  agreement: Fleiss' kappa {ag['fleiss_kappa']:.3f}, mean Cohen's kappa "
            f"{ag['mean_cohen_kappa']:.3f} over {ag['n_items']} pairs"
        )
    elif ag.get("note"):
        print(f"  agreement: {ag['note']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``build`` / ``build review`` / ``build merge`` through the one CLI wrapper (one line, exit 2 / 3 / 130)."""
    from ego_adr.errors import run_cli

    return run_cli(lambda: _dispatch(list(sys.argv[1:] if argv is None else argv)))


def _dispatch(argv: list[str]) -> int:
    if argv and argv[0] == "review":
        return _review(argv[1:])
    if argv and argv[0] == "merge":
        return _merge(argv[1:])
    return _build(argv)
