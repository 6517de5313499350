"""``python -m ego_adr.run``: one experiment, from procedure + clips + a VLM to predictions, metrics and report.

With no arguments it builds (once, cached) the embedded tiny model and demo set and runs the auto-routed
pipeline on them, offline, on the CPU. With ``--model qwen2.5-vl --data-root DIR --video-root DIR`` it runs the
real benchmark. Output folder: ``predictions.jsonl`` (one row per sample), ``metrics.json``, ``report.md`` with
plots, and ``run.json`` (resolved config, versions, model calls and cache hits). Rerunning into the same folder
resumes.
"""

from __future__ import annotations

import argparse
import sys

from ego_adr.run.config import RunConfig


def _bool(v: str) -> bool:
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    if v.lower() in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected on/off, got {v!r}")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ego_adr.run",
        description="Run Ego-ADR (or a baseline) on EgoErrorVQA or the embedded demo set.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    a = p.add_argument
    a("--config", help="YAML file of settings (flags given here override it)")
    a("--model", help="alias (qwen2.5-vl, qwen2-vl, qwen3-vl, llava-onevision, video-llava, internvl3.5, ...), "
                      "hub id or local folder; default: the embedded tiny demo model")
    a("--backend", choices=["hf", "openai", "vllm"], help="model backend (default hf)")
    a("--task", choices=["multiple-choice", "open-end"], help="benchmark task (default multiple-choice)")
    a("--mode", choices=["auto", "deep", "shallow", "cot", "direct"],
      help="auto = text-only probe routes to deep/shallow; cot/direct = one-pass baselines (default auto)")
    a("--frames", type=int, help="uniformly sampled frames per clip: 8/16/24/32 in the paper (default 8)")
    a("--match", type=_bool, help="key-step matching on/off (Table 6 ablation; default on)")
    a("--narration", type=_bool, help="video narration on/off (Table 6 ablation; default on)")
    a("--narration-source", choices=["model", "reference"],
      help="'reference' replaces the model's narration by the annotations' descriptions (diagnostic)")
    a("--bank-builder", choices=["auto", "rule", "model"], help="procedure bank builder (default auto)")
    a("--bank-model", help="model that builds deep-mode procedure banks: paper (Qwen2.5-VL-7B-Instruct, Section "
                           "5.2), evaluated, rule, or an alias/hub id/folder (default paper; evaluated for tiny "
                           "models)")
    a("--data-root", help="folder with the EgoErrorVQA json files; default: the embedded demo set")
    a("--video-root", help="folder with the source datasets' videos in the public layout")
    a("--sources", help="comma-separated: captaincook4d,epic_tent,assembly101,egooops (default all)")
    a("--limit", type=int, help="at most N samples (spread over the sources)")
    a("--output-dir", help="results folder (default runs/<model>-<task>-<mode>-<frames>f)")
    a("--device", help="auto, cpu, cuda, cuda:1 ... (default auto)")
    a("--dtype", help="bfloat16/float16/float32 (default: bf16 on GPU, fp32 on CPU)")
    a("--batch-size", type=int, help="requests per model call (default 1)")
    a("--max-pixels-per-frame", type=int, help="per-frame pixel budget (default: planned from --gpu-memory)")
    a("--gpu-memory", help="GPU memory the per-frame pixel budget is planned for (default 24GB, Section 6.1)")
    a("--base-url", help="OpenAI-compatible endpoint for --backend openai (key from OPENAI_API_KEY)")
    a("--tensor-parallel-size", type=int, help="vLLM tensor parallel size")
    a("--max-new-tokens", type=int, help="generation budget per call (paper: 256)")
    a("--num-shards", type=int, help="data-parallel shards (merge with python -m ego_adr.eval merge)")
    a("--shard-index", type=int, help="which shard this process runs (0-based)")
    a("--seed", type=int)
    a("--prefetch", type=int, help="clips decoded ahead of the model (default 4)")
    a("--decode-workers", type=int, help="background decoding threads (default 2)")
    a("--cache-dir", help="stage cache, probe results, demo and tiny model (default ~/.cache/ego_adr)")
    a("--no-cache", action="store_true", help="do not reuse model outputs from the stage cache")
    a("--judges", help="open-end judges, comma-separated (aliases, hub ids, folders)")
    a("--judge-backend", choices=["hf", "openai"], help="backend of the judges")
    a("--qa-selection", choices=["all", "one"], help="open-end: every QA pair, or one per sample (seeded)")
    a("--protocol", choices=["ego-adr", "public"],
      help="inputs that change a number: 'public' = the public white agent's frames, clip rate, resizing, step "
           "text, question and 128 tokens; 'ego-adr' = ours (see docs/protocol.md; default ego-adr)")
    a("--protocol-option", dest="protocol_options", action="append",
      help="one deviation from the protocol, key=value (sampling, clip_fps, resize, step, question, "
           "max_new_tokens, answers, public_source); repeatable; shows in the output folder name")
    a("--quiet", action="store_true", help="no progress bar")
    return p


_LIST_FIELDS = {"sources", "judges"}
DEMO_MAX_NEW_TOKENS = 64
DEMO_BATCH_SIZE = 4


def config_from_args(argv: list[str] | None = None) -> tuple[RunConfig, argparse.Namespace]:
    args = build_parser().parse_args(argv)
    values: dict = RunConfig.from_yaml(args.config) if args.config else {}
    for key, val in vars(args).items():
        if key in ("config", "quiet", "no_cache") or val is None:
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
        values[key] = [x.strip() for x in val.split(",") if x.strip()] if key in _LIST_FIELDS else val
    if args.no_cache:
        values["use_cache"] = False
    if values.get("model") is None:
        # The embedded demo model has random weights and never emits end-of-sequence, so every call would run to
        # the full budget; a shorter budget and small batches keep the offline demo within ~2 minutes on 2 CPU
        # cores. Real models keep the paper's 256 new tokens (Appendix C).
        values.setdefault("max_new_tokens", DEMO_MAX_NEW_TOKENS)
        values.setdefault("batch_size", DEMO_BATCH_SIZE)
    return RunConfig(**values), args


def main(argv: list[str] | None = None) -> int:
    from ego_adr.run.config import ConfigError

    try:
        cfg, args = config_from_args(argv)
        from ego_adr.run.runner import execute

        out, metrics = execute(cfg, progress=not args.quiet)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:  # missing data files: say what to do, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
    from ego_adr.eval.report import summary_table

    if cfg.task == "multiple-choice":
        print(summary_table(metrics, frames=cfg.frames))
    else:
        from ego_adr.eval.open_end import render_open_end_report

        print(render_open_end_report(metrics))
    print(f"\nresults in {out}/ (predictions.jsonl, metrics.json, report.md, run.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
