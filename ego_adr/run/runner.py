"""Executes one run: samples -> (frames decoded ahead in the background) -> pipeline -> predictions.jsonl.

What it guarantees:
- nothing lost: every finished sample is appended (flushed, fsynced) to ``predictions.jsonl`` at once; a rerun
  into the same output folder skips finished samples, and when nothing is left it neither loads a model nor
  decodes a frame;
- overlap: clips for the next batches are decoded by background workers (bounded queue) while the model works,
  and decode and model seconds are recorded separately in every row;
- every model call goes through the stage cache, so a re-run or an ablation never pays twice for one call;
  ``run.json`` records ``model_calls`` and ``cache_hits`` (this invocation) and ``totals`` (all of them);
- a folder holds one run: its identity is checked before any work and a lock keeps out a second live run
  (:mod:`ego_adr.run.identity`); failures carry their kind and infrastructure ones are retryable
  (:mod:`ego_adr.run.failures`); ``--cache-dir`` holds every cache, the demo set and tiny models included.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from pathlib import Path

from ego_adr.data.sample import Sample
from ego_adr.run.common import (  # noqa: F401  (re-exported: the runner's public helpers)
    apply_limit,
    cache_scope,
    decode_fn,
    decode_item,
    decoded,
    load_dataset,
    load_vlm,
    versions,
    write_json,
)
from ego_adr.run.config import ConfigError, RunConfig


def run_multiple_choice(cfg: RunConfig, out: Path, samples: list[Sample], info: dict, progress: bool = True,
                        model=None) -> dict:
    from tqdm import tqdm

    from ego_adr.eval.mc import compute_mc_metrics
    from ego_adr.eval.report import write_metrics_json, write_report
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
    from ego_adr.run import runinfo
    from ego_adr.run.failures import summarise
    from ego_adr.run.identity import confirm, read_identity
    from ego_adr.store import JsonlStore

    out.mkdir(parents=True, exist_ok=True)
    store = JsonlStore(out / "predictions.jsonl")
    done = store.done_ids()
    pending = [s for s in samples if s.sample_id not in done]
    prev = runinfo.previous(out)
    started = datetime.now(timezone.utc).isoformat()
    run_info: dict = {"config": cfg.to_dict(), "identity": read_identity(out), "data": info, "versions": versions(),
                      "started": started, "resumed_from": len(done), "dropped_bytes_on_repair": store.dropped_bytes}
    given_model, model = model, None
    t_start = time.perf_counter()
    try:
        if pending:
            from dataclasses import replace

            from ego_adr.reasoning.bank_model import bank_setup
            from ego_adr.run.common import pipeline_fields

            bank_fields, bank_arg, bank_name = bank_setup(cfg.bank_model, cfg.model, given_model is not None,
                                                          lambda name: load_vlm(replace(cfg, model=name)))
            pcfg = PipelineConfig(mode=cfg.mode, frames=cfg.frames, match=cfg.match, narration=cfg.narration,
                                  narration_source=cfg.narration_source, seed=cfg.seed, matcher=cfg.matcher,
                                  scoring=cfg.scoring,
                                  **{"bank_builder": cfg.bank_builder, **bank_fields}, **pipeline_fields(cfg))
            needs_model = not (cfg.narration_source == "reference" and cfg.mode == "shallow")  # keywords only
            model = load_vlm(cfg, given_model) if needs_model else None
            pipe = EgoADR(model, pcfg, cache_dir=cfg.resolved_cache_dir(), bank_model=bank_arg)
            # the second half of the folder's identity: what only the loaded model and its probe know
            confirm(out, {"model_fingerprint": model.fingerprint if model else None, "route": pipe.route})
            run_info["identity"] = read_identity(out)
            run_info["pipeline"] = {**pipe.describe(), "bank_model": bank_name}
            run_info["model"] = _model_facts(model)
            runinfo.carry_over(run_info, prev)
            write_json(out / "run.json", run_info)
            t_loop = time.perf_counter()
            _process(pipe, cfg, pending, store, progress, tqdm)
            run_info["processing_s"] = round(time.perf_counter() - t_loop, 3)  # decode + model loop, no scoring
        runinfo.carry_over(run_info, prev)
        wanted = {s.sample_id for s in samples}
        rows = [r for r in store.rows() if r.get("sample_id") in wanted]
    finally:
        store.close()
    metrics = compute_mc_metrics(rows)
    write_metrics_json(metrics, out)
    title, notes = _title_and_notes(cfg, info, run_info, rows, out)
    write_report(metrics, out, title=title, notes=notes)
    failures = summarise(rows)
    stats = model.stats() if model is not None and hasattr(model, "stats") else {}
    this = {"started": started, "finished": datetime.now(timezone.utc).isoformat(), "processed": len(pending),
            "retried": info.get("retried", 0), "model_calls": getattr(model, "model_calls", 0),
            "cache_hits": getattr(model, "cache_hits", 0), "failed_calls": stats.get("failed_calls", 0),
            "retryable_failures": stats.get("retryable_failures", 0)}
    run_info.update({
        "finished": this["finished"],
        "wall_s": round(time.perf_counter() - t_start, 3),
        "n_rows": len(rows),
        "model_calls": this["model_calls"],
        "cache_hits": this["cache_hits"],
        "cache": stats or None,
        "failures": failures,
    })
    runinfo.close_invocation(run_info, prev, this)
    write_json(out / "run.json", run_info)
    return metrics


def _model_facts(model) -> dict | None:
    """What run.json says about the loaded model: id, fingerprint, and (HF backend) family and dtype, which
    decide whether the run can be the public white agent's (:func:`_public_case`)."""
    if model is None:
        return None
    inner = getattr(model, "model", model)
    dtype = getattr(inner, "dtype", None)
    transfer = getattr(inner, "transfer", None)  # the OpenAI backend: how frames travel (models/wire.py)
    return {"id": model.model_id, "fingerprint": model.fingerprint, "family": getattr(inner, "family", None),
            "dtype": str(dtype).removeprefix("torch.") if dtype is not None else None,
            **({"frame_transfer": transfer.describe()} if transfer is not None else {})}


