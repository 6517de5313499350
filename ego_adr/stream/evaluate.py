"""``python -m ego_adr.stream --evaluate``: every annotated recording streamed through Ego-ADR online and the
baselines, scored with M1-M4, detection delay and the real-time factor (:mod:`ego_adr.stream.metrics`).

Output folder ``runs/stream-eval-<model>-<route>-<settings>-<sources>[-limitN]/``: ``outputs/<monitor>.jsonl``
(one row per recording: ticks, end check, alerts, timings), ``ticks/<monitor>/<recording>.jsonl`` (the resumable
tick logs), ``timelines/<recording>.html`` (the Ego-ADR monitor's timeline against the annotated segments),
``metrics.json``, ``report.md``, ``run.json``. A rerun skips finished recordings and resumes the one
in progress.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def select(episodes: list[dict], limit: int | None) -> list[dict]:
    if not limit:
        return episodes
    per: dict[str, int] = {}
    out = []
    for e in episodes:
        if per.get(e["source"], 0) < limit:
            per[e["source"]] = per.get(e["source"], 0) + 1
            out.append(e)
    return out


def _compact(res: dict, ep: dict) -> dict:
    """One output row: what the metrics and the timeline need. Per tick: ``match_method`` and ``reached`` (a
    confident match that counts as reaching the step, not a difflib fallback); the end check's
    ``reached_steps`` / ``unseen_steps`` (0-based bank indices); the recording's ``annotation`` coverage and its
    omitted steps with their expected times (``omissions``: ``expected_start``, ``due``; ``None`` when unknown)."""
    keep = ("t", "window", "prob", "error_type", "step_index", "failure", "seconds", "match_method", "reached")
    ev = res["end"].get("evidence") or {}
    return {"id": res["episode_id"], "duration": res["duration"], "processing_s": res["processing_s"],
            "ticks": [{k: t.get(k) for k in keep} for t in res["ticks"]],
            "end": {**{k: res["end"].get(k) for k in ("t", "prob", "error_type", "step_index")},
                    **{k: ev[k] for k in ("reached_steps", "unseen_steps") if k in ev}},
            "alerts": res["alerts"], "annotation": ep.get("annotation", "partial"),
            "omissions": ep.get("omissions") or [], "failure": None}


def _timeline(monitor, ep: dict, res: dict, path: Path) -> None:
    from ego_adr.stream.timeline_html import write_html

    match = monitor.pipe.matcher(monitor.bank).match
    segs = [{**s, "step_index": match(s["action"] or "").index} for s in ep["segments"]]
    write_html(res, monitor.bank.texts, path, segs, monitor.threshold, f" -- {ep['id']}", ep.get("end_labels"))


def evaluate_monitor(monitor, episodes: list[dict], settings, sampler, out: Path, progress: bool = True,
                     reference: bool = False) -> list[dict]:
    """Stream every episode through ``monitor`` (resuming from ``out``); one output row per episode."""
    from tqdm import tqdm

    from ego_adr.stream.runner import reference_narrator, repair_log, stream_recording
    from ego_adr.video.sampler import VideoError

    rows_path = out / "outputs" / f"{monitor.name}.jsonl"
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    done = {r["id"]: r for r in repair_log(rows_path)}
    logs = out / "ticks" / monitor.name
    logs.mkdir(parents=True, exist_ok=True)
    with rows_path.open("a") as f:
        for ep in tqdm(episodes, desc=f"monitor {monitor.name}", disable=not progress):
            if ep["id"] in done:
                continue
            if not ep.get("video_path"):
                row = {"id": ep["id"], "failure": "video: no video path (pass --video-root)"}
            else:
                try:
                    res = stream_recording(monitor, ep["video_path"], ep["task_id"], ep["procedure"], settings,
                                           sampler, ep["id"], logs / f"{_safe(ep['id'])}.jsonl",
                                           narrate_from=reference_narrator(ep["segments"]) if reference else None)
                    row = _compact(res, ep)
                    if monitor.name == "egoadr":  # an inspectable page per recording (cheap: no plotting)
                        _timeline(monitor, ep, res, out / "timelines" / f"{_safe(ep['id'])}.html")
                except VideoError as e:
                    row = {"id": ep["id"], "failure": f"video: {e.reason}"}
            f.write(json.dumps(row, default=str) + "\n")
            f.flush()
            done[ep["id"]] = row
    return [done[ep["id"]] for ep in episodes]


def _episodes(args) -> tuple[list[dict], str, list[str]]:
    from ego_adr.stream.common import UserError
    from ego_adr.stream.episodes import demo_episodes, load_episodes

    if args.data_root is None:
        return demo_episodes(args.cache_dir), "embedded synthetic recordings", ["demo"]
    if not Path(args.data_root).is_dir():
        raise UserError(f"--data-root {args.data_root} is not a folder (see README: the EgoErrorVQA annotations)")
    if not args.video_root or not Path(args.video_root).is_dir():
        raise UserError("--evaluate with --data-root needs --video-root (a folder with the recordings at the "
                        "public paths; stand-ins: python scripts/make_test_videos.py --data-root D --video-root V)")
    sources = args.sources.split(",") if args.sources else ["captaincook4d", "epic_tent", "assembly101", "egooops"]
    try:
        return load_episodes(args.data_root, args.video_root, sources), "EgoErrorVQA annotations", sources
    except ValueError as e:
        raise UserError(str(e)) from None


def _notes(args, episodes: list[dict], settings, tolerance: float, stats: dict) -> list[str]:
    n_seg = sum(len(e["segments"]) for e in episodes)
    n_full = sum(e.get("annotation") == "full" for e in episodes)
    notes = [f"{len(episodes)} recordings, {n_seg} annotated segments; {n_full} fully annotated (every step), "
             f"{len(episodes) - n_full} partially (time between segments unlabelled; a 'correct' one only has "
             "correct annotated segments).",
             "M1 AUROC per step (a recording's score = its highest step probability, HelpMeOut's definition; "
             "steps = annotated segments + the task-end step); 0.5 and M2 AUPRC = the positive rate are what a "
             "monitor without information scores.",
             "M3 over recordings whose first error is due before the end; an end-of-recording alarm counts only "
             "for an omission (on a correct recording it is a false alarm); delay = first counted alarm - the "
             "error's onset. PoE = point-of-error precision / recall / F1 of the mistake steps (PREGO); "
             "'PREGO cut' keeps only the steps up to each recording's first error, as PREGO's benchmarks do.",
             f"Real-time factor = processing seconds / recording seconds (stage-cache hits cost ~0 s); "
             f"window {settings.window:g} s, stride {settings.stride:g} s (plus a last tick at the end), "
             f"{settings.frames} frames, threshold {args.threshold:g}, on-target tolerance {tolerance:g} s."]
    if stats.get("model_calls") or stats.get("cache_hits"):
        notes.append(f"This run made {stats.get('model_calls', 0)} model calls and answered "
                     f"{stats.get('cache_hits', 0)} from the stage cache (earlier runs, or identical windows: "
                     "stand-in videos repeat their frames across recordings), so its real-time factor is a lower "
                     "bound; scripts/bench_stream.py measures it without the cache.")
    if args.narration_source == "reference":
        notes.append("Diagnostic: the egoadr row narrates each window from the annotations (reference narration); "
                     "the baselines watch the video.")
    if args.model is None or args.model.startswith("tiny"):
        notes.append("The tiny model has random weights: its numbers only show that the machinery works.")
    return notes


def _report(results: dict, notes: list[str]) -> tuple[str, str]:
    from ego_adr.stream.metrics import metrics_table

    table = metrics_table({n: r["all"] for n, r in results.items()})
    full = {n: r["fully_annotated"] for n, r in results.items() if r["fully_annotated"]}
    if full and any(f["episodes"] != results[n]["all"]["episodes"] for n, f in full.items()):
        table += "\n\nFully annotated recordings only:\n\n" + metrics_table(full)
    return table, "# Ego-ADR online: streaming evaluation\n\n" + table + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n"


def run_evaluation(args) -> int:
    from ego_adr.store import write_json
    from ego_adr.stream.common import (
        UserError,
        check_identity,
        load_pipeline,
        model_label,
        narration_tag,
    )
    from ego_adr.stream.metrics import scored_subsets
    from ego_adr.stream.registry import BASELINES, REGISTRY, build_monitors
    from ego_adr.stream.runner import StreamSettings
    from ego_adr.video.sampler import FrameSampler

    names = ["egoadr"] + [b.strip() for b in (args.baselines or "").split(",") if b.strip() and b.strip() != "none"]
    bad = [n for n in names if n not in REGISTRY]
    if bad:
        raise UserError(f"--baselines: unknown {bad}; choose from {', '.join(BASELINES)} (or none)")
    episodes, origin, sources = _episodes(args)
    episodes = select(episodes, args.limit)
    settings = StreamSettings(args.window, args.stride, args.frames)
    tolerance = args.tolerance if args.tolerance is not None else args.window
    pipe, model, mnt = load_pipeline(args)
    tag = "-".join(sources) if len(sources) < 4 else "all4"
    out = Path(args.out or f"runs/stream-eval-{model_label(args)}-{pipe.route}-{settings.tag()}{narration_tag(args)}"
                           f"-{tag}" + (f"-limit{args.limit}" if args.limit else ""))
    identity = {"data": origin, "data_root": args.data_root, "video_root": args.video_root, "sources": sources,
                "limit": args.limit, "settings": settings.__dict__, "model": model.fingerprint, "route": pipe.route,
                "threshold": args.threshold, "max_new_tokens": mnt, "seed": args.seed, "tolerance_s": tolerance,
                "narration_source": args.narration_source}
    check_identity(out, identity, fresh=args.fresh)
    print(f"{len(episodes)} recordings ({origin}: {', '.join(sources)}), {settings.tag()}, "
          f"model {model.model_id} [{pipe.route}], monitors {', '.join(names)}", flush=True)
    monitors = build_monitors(names, pipe, args.threshold, args.seed)
    results, wall = {}, {}
    with FrameSampler(max_open=2) as sampler:
        for name, mon in monitors.items():
            t0 = time.perf_counter()
            rows = evaluate_monitor(mon, episodes, settings, sampler, out, progress=not args.quiet,
                                    reference=args.narration_source == "reference" and name == "egoadr")
            wall[name] = round(time.perf_counter() - t0, 2)
            results[name] = scored_subsets(episodes, rows, tolerance)
    notes = _notes(args, episodes, settings, tolerance, getattr(model, "stats", dict)())
    table, report = _report(results, notes)
    (out / "report.md").write_text(report)
    write_json(out / "metrics.json", results)
    write_json(out / "run.json", {**identity, "monitors": {n: m.describe() for n, m in monitors.items()},
                                   "pipeline": pipe.describe(), "wall_s": wall,
                                   "cache": getattr(model, "stats", dict)()})
    print(table)
    print("\n".join(notes))
    print(f"results in {out}/ (metrics.json, report.md, outputs/, ticks/, timelines/, run.json)")
    return 0
