"""Size and open time of report.html for a benchmark-sized run, on stand-in videos (docs/browser.md).

    python scripts/make_test_videos.py --data-root ../shared/egoerrorvqa --video-root /tmp/v
    python scripts/bench_browser.py --data-root ../shared/egoerrorvqa --video-root /tmp/v --out /tmp/bench_browser

1. Runs every multiple-choice sample of the annotations (8 frames, shallow mode) with the scripted model double
   (``ego_adr.models.doubles``: no weights; the frames are really sampled and recorded in ``frames_info``).
2. When the annotations hold fewer than ``--samples`` rows (the developer split), pads a copy of the folder to
   that many rows: each extra row repeats a real one under a new id with its frame indices moved by one, so its
   thumbnails are new pictures (a padded page is never a result: it only measures size and speed).
3. Builds report.html (timed) and opens it in Debian's chromium through Playwright: seconds from navigation to
   the first cards drawn, and to redraw after a filter change. Prints a Markdown table.
"""

import argparse
import json
import shutil
import time
from pathlib import Path

import docs_tables  # scripts/docs_tables.py (this folder is on sys.path when the script runs)


def pad(run: Path, out: Path, n: int) -> Path:
    from ego_adr.store import read_jsonl

    shutil.copytree(run, out, dirs_exist_ok=True)
    rows = list(read_jsonl(run / "predictions.jsonl"))
    extra, k = [], 0
    while len(rows) + len(extra) < n:
        r = json.loads(json.dumps(rows[k % len(rows)]))
        fi = r.get("frames_info") or {}
        top = max(0, int(fi.get("video_frames") or 1) - 1)
        if fi.get("indices"):
            fi["indices"] = [min(top, i + 1 + k // len(rows)) for i in fi["indices"]]
        r["sample_id"] = f"{r['sample_id']}/pad{k // len(rows) + 1}"
        extra.append(r)
        k += 1
    (out / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + extra))
    return out


def open_times(html: Path) -> dict:
    import shutil as sh

    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=sh.which("chromium"), args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        page.goto(html.resolve().as_uri(), timeout=120_000)
        page.wait_for_selector(".card .thumbs img")
        page.wait_for_function("[...document.querySelectorAll('.thumbs img')].every(i => i.complete)")
        opened = time.perf_counter() - t0
        t1 = time.perf_counter()
        page.select_option("#f-verdict", index=1)
        page.wait_for_function("document.querySelector('#count').dataset.n !== undefined")
        filtered = time.perf_counter() - t1
        n = int(page.get_attribute("#count", "data-n"))
        b.close()
    return {"open_s": round(opened, 2), "filter_s": round(filtered, 2), "first_filter_n": n}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-root", required=True)
    p.add_argument("--video-root", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--samples", type=int, default=1857, help="rows of the measured page (padded when fewer)")
    p.add_argument("--frames", type=int, default=8)
    p.add_argument("--thumb-width", type=int, default=96)
    docs_tables.add_flag(p)
    args = p.parse_args()
    docs_tables.check(args, ["browser"])
    from ego_adr.eval.browser import write_report_html
    from ego_adr.models.doubles import ScriptedModelDouble
    from ego_adr.run.config import RunConfig
    from ego_adr.run.runner import execute

    out = Path(args.out)
    run = out / "run"
    t0 = time.perf_counter()
    execute(
        RunConfig(
            data_root=args.data_root,
            video_root=args.video_root,
            mode="shallow",
            frames=args.frames,
            output_dir=str(run),
        ),
        progress=True,
        model=ScriptedModelDouble(),
    )
    print(f"run (with report.html) {time.perf_counter() - t0:.1f} s")
    n_rows = sum(1 for _ in (run / "predictions.jsonl").open())
    pages = [("annotations as they are", run, n_rows)]
    if n_rows < args.samples:
        pages.append((f"padded to {args.samples}", pad(run, out / "padded", args.samples), args.samples))
    lines = [
        "| page | samples | frames | thumbnail px | file MB | build s | open s | filter s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, d, n in pages:
        t1 = time.perf_counter()
        html = write_report_html([d], d / "report.html", thumb_width=args.thumb_width)
        build = time.perf_counter() - t1
        o = open_times(html)
        lines.append(
            f"| {name} | {n} | {args.frames} | {args.thumb_width} | {html.stat().st_size / 1e6:.1f} | "
            f"{build:.1f} | {o['open_s']} | {o['filter_s']} |"
        )
        print(lines[-1], flush=True)
    with docs_tables.Printed() as table:
        print("\n".join(lines))
    docs_tables.publish(args, {"browser": table.text})


if __name__ == "__main__":
    main()