def _title_and_notes(cfg: RunConfig, info: dict, run_info: dict, rows: list[dict], out: Path) -> tuple[str, list[str]]:
    """The report's title and notes (the protocol's, a diagnostic's, the demo model's, failures, a limit, the
    probe's format line, the runtime; one that makes the table not a result leads); also records the protocol
    (and how the run relates to the public white agent) in ``run_info``."""
    from ego_adr.eval.report import runtime_note
    from ego_adr.reasoning.prompts import PROBE_FORMAT_LINE
    from ego_adr.reasoning.protocol import describe, public_agent_record, report_notes
    from ego_adr.run.failures import summarise

    model_free = cfg.narration_source == "reference" and cfg.mode == "shallow"
    label = "no model" if model_free else (cfg.model or "embedded tiny model (random weights)")
    title = f"{label} - {cfg.mode} - {'reference narration' if model_free else f'{cfg.frames} frames'}"
    case, settings = _public_case(cfg, run_info), cfg.protocol_settings
    run_info["protocol"] = {**describe(cfg.protocol, settings), "public_agent": public_agent_record(settings, case)}
    notes = report_notes(cfg.protocol, settings, info.get("sources"), case if not model_free else None)
    if cfg.narration_source == "reference":
        notes.append("Diagnostic, tuned to annotation style, not an upper bound: narration replaced by the "
                     "annotations' reference descriptions, whose wording the shallow vocabularies were written "
                     "against "
                     "(CaptainCook4D errors[].description, EgoOops error_caption, the action text for correct "
                     "samples; never a label field), so only the classification stage is measured.")
    if cfg.matcher != "tfidf":
        from ego_adr.reasoning.embed_matching import matcher_note

        notes.append(matcher_note(cfg.matcher))
    if cfg.scoring != "generate":
        notes.append("Deviation --scoring likelihood: where the method asks the model to pick one of known options "
                     "(the deep classifier's error type, the routing probe's trial answers) every option is scored "
                     "as the start of the model's reply and the most likely is taken; the paper reads what the "
                     "model writes.")
    if cfg.model is None and not model_free:
        notes.append("Demo model has random weights: these numbers only show that the machinery works.")
    failures = summarise(rows)
    if failures["n_infrastructure"]:
        notes.append(f"{failures['n_infrastructure']} of {failures['n_rows']} samples failed on infrastructure "
                     "(model or decoder unreachable / out of memory); they count as failures here and are rerun "
                     "with --retry-failed.")
    from ego_adr.models.wire import transfer_note

    if transfer_note((run_info.get("model") or {}).get("frame_transfer")):
        notes.append(transfer_note(run_info["model"]["frame_transfer"]))
    if info.get("limit_note"):
        notes.append(info["limit_note"] + ".")
    if info.get("frames_note"):
        notes.append(info["frames_note"][0].upper() + info["frames_note"][1:] + ".")
    if cfg.mode == "auto":
        notes.append("The routing probe (Appendix G) asks the paper's question plus one format line of ours: "
                     f"\"{PROBE_FORMAT_LINE}\"")
    decoders = sorted({(r.get("frames_info") or {}).get("backend") for r in rows} - {None})
    notes.append(runtime_note(run_info.get("versions") or {}, decoders))
    if failures["dominant_sample_failure"]:  # the report leads with it: the table measures the mistake
        from ego_adr.run.failures import dominant_line

        notes.insert(0, f"**NOT A RESULT: {dominant_line(failures, out)}.**")
    return title, notes


