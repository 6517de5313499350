"""Real-time factor of Ego-ADR online on the embedded synthetic recording, split into decoding and the rest.

    python scripts/bench_stream.py [--frames 8 16] [--stride 4] [--window 8] [--max-new-tokens 64] [--model tiny]

Every model call is made (no stage cache), one window at a time as a live monitor would. Prints a Markdown
table: frames, ticks, decode s, model + matching s, total s, recording s, real-time factor (total / recording).
"""

import argparse


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frames", type=int, nargs="+", default=[8, 16])
    p.add_argument("--stride", type=float, default=4.0)
    p.add_argument("--window", type=float, default=8.0)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--model", default="tiny")
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    from ego_adr.models import load_model
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
    from ego_adr.reasoning.stream import StreamMonitor
    from ego_adr.stream.episodes import demo_episode
    from ego_adr.stream.runner import StreamSettings, stream_recording
    from ego_adr.video.sampler import FrameSampler

    ep = demo_episode()
    model = load_model(args.model, device=args.device)
    print("| frames | ticks | decode s | model + matching s | total s | recording s | real-time factor |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in args.frames:
        pipe = EgoADR(model, PipelineConfig(mode="shallow", frames=n, max_new_tokens=args.max_new_tokens))
        with FrameSampler() as sampler:
            res = stream_recording(StreamMonitor(pipe), ep["video_path"], ep["task_id"], ep["procedure"],
                                   StreamSettings(args.window, args.stride, n), sampler, ep["id"])
        dec = sum(t["decode_s"] for t in res["ticks"])
        tot = res["processing_s"]
        print(f"| {n} | {len(res['ticks'])} | {dec:.2f} | {tot - dec:.2f} | {tot:.2f} | {res['duration']:.1f} | "
              f"{res['rtf']:.3f} |")


if __name__ == "__main__":
    main()
