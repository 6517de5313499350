"""Real-time factor of Ego-ADR online on the embedded synthetic recording, split into decoding and the rest.

    python scripts/bench_stream.py [--frames 8 16] [--stride 4] [--window 8] [--max-new-tokens 64] [--model tiny]

Every model call is made (no stage cache), one window at a time as a live monitor would. Prints a Markdown
table: frames, ticks, decode s, model + matching s, total s, recording s, real-time factor (total / recording).

    python scripts/bench_stream.py --decode [--seconds 60]

compares, on a generated 640x360 30-fps H.264 recording with a 225-frame GOP (like the real datasets), the
decoding cost per tick of asking the sampler for every window (it seeks back into each overlap) with the
stream's window reader (ego_adr.stream.frames: reuses the overlap, decodes forward).
"""

import argparse

import docs_tables  # scripts/docs_tables.py (this folder is on sys.path when the script runs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frames", type=int, nargs="+", default=[8, 16])
    p.add_argument("--stride", type=float, default=4.0)
    p.add_argument("--window", type=float, default=8.0)
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--model", default="tiny")
    p.add_argument("--device", default="cpu")
    p.add_argument("--decode", action="store_true", help="only compare the two ways of decoding the windows")
    p.add_argument("--seconds", type=float, default=60.0, help="--decode: length of the generated recording")
    docs_tables.add_flag(p)
    args = p.parse_args()
    name = "stream-decode" if args.decode else "stream"  # the docs block each table goes to (--write-docs)
    docs_tables.check(args, [name])
    with docs_tables.Printed() as table:
        (bench_decode if args.decode else bench_rtf)(args)
    docs_tables.publish(args, {name: table.text})


def bench_rtf(args) -> None:
    from ego_adr.models import load_model
    from ego_adr.reasoning.online import OnlineMonitor
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig
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
            res = stream_recording(OnlineMonitor(pipe), ep["video_path"], ep["task_id"], ep["procedure"],
                                   StreamSettings(args.window, args.stride, n), sampler, ep["id"])
        dec = sum(t["decode_s"] for t in res["ticks"])
        tot = res["processing_s"]
        print(f"| {n} | {len(res['ticks'])} | {dec:.2f} | {tot - dec:.2f} | {tot:.2f} | {res['duration']:.1f} | "
              f"{res['rtf']:.3f} |")


def bench_decode(args) -> None:
    import tempfile
    import time
    from pathlib import Path

    from ego_adr.stream.frames import WindowReader
    from ego_adr.stream.runner import tick_times
    from ego_adr.video.sampler import FrameSampler
    from ego_adr.video.synth import make_test_video

    with tempfile.TemporaryDirectory() as d:
        path = str(make_test_video(Path(d) / "rec.mp4", args.seconds, fps=30, size=(640, 360), gop=225,
                                   textured=True))
        print("| frames | ticks | sampler per window ms/tick | window reader ms/tick |")
        print("|---:|---:|---:|---:|")
        for n in args.frames:
            times = tick_times(args.seconds, args.stride)
            res = []
            for way in ("sampler", "reader"):
                with FrameSampler() as fs:
                    fs.reader(path)  # opening (indexing) is not part of a tick
                    wr = WindowReader(fs, path)
                    t0 = time.perf_counter()
                    for t in times:
                        start = max(0.0, t - args.window)
                        if way == "sampler":
                            fs.sample_clip(path, start, t, n)
                        else:
                            wr.clip(start, t, n)
                    res.append(1000 * (time.perf_counter() - t0) / len(times))
            print(f"| {n} | {len(times)} | {res[0]:.0f} | {res[1]:.0f} |")


if __name__ == "__main__":
    main()