def _process(pipe, cfg: RunConfig, pending: list[Sample], store, progress: bool, tqdm) -> None:
    bs = cfg.batch_size
    bar = tqdm(total=len(pending), desc=f"ego_adr {pipe.route}", unit="sample", disable=not progress)
    try:
        batch = []
        for item in decoded(cfg, pending, pipe.needs_frames, depth=max(cfg.prefetch, bs)):
            batch.append(item)
            if len(batch) == bs:
                _flush(pipe, batch, store, bar)
                batch = []
        if batch:
            _flush(pipe, batch, store, bar)
    finally:
        bar.close()


def _flush(pipe, batch, store, bar) -> None:
    from ego_adr.run.failures import mark

    t0 = time.perf_counter()
    rows = pipe.process(batch)
    wall = time.perf_counter() - t0
    for row in rows:
        row["timings"]["pipeline_s"] = round(wall / len(rows), 4)
        row["timings"]["model_s"] = round(sum(v for k, v in row["timings"].items() if k.startswith("model_")), 4)
        store.append(mark(row))
    bar.update(len(rows))


def _public_case(cfg: RunConfig, run_info: dict) -> dict:
    """What, beside the protocol settings, decides whether a run's inputs and replies can be the public agent's
    (the keys of :data:`ego_adr.reasoning.protocol.PUBLIC_CASE`)."""
    model = run_info.get("model") or {}
    return {"family": model.get("family"), "frames": cfg.frames, "mode": cfg.mode, "batch_size": cfg.batch_size,
            "backend": cfg.backend, "dtype": (model.get("dtype") or "").removeprefix("torch.") or None,
            "transformers": (run_info.get("versions") or {}).get("transformers")}


def _protocol_tag(cfg: RunConfig) -> str:
    """The folder name's protocol part: the protocol unless the default, each deviation, a bank model other
    than the paper's (Section 5.2), a key-step matcher other than the paper's TF-IDF. The offline demo's short budget is documented (run/cli.py), not a choice."""
    from dataclasses import replace

    from ego_adr.reasoning.protocol import PRESETS, folder_tag

    s = cfg.protocol_settings
    if cfg.model is None:
        s = replace(s, max_new_tokens=PRESETS[cfg.protocol].max_new_tokens)
    tag = folder_tag(cfg.protocol, s)
    if cfg.bank_model and cfg.bank_model != "paper":
        tag += f"-bank={cfg.bank_model.rstrip('/').split('/')[-1].lower()}"
    if cfg.matcher != "tfidf":  # a deviation from the paper's TF-IDF key-step matcher (reasoning/embed_matching.py)
        tag += f"-matcher={cfg.matcher}"
    if cfg.scoring != "generate":  # a deviation: options scored by likelihood, not written (reasoning/config.py)
        tag += f"-scoring={cfg.scoring}"
    return tag


