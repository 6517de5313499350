"""``python -m ego_adr.check --video V --procedure P --step S [--start S --end E] [--model M] [--json]``.

Prints, per clip, the verdict (an error type or ``correct``), the procedure step it was matched to with the match
score, the model's narration, the classifier's evidence, what was sampled and the timings; ``--json`` prints the
same as one JSON document. ``--clips F`` (CSV with a header, or JSONL; fields video, procedure, step, start, end,
name) checks several clips with one model load. The default model is the embedded tiny one: offline, random
weights, so its verdicts only show the machinery; name a real one with ``--model``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ego_adr.check.core import (
    DEMO_TOKENS,
    PAPER_TOKENS,
    CheckError,
    Clip,
    read_clips,
    read_procedure,
    validate_window,
)
from ego_adr.errors import OneLineParser
from ego_adr.models.arguments import add_model_arguments


def parser() -> argparse.ArgumentParser:
    from ego_adr.reasoning.pipeline import MODES

    p = OneLineParser(prog="python -m ego_adr.check", description=__doc__.split("\n\n")[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    a = p.add_argument
    a("--video", help="the clip (any file FFmpeg/OpenCV reads)")
    a("--procedure", help="the task's procedure: a text file, or the text itself")
    a("--step", help="what should happen in the clip (the step); without it the step is matched from the narration")
    a("--start", type=float, help="window start in seconds (with --end; both absent: the whole video)")
    a("--end", type=float, help="window end in seconds")
    a("--clips", help="CSV/JSONL of clips (video, procedure, step, start, end, name) instead of --video")
    add_model_arguments(p, model_default_text="the embedded tiny model, random weights, offline")
    a("--mode", choices=MODES, default="auto", help="auto routes by the text-only probe (default: auto)")
    a("--frames", type=int, default=8, help="frames sampled from the window (default: 8, as Ego-ADR in the paper)")
    a("--max-new-tokens", type=int, help=f"per model call (default: {PAPER_TOKENS}; {DEMO_TOKENS} for the tiny model)")
    a("--cache-dir", help="stage cache, probe and procedure banks (default: the ego_adr cache folder)")
    a("--json", action="store_true", help="print one JSON document instead of the readable report")
    return p


def clips_from(args) -> list[Clip]:
    if args.clips:
        if args.video:
            raise CheckError("give either --video or --clips, not both")
        return read_clips(args.clips, args.procedure, args.step)
    if not args.video:
        raise CheckError("name a clip: --video my.mp4 --procedure procedure.txt --step \"what should happen\"")
    if not args.procedure:
        raise CheckError("--procedure is required: a text file or the procedure text")
    validate_window(args.start, args.end)
    from pathlib import Path

    if not Path(args.video).expanduser().is_file():
        raise CheckError(f"video {args.video} not found")
    return [Clip(str(Path(args.video).expanduser()), read_procedure(args.procedure), args.step, args.start, args.end)]


def _short(text, n: int = 600) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


SUMMARY_SHOWN = 3  # clips without a verdict named in the summary line


def summary_line(results: list[dict]) -> str:
    """The last line: how many clips, how many without a verdict, and which ones and why (issue 28, item 9: "1
    without a verdict" left the user to search the output for it)."""
    failed = [(i, r) for i, r in enumerate(results, 1) if r["failure"]]
    line = f"{len(results)} clip(s), {len(failed)} without a verdict"
    if not failed:
        return line

    def label(i: int, r: dict) -> str:
        w = r["window"]
        where = "" if w == [None, None] else f" {w[0]:g}-{w[1]:g} s"
        return f"#{i} {r.get('name') or Path(r['video']).name}{where}"

    shown = "; ".join(f"{label(i, r)}: {_short(r['failure'], 160)}" for i, r in failed[:SUMMARY_SHOWN])
    more = f"; {len(failed) - SUMMARY_SHOWN} more above" if len(failed) > SUMMARY_SHOWN else ""
    return f"{line}: {shown}{more}"


def render(result: dict) -> str:
    w = result["window"]
    window = "whole video" if w == [None, None] else f"{w[0]:g}-{w[1]:g} s"
    lines = [f"clip: {result['video']} ({window})"]
    if result["failure"]:
        lines.append(f"  verdict: none -- {result['failure']}")
    else:
        lines.append(f"  verdict: {result['verdict']}   (route {result['route']}, mode {result['mode']})")
    lines.append(f"  step given: {result['step'] or '(none: matched from the narration)'}")
    m = result["matched_step"]
    if m:
        lines.append(f"  matched step: #{m['number']} {m['text']!r} (score {m['score']:.2f}, {m['method']})")
    if result["narration"]:
        lines.append(f"  narration: {_short(result['narration'])}")
    ev = result["evidence"]
    if ev.get("method"):
        items = "; ".join(_short(e, 120) for e in ev["items"]) or "none"
        lines.append(f"  evidence ({ev['method']}): {items}")
    if result["raw"] and result["route"] not in ("shallow",):
        lines.append(f"  model answer: {_short(result['raw'], 300)}")
    f = result["frames"]
    if f:
        lines.append(f"  frames: {len(f.get('indices', []))} from {f['window'][0]:.2f}-{f['window'][1]:.2f} s "
                     f"({f.get('policy')}, {f.get('backend')})" + "".join(f"; {n}" for n in f.get("notes", [])))
    t = result["timings"]
    parts = [f"{k.removesuffix('_s')} {v:.2f}s" for k, v in t.items() if k.endswith("_s") and k != "total_s"]
    lines.append(f"  timings: {', '.join(parts)}; total {t.get('total_s', 0):.2f}s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli

    return run_cli(lambda: _check(argv), interrupted="interrupted", user_errors=(FileNotFoundError,))


def _readable(clips: list[Clip]) -> None:
    """Open each clip's video before the model is loaded (issue 18): when none can be read, say why in one line
    instead of loading a model to report no verdicts. A single unreadable clip among others is that clip's
    failure, reported with the rest."""
    from ego_adr.video.sampler import FrameSampler, VideoError

    reasons = []
    with FrameSampler() as sampler:
        for c in clips:
            try:
                sampler.reader(c.video)
            except VideoError as e:
                reasons.append(f"{c.video}: {e.reason}")
    if clips and len(reasons) == len(clips):
        raise CheckError(f"cannot read the video {reasons[0]}" if len(clips) == 1 else
                         f"none of the {len(clips)} videos can be read (first: {reasons[0]})")


def _check(argv) -> int:
    """Exit 0 when at least one clip got a verdict; 3 when every clip failed on infrastructure (a server down);
    2 when every clip failed on its input (an unreadable video): a report of no verdicts is not a success."""
    from ego_adr.errors import InfrastructureError
    from ego_adr.models.arguments import check_model_arguments, model_name
    from ego_adr.reasoning.probe import ProbeUnreachable
    from ego_adr.store import check_writable_dir

    args = parser().parse_args(argv)
    clips = clips_from(args)
    if args.frames < 1:
        raise CheckError("--frames must be >= 1")
    check_model_arguments(args)
    if args.cache_dir:
        check_writable_dir(args.cache_dir, "--cache-dir")
    _readable(clips)  # every mistake above and this before the model is loaded
    from ego_adr.check.core import check_clips, load_model

    model, cache_dir = load_model(model_name(args), args.device, args.backend, args.frames, args.cache_dir,
                                  base_url=args.base_url)
    tokens = args.max_new_tokens or (DEMO_TOKENS if model_name(args) is None else PAPER_TOKENS)
    info: dict = {}
    try:
        results = check_clips(clips, model, mode=args.mode, frames=args.frames, max_new_tokens=tokens,
                              cache_dir=cache_dir, info=info)
    except ProbeUnreachable as e:  # nothing cached
        raise InfrastructureError(f"{e}; start the model server (or check --base-url) and rerun") from None
    label = model_name(args) or "embedded tiny model (random weights: verdicts only show the machinery)"
    if args.json:
        print(json.dumps({"model": label, "fingerprint": getattr(model, "fingerprint", None), **info,
                          "clips": results}, indent=1, ensure_ascii=False, default=str))
    else:
        print(f"model: {label}; route: {info.get('route')}\n")
        print("\n\n".join(render(r) for r in results))
    failed = [r for r in results if r["failure"]]
    if not args.json and (len(results) > 1 or failed):
        print("\n" + summary_line(results))
    if results and len(failed) == len(results):
        from ego_adr.models.base import INFRASTRUCTURE, error_kind

        infra = all(error_kind(str(r["failure"])) == INFRASTRUCTURE for r in failed)
        print(f"error: no clip got a verdict ({_short(failed[0]['failure'], 200)})", file=sys.stderr)
        return 3 if infra else 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
