"""Generate stand-in videos at the public layout paths of real annotation samples (no real video needed).

Each distinct video of the selected samples gets a small generated H.264 file (1 fps, 160x120 by default) long
enough to cover every window annotated on it, so the whole pipeline can be exercised on the real annotations:

    python scripts/make_test_videos.py --data-root ../shared/egoerrorvqa --video-root /tmp/v --limit 40
    python -m ego_adr.run --model tiny --data-root ../shared/egoerrorvqa --video-root /tmp/v --limit 40

The selection (sources, --limit spread over the sources) is the runner's own, so the two commands agree.
With ``--whole-recordings`` the limit counts recordings per source instead (the streaming evaluation's
selection, ``python -m ego_adr.monitoring evaluate --benchmark egoadr-stream --limit N``) and each video covers
every segment annotated on it.
"""

import argparse

from ego_adr.run.config import RunConfig
from ego_adr.run.runner import load_dataset
from ego_adr.video.synth import make_public_layout_videos


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", required=True)
    p.add_argument("--video-root", required=True)
    p.add_argument("--sources", help="comma-separated (default: all four)")
    p.add_argument("--limit", type=int)
    p.add_argument("--task", default="multiple-choice", choices=["multiple-choice", "open-end"])
    p.add_argument("--fps", type=float, default=1.0)
    p.add_argument("--whole-recordings", action="store_true",
                   help="--limit counts recordings per source (as monitoring evaluate --benchmark egoadr-stream does)")
    args = p.parse_args()
    import os

    os.makedirs(args.video_root, exist_ok=True)
    cfg = RunConfig(data_root=args.data_root, video_root=args.video_root,
                    limit=None if args.whole_recordings else args.limit, task=args.task,
                    sources=args.sources.split(",") if args.sources else None).validate()
    samples, _ = load_dataset(cfg)
    if args.whole_recordings:
        from ego_adr.stream.episodes import build_episodes, episode_key
        from ego_adr.stream.evaluate import select

        keep = {(e["source"], e["task_id"], e["video_id"]) for e in select(build_episodes(samples), args.limit)}
        samples = [s for s in samples if episode_key(s) in keep]
    made = make_public_layout_videos(samples, args.video_root, fps=args.fps)
    print(f"{len(made)} videos for {len(samples)} samples under {args.video_root}")


if __name__ == "__main__":
    main()
