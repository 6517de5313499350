"""The Ego-ADR video stream on the shared harness: ``python -m ego_adr.monitoring evaluate --benchmark egoadr-stream
--monitor egoadr|random|direct|all`` (formerly ``python -m ego_adr.stream --evaluate``, which still runs it). Every
annotated recording streamed through the monitors, scored with M1-M4, detection delay and the real-time factor
(:mod:`ego_adr.stream.metrics`).

Output folder ``runs/stream-eval-<model>-<route>-<settings>-<sources>[-limitN]/``: ``outputs/<monitor>.jsonl``
(one row per recording: ticks, end check, alerts, timings), ``ticks/<monitor>/<recording>.jsonl`` (the resumable
tick logs), ``steps/<monitor>.jsonl`` (the layer's per-step rows: every annotated segment and the task end),
``timelines/<recording>.html`` (the Ego-ADR monitor's timeline against the annotated segments), ``metrics.json``,
``report.md``, ``run.json``. A rerun skips finished recordings and resumes the one in progress.

Every monitor of a run shares one model and one folder (the harness's one-folder layout); the folder's identity is
checked before the model is loaded (issue 46 item 6), its fingerprint and the probe's route right after. A folder
holds results once any monitor's ``outputs/<monitor>.jsonl`` exists, so one of other settings is refused; before
issue 43 a folder of other settings was re-labelled and its outputs resumed as if they were the new settings'.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ego_adr.folders import read_identity
from ego_adr.monitoring.driver import Benchmark, MonitorResult
from ego_adr.store import check_writable_dir, write_json, write_text
from ego_adr.stream.common import WRITTEN, PipelineChoice, UserError, late_keys, load_pipeline, seconds


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


@dataclass(frozen=True)
class Settings:
    data_root: str | None = None
    video_root: str | None = None
    sources: str | None = None
    limit: int | None = None
    tolerance: float | None = None
    seed: int = 0
    mode: str = "auto"
    window: float = 8.0
    stride: float = 4.0
    frames: int = 8
    threshold: float = 0.5
    narration_source: str = "model"
    max_new_tokens: int | None = None
    no_cache: bool = False


@dataclass
class Recordings:
    episodes: list[dict]
    origin: str
    sources: list[str]


@dataclass
class Prepared:
    pipe: object
    model: object
    monitors: dict


ALL4 = ["captaincook4d", "epic_tent", "assembly101", "egooops"]


def choice(s) -> PipelineChoice:
    """The model and method settings of an evaluation (typed, from its settings)."""
    own: Settings = s.own
    m = s.model
    return PipelineChoice(m.model, m.backend, m.device or "auto", m.base_url, s.cache_dir, not own.no_cache,
                          own.mode, own.frames, own.max_new_tokens, own.narration_source)


def _episodes(own: Settings, cache_dir: str | None) -> Recordings:
    from ego_adr.stream.episodes import demo_episodes, load_episodes

    if own.data_root is None:
        return Recordings(demo_episodes(cache_dir), "embedded synthetic recordings", ["demo"])
    if not Path(own.data_root).is_dir():
        raise UserError(f"--data-root {own.data_root} is not a folder (see README: the EgoErrorVQA annotations)")
    if not own.video_root or not Path(own.video_root).is_dir():
        raise UserError("--evaluate with --data-root needs --video-root (a folder with the recordings at the "
                        "public paths; stand-ins: python scripts/make_test_videos.py --data-root D --video-root V)")
    sources = own.sources.split(",") if own.sources else list(ALL4)
    try:
        return Recordings(load_episodes(own.data_root, own.video_root, sources), "EgoErrorVQA annotations", sources)
    except (ValueError, FileNotFoundError) as e:
        raise UserError(str(e)) from None


def _notes(s, episodes: list[dict], settings, tolerance: float, stats: dict) -> list[str]:
    own: Settings = s.own
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
             f"{settings.frames} frames, threshold {own.threshold:g}, on-target tolerance {tolerance:g} s."]
    if stats.get("model_calls") or stats.get("cache_hits"):
        notes.append(f"This run made {stats.get('model_calls', 0)} model calls and answered "
                     f"{stats.get('cache_hits', 0)} from the stage cache (earlier runs, or identical windows: "
                     "stand-in videos repeat their frames across recordings), so its real-time factor is a lower "
                     "bound; scripts/bench_stream.py measures it without the cache.")
    if own.narration_source == "reference":
        notes.append("Diagnostic: the egoadr row narrates each window from the annotations (reference narration); "
                     "the baselines watch the video.")
    if s.model.model is None or s.model.model.startswith("tiny"):
        notes.append("The tiny model has random weights: its numbers only show that the machinery works.")
    return notes


def _report(results: dict, notes: list[str]) -> tuple[str, str]:
    from ego_adr.stream.metrics import metrics_table

    table = metrics_table({n: r["all"] for n, r in results.items()})
    full = {n: r["fully_annotated"] for n, r in results.items() if r["fully_annotated"]}
    if full and any(f["episodes"] != results[n]["all"]["episodes"] for n, f in full.items()):
        table += "\n\nFully annotated recordings only:\n\n" + metrics_table(full)
    bullets = "\n".join(f"- {n}" for n in notes)
    return table, "# Ego-ADR online: streaming evaluation\n\n" + table + "\n\n" + bullets + "\n"


class EgoADRStream(Benchmark):
    Settings = Settings
    folder_per_monitor = False
    written = WRITTEN + ("steps",)

    def out_required(self) -> bool:
        return False  # runs/stream-eval-<model>-<route>-...: named once the probe has chosen the route

    def add_arguments(self, e) -> None:
        from ego_adr.reasoning.modes import MODES
        from ego_adr.reasoning.pipeline import NARRATION_SOURCES

        e.add_argument("--data-root", help="EgoErrorVQA annotations (default: the embedded synthetic recordings)")
        e.add_argument("--video-root", help="videos at the public layout paths")
        e.add_argument("--sources", help=f"comma-separated (default: {','.join(ALL4)})")
        e.add_argument("--limit", type=int, help="first N recordings per source (a quick look; not every recording)")
        e.add_argument("--tolerance", type=seconds, help="M3 and point of error: an alarm up to this long after "
                       "an error is due is on target (default: the window)")
        e.add_argument("--seed", type=int, default=0, help="random monitor")
        e.add_argument("--mode", default="auto", choices=[m for m, sp in MODES.items() if not sp.one_pass],
                       help="Ego-ADR route: auto = the text-only probe decides (Section 5.1)")
        e.add_argument("--window", type=seconds, default=8.0, help="seconds of video per observation (default 8s)")
        e.add_argument("--stride", type=seconds, default=4.0, help="seconds between observations (default 4s)")
        e.add_argument("--frames", type=int, default=8, help="frames per window (default 8)")
        e.add_argument("--threshold", type=float, default=0.5, help="alert when P(error) reaches this (default 0.5)")
        e.add_argument("--narration-source", default="model", choices=NARRATION_SOURCES.names(),
                       help="reference: a diagnostic that narrates each window from the annotations")
        e.add_argument("--max-new-tokens", type=int, help="default 256 (Appendix C); 64 for the tiny models")
        e.add_argument("--no-cache", action="store_true", help="do not reuse model outputs from the stage cache")

    def check(self, s, names, options) -> None:
        from ego_adr.models.loading import check_device

        own: Settings = s.own
        if own.frames < 1:
            raise UserError("--frames must be >= 1")
        if not 0.0 < own.threshold <= 1.0:
            raise UserError("--threshold must be in (0, 1]")
        if s.model.device:  # before a model load, not torch's device list after it
            check_device(s.model.device, s.model.backend)
        if s.cache_dir:
            check_writable_dir(s.cache_dir, "--cache-dir")

    def load(self, s) -> Recordings:
        rec = _episodes(s.own, s.cache_dir)
        rec.episodes = select(rec.episodes, s.own.limit)
        return rec

    def not_run(self, s, names) -> dict[str, str]:
        return {}  # no --model: the embedded tiny model

    def _tolerance(self, own: Settings) -> float:
        return own.tolerance if own.tolerance is not None else own.window

    def identity(self, s, data: Recordings, monitor, options) -> dict:
        """What the folder holds but the model's fingerprint and route (:meth:`late_identity`); which monitors
        ran is not part of it (each has its own outputs file)."""
        own: Settings = s.own
        return {"data": data.origin, "data_root": own.data_root, "video_root": own.video_root,
                "sources": data.sources, "limit": own.limit, "settings": self._settings(own).__dict__,
                "threshold": own.threshold, "max_new_tokens": choice(s).tokens, "seed": own.seed,
                "tolerance_s": self._tolerance(own), "narration_source": own.narration_source}

    def full_identity(self, early: dict, late: dict) -> dict:
        keys = list(early)
        at = keys.index("settings") + 1
        return {k: ({**early, **late})[k] for k in keys[:at] + list(late) + keys[at:]}

    def result_files(self, names) -> tuple[str, ...]:
        return ("metrics.json", *(f"outputs/{n}.jsonl" for n in self.registry.names()))

    def _settings(self, own: Settings):
        from ego_adr.stream.runner import StreamSettings

        return StreamSettings(own.window, own.stride, own.frames)

    def default_out(self, s, data: Recordings, prepared: Prepared | None) -> Path | None:
        if prepared is None:
            return None
        own, c = s.own, choice(s)
        tag = "-".join(data.sources) if len(data.sources) < 4 else "all4"
        return Path(f"runs/stream-eval-{c.label}-{prepared.pipe.route}-{self._settings(own).tag()}{c.narration_tag}"
                    f"-{tag}" + (f"-limit{own.limit}" if own.limit else ""))

    def prepare(self, s, data: Recordings, names) -> Prepared:
        from ego_adr.stream.registry import build_monitors

        pipe, model, _ = load_pipeline(choice(s))
        print(f"{len(data.episodes)} recordings ({data.origin}: {', '.join(data.sources)}), "
              f"{self._settings(s.own).tag()}, model {model.model_id} [{pipe.route}], monitors {', '.join(names)}",
              flush=True)
        return Prepared(pipe, model, build_monitors(names, pipe, s.own.threshold, s.own.seed))

    def late_identity(self, prepared: Prepared) -> dict:
        return late_keys(prepared.pipe, prepared.model)

    def opened(self, out: Path, identity: dict) -> None:
        write_json(out / "run.json", identity)  # what the folder is for, at once (a killed run still says it)

    def run_monitor(self, s, data: Recordings, name: str, options, prepared: Prepared, out: Path) -> MonitorResult:
        from ego_adr.stream.metrics import scored_subsets, step_rows
        from ego_adr.video.sampler import FrameSampler

        t0 = time.perf_counter()
        with FrameSampler(max_open=2) as sampler:
            rows = evaluate_monitor(prepared.monitors[name], data.episodes, self._settings(s.own), sampler, out,
                                    progress=not s.quiet,
                                    reference=s.own.narration_source == "reference" and name == "egoadr")
        wall = round(time.perf_counter() - t0, 2)
        steps = step_rows([(e, o) for e, o in zip(data.episodes, rows, strict=True) if not o.get("failure")])
        return MonitorResult(name, scored_subsets(data.episodes, rows, self._tolerance(s.own)), steps, seconds=wall)

    def finish(self, s, data: Recordings, results: list[MonitorResult], out: Path, not_run, prepared,
               beside=None) -> None:
        by = {r.name: r.metrics for r in results}
        stats = getattr(prepared.model, "stats", dict)()
        notes = _notes(s, data.episodes, self._settings(s.own), self._tolerance(s.own), stats)
        table, report = _report(by, notes)
        write_text(out / "report.md", report)
        write_json(out / "metrics.json", by)
        write_json(out / "run.json", {**read_identity(out), "monitors": {n: m.describe() for n, m in
                                                                        prepared.monitors.items()},
                                       "pipeline": prepared.pipe.describe(),
                                       "wall_s": {r.name: r.seconds for r in results}, "cache": stats})
        print(table)
        print("\n".join(notes))
        print(f"results in {out}/ (metrics.json, report.md, outputs/, ticks/, steps/, timelines/, run.json)")