def default_output_dir(cfg: RunConfig) -> Path:
    name = (cfg.model or "tiny-demo").rstrip("/").split("/")[-1].lower()
    tag = f"{name}-{cfg.task}-{cfg.mode}-{cfg.frames}f"
    if not cfg.match:
        tag += "-nomatch"
    if not cfg.narration:
        tag += "-nonarr"
    if cfg.narration_source != "model":
        tag += f"-{cfg.narration_source}"
    tag += _protocol_tag(cfg)
    return Path("runs") / (tag + data_tag(cfg))


def data_tag(cfg: RunConfig) -> str:
    """What data a default folder holds, so that two data roots (or a subset of one) never meet in one folder
    (issue 38 point 10): ``-demo`` for the embedded set, else the data root's folder name, then ``-limitN`` and
    ``-s<sources>`` when they narrow it. The folder's identity still decides whether a run resumes."""
    import re

    name = "demo" if cfg.data_root is None else Path(cfg.data_root).expanduser().resolve().name
    tag = "-" + (re.sub(r"[^A-Za-z0-9_.+]+", "_", name).strip("._") or "data")
    if cfg.limit is not None:
        tag += f"-limit{cfg.limit}"
    if cfg.sources:
        tag += "-s" + "+".join(sorted(cfg.sources))
    return tag


def execute(cfg: RunConfig, progress: bool = True, model=None, fresh: bool = False,
            retry_failed: bool = False) -> tuple[Path, dict]:
    """Validate, lock and claim the output folder, load the data, run, score.

    ``model``: a VLM to use instead of loading ``cfg.model``. ``fresh``: discard the folder's results first (the
    way out of an identity mismatch). ``retry_failed``: rerun the rows whose failure was infrastructure.
    Raises :class:`ConfigError` for a user mistake (before any work), :class:`ProbeUnreachable` when the routing
    probe cannot reach the model (nothing is recorded or cached).
    """
    from ego_adr.run.checks import check_model_name, check_writable_dir
    from ego_adr.run.failures import drop_retryable
    from ego_adr.run.identity import RUN_KIND, FolderLock, claim, run_identity

    cfg = cfg.validate()
    if model is None:
        check_model_name(cfg.model, cfg.backend)
    out = Path(cfg.output_dir) if cfg.output_dir else default_output_dir(cfg)
    if not cfg.output_dir:
        check_writable_dir(out, "the default output folder (choose another with --out)")
    with cache_scope(cfg):
        samples, info = load_dataset(cfg)
        from ego_adr.reasoning.protocol import apply_to_samples

        samples = apply_to_samples(samples, cfg.protocol_settings)  # the window and step text the protocol reads
        if info.get("limit_note"):
            logging.getLogger(__name__).warning("%s", info["limit_note"])
        from ego_adr.run.checks import frames_note

        info["frames_note"] = frames_note(cfg)
        if info["frames_note"]:
            logging.getLogger(__name__).warning("note: %s", info["frames_note"])
        if not samples:
            raise ConfigError(f"no samples to run (sources {info['sources']} under {info['data_root']})")
        with FolderLock(out):
            claim(out, run_identity(cfg, samples, info), fresh=fresh, kind=RUN_KIND)
            if cfg.task == "open-end":
                from ego_adr.run.open_end import drop_retryable_open_end

                info["retried"] = drop_retryable_open_end(out) if retry_failed else 0
            else:
                info["retried"] = drop_retryable(out / "predictions.jsonl") if retry_failed else 0
            if retry_failed and not info["retried"]:  # never silent (issue 18)
                logging.getLogger(__name__).warning("--retry-failed: no row of %s failed on infrastructure; "
                                                    "nothing to retry", out)
            if cfg.task == "open-end":
                from ego_adr.run.open_end import run_open_end

                metrics = run_open_end(cfg, out, samples, info, progress=progress, model=model)
            else:
                metrics = run_multiple_choice(cfg, out, samples, info, progress=progress, model=model)
            from ego_adr.eval.browser import write_run_report_html

            write_run_report_html(out)  # report.html, the evidence browser of the folder (issue 21)
            return out, metrics
