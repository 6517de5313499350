"""``python -m ego_adr.stream``: Ego-ADR online over a whole recording.

With no arguments: the embedded synthetic recording (make tea: a wrong object at step 5, step 6 never done)
and the embedded tiny model (random weights, offline). Alerts are printed as they happen and written with the
timeline to ``runs/stream-.../`` (alerts.jsonl, ticks.jsonl, timeline.png, timeline.html, run.json).

    python -m ego_adr.stream --video REC.mp4 --procedure "First ... then ..." [--model M] [--window 8s --stride 4s --frames 8]

A rerun into the same folder resumes where a killed run stopped (finished ticks are replayed, not recomputed);
other settings refuse in one line naming each setting that differs (``--fresh`` discards the folder's results),
before the model is loaded when ``--out`` names the folder. Scoring every annotated recording is
``python -m ego_adr.monitoring evaluate --benchmark egoadr-stream`` (``--evaluate`` here still runs it, and says so).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

from ego_adr.errors import OneLineParser
from ego_adr.folders import add_fresh_argument, add_out_argument
from ego_adr.models.arguments import add_model_arguments
from ego_adr.reasoning.modes import MODES
from ego_adr.reasoning.pipeline import NARRATION_SOURCES
from ego_adr.store import write_json
from ego_adr.stream.common import (
    PipelineChoice,
    UserError,
    check_identity,
    late_keys,
    load_pipeline,
    seconds,
)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m ego_adr.stream", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument
    a("--video", help="the recording to watch (default: the embedded synthetic recording)")
    a("--procedure", help="procedure text, or a task_id of --data-root's procedure.json, or a .txt file")
    a("--task-id", help="name of the task (default: from --procedure or the file name)")
    add_model_arguments(p, model_default_text="the embedded tiny model, random weights")
    a("--mode", default="auto", choices=[m for m, spec in MODES.items() if not spec.one_pass],
          help="Ego-ADR route: auto = the text-only probe decides (Section 5.1)")
    a("--window", type=seconds, default=8.0, help="seconds of video per observation (default 8s)")
    a("--stride", type=seconds, default=4.0, help="seconds between observations (default 4s)")
    a("--frames", type=int, default=8, help="frames per window (default 8)")
    a("--threshold", type=float, default=0.5, help="alert when P(error) reaches this (default 0.5)")
    a("--narration-source", default="model", choices=NARRATION_SOURCES.names(),
      help="reference: a diagnostic that narrates each window from the annotations (annotated recordings only)")
    a("--max-new-tokens", type=int, help="default 256 (Appendix C); 64 for the tiny models (random weights)")
    add_out_argument(p, "output folder (default runs/stream-<model>-<mode>-<settings>-<recording>)")
    add_fresh_argument(p, "ticks, alerts, timelines, run.json, identity.json")
    a("--cache-dir", help="stage cache, probe results, demo recordings (default ~/.cache/ego_adr)")
    a("--no-cache", action="store_true", help="do not reuse model outputs from the stage cache")
    a("--quiet", action="store_true", help="do not print alerts")
    a("--data-root", help="a data root whose procedure.json names --procedure's task_id")
    return p


def _procedure(args) -> tuple[str, str]:
    text = args.procedure
    if text is None:
        raise UserError("--video needs --procedure (the task's procedure text, a .txt file, or a task_id of "
                        "--data-root's procedure.json)")
    if args.data_root and (Path(args.data_root) / "procedure.json").is_file():
        procs = json.loads((Path(args.data_root) / "procedure.json").read_text())
        if text in procs:
            return args.task_id or text, procs[text]
    from ego_adr.check.core import read_procedure  # the rule `check` uses: a file path, or the text itself

    procedure = read_procedure(text)  # an empty, binary, unreadable or missing file: one line, exit 2
    p = Path(text).expanduser()
    from_file = len(text) < 4096 and p.is_file()
    return args.task_id or (p.stem if from_file else Path(args.video).stem), procedure


def run_one(args) -> int:
    from ego_adr.stream.runner import StreamSettings

    segments, end_labels = None, None
    if args.video is None:
        from ego_adr.stream.episodes import demo_episode

        ep = demo_episode(args.cache_dir)
        video, task_id, procedure = ep["video_path"], ep["task_id"], ep["procedure"]
        segments, end_labels = ep["segments"], ep.get("end_labels")
    else:
        if not Path(args.video).is_file():
            raise UserError(f"--video {args.video}: no such file")
        video = args.video
        task_id, procedure = _procedure(args)
    reference = args.narration_source == "reference"
    if reference and segments is None:
        raise UserError("--narration-source reference needs annotated segments: leave out --video (the embedded "
                        "recording) or score annotated recordings with `python -m ego_adr.monitoring evaluate "
                        "--benchmark egoadr-stream --data-root DIR`")
    settings = StreamSettings(args.window, args.stride, args.frames)
    choice = pipeline_choice(args)
    early = {"video": str(Path(video).resolve()), "task_id": task_id, "procedure": procedure,
             "settings": settings.__dict__, "threshold": args.threshold, "max_new_tokens": choice.tokens,
             "narration_source": args.narration_source}
    from ego_adr.monitoring.harness import confirm_late
    from ego_adr.stream.common import folder_lock

    with contextlib.ExitStack() as held:
        if args.out:  # the folder is named: its identity is checked before the model is loaded (issue 46 item 6)
            out = Path(args.out)
            held.enter_context(folder_lock(out))
            check_identity(out, early, fresh=args.fresh)
        pipe, model, _ = load_pipeline(choice)
        late = late_keys(pipe, model)
        at = list(early).index("settings") + 1
        identity = {k: (early | late)[k] for k in [*list(early)[:at], *late, *list(early)[at:]]}
        if not args.out:  # the default folder's name holds the route the probe chose
            out = Path(f"runs/stream-{choice.label}-{pipe.route}-{settings.tag()}{choice.narration_tag}"
                       f"-{Path(video).stem}")
            held.enter_context(folder_lock(out))
            check_identity(out, identity, fresh=args.fresh)
        else:
            confirm_late(out, early, late, identity)
            write_json(out / "run.json", identity)
        return _watch(args, out, identity, pipe, model, video, task_id, procedure, settings, segments, reference,
                      end_labels)


def pipeline_choice(args: argparse.Namespace) -> PipelineChoice:
    """The model and route the command line asked for, as the typed choice ``load_pipeline`` takes."""
    return PipelineChoice(args.model, args.backend, args.device, args.base_url, args.cache_dir, not args.no_cache,
                          args.mode, args.frames, args.max_new_tokens, args.narration_source)


def _watch(args, out, identity, pipe, model, video, task_id, procedure, settings, segments, reference,
           end_labels) -> int:
    from ego_adr.reasoning.online import OnlineMonitor
    from ego_adr.stream.runner import format_alert, reference_narrator, stream_recording
    from ego_adr.stream.timeline import write_png
    from ego_adr.stream.timeline_html import write_html
    from ego_adr.video.sampler import FrameSampler, VideoError

    monitor = OnlineMonitor(pipe, args.threshold)
    if segments is not None:
        monitor.reset(task_id, procedure)
        segments = [{**s, "step_index": monitor.pipe.matcher(monitor.bank).match(s["action"]).index}
                    for s in segments]
    printed: list[dict] = []  # alerts shown live: a resumed run's recap shows only the others (issue 18)

    def printer(a) -> None:
        printed.append(a.to_dict())
        print(format_alert(a), flush=True)

    printer = None if args.quiet else printer
    print(f"watching {video} ({task_id}) with {model.model_id} [{pipe.route}], {settings.tag()}", flush=True)
    with FrameSampler() as sampler:
        try:
            res = stream_recording(monitor, video, task_id, procedure, settings, sampler, Path(video).stem,
                                   out / "ticks.jsonl", out / "alerts.jsonl", on_alert=printer,
                                   narrate_from=reference_narrator(segments) if reference else None)
        except VideoError as e:
            raise UserError(f"cannot read {video}: {e.reason}") from None
    steps = monitor.bank.texts
    note = ", reference narration (diagnostic)" if reference else ""
    res["model"] = model.model_id  # the timeline's title names it
    write_png(res, steps, out / "timeline.png", segments, args.threshold, note, end_labels)
    write_html(res, steps, out / "timeline.html", segments, args.threshold, note, end_labels)
    write_json(out / "run.json", {**identity, "monitor": monitor.describe(), "pipeline": pipe.describe(),
                                   "duration_s": res["duration"], "processing_s": res["processing_s"],
                                   "real_time_factor": res["rtf"], "n_ticks": len(res["ticks"]),
                                   "n_alerts": len(res["alerts"]), "cache": getattr(model, "stats", dict)()})
    replayed = sum(1 for t in res["ticks"] if t.get("replayed"))
    if replayed:
        earlier = [a for a in res["alerts"] if a not in printed]
        print(f"(resumed: {replayed} ticks replayed from {out / 'ticks.jsonl'}; {len(earlier)} alert(s) from before "
              "the resume:)")
        if not args.quiet:
            from ego_adr.reasoning.online import Alert

            for a in earlier:
                print(format_alert(Alert(**a)))
    print(f"{len(res['alerts'])} alert(s) over {res['duration']:.1f} s of video; processing {res['processing_s']:.1f} s"
          f" (real-time factor {res['rtf']:.2f})")
    if reference:
        print("Diagnostic: narrations came from the annotations (--narration-source reference), not the model.")
    elif args.model is None:
        print("The embedded model has random weights: its alerts only show that the machinery works.")
    print(f"results in {out}/ (alerts.jsonl, ticks.jsonl, timeline.png, timeline.html, run.json)")
    return 0


def evaluate_alias(argv: list[str]) -> int:
    """``--evaluate`` (and ``--baselines a,b``, which always added ``egoadr``) as the one monitoring command."""
    rest, monitors, k = [], "all", 0
    while k < len(argv):
        tok = argv[k]
        if tok == "--baselines" or tok.startswith("--baselines="):
            value = tok.partition("=")[2] if "=" in tok else (argv[k + 1] if k + 1 < len(argv) else "")
            k += 1 if "=" in tok else 2
            named = [b.strip() for b in value.split(",") if b.strip() and b.strip() != "none"]
            monitors = ",".join(["egoadr", *named])
            continue
        if tok != "--evaluate":
            rest.append(tok)
        k += 1
    from ego_adr.monitoring.cli import alias

    return alias("python -m ego_adr.stream --evaluate",
                 ["evaluate", "--benchmark", "egoadr-stream", "--monitor", monitors, *rest])


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    argv = list(sys.argv[1:] if argv is None else argv)
    if "--evaluate" in argv:
        return evaluate_alias(argv)

    def go() -> int:
        args = build_parser().parse_args(argv)
        if args.frames < 1:
            raise UserError("--frames must be >= 1")
        if not 0.0 < args.threshold <= 1.0:
            raise UserError("--threshold must be in (0, 1]")
        from ego_adr.models.arguments import check_model_arguments
        from ego_adr.store import check_writable_dir

        # before a model load, not torch's device list after it (the model name: the load says what is wrong)
        check_model_arguments(args, model=False)
        if args.cache_dir:
            check_writable_dir(args.cache_dir, "--cache-dir")
        if args.out:  # before the model is loaded (the default folder's name needs the route)
            check_writable_dir(args.out, "--out")
        return run_one(args)

    return run_cli(go, interrupted="interrupted: rerun the same command to resume",
                   user_errors=(FileNotFoundError,))


if __name__ == "__main__":
    sys.exit(main())
