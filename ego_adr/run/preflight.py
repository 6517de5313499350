"""``python -m ego_adr.run ... --dry-run``: what a run would do, in seconds, without loading a model.

Why: the failures that cost a GPU-hour are visible before any weights are read -- a video layout that finds
none of the files, windows shorter than the requested frame count (so the model sees repeated frames), a
window after the end of its video, a frame count the model ignores, a memory plan that cannot fit. lmms-eval and
VLMEvalKit users keep discovering these after the run. The dry run reads only the annotations and the videos'
container headers (no decoding), applies the run's own selection (``--sources``, ``--limit``, shards) and its own
window rule and sampling policy (:mod:`ego_adr.data.window`, :mod:`ego_adr.video.policies`), and asks the memory planner
(:func:`ego_adr.models.memory_planner.arch_for` and :func:`~ego_adr.models.memory_planner.plan`) for the chosen
family and ``--gpu-memory``. The family is read from the alias, the hub id or a folder's ``config.json``; no weights are
needed.

It prints, per source and in total: samples, videos found/missing (with example missing paths), records that
cannot be evaluated, clips whose window holds fewer frames than requested, whole-video / clamped / refused
windows, the videos' frame rates and sizes, visual tokens per request; then the frame indices and effective fps
of the first few clips of each source, and the memory plan. Exit 0 when the run would start, 1 when the memory
plan refuses it or the model is not available (the run would stop there), 2 for a user mistake.

Frame counts and rates come from the container headers (exact for MP4, which stores one entry per frame); the
run's reader counts the packets it finds, so a damaged file can still differ at run time.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from ego_adr.errors import ConfigError, InfrastructureError, UserError
from ego_adr.models.backends import BACKENDS

EXAMPLES_PER_SOURCE = 3  # clips whose frame indices are shown
MISSING_SHOWN = 2  # example missing paths per source


def probe_video(path: str) -> dict:
    """Frame count, rate and size from the container headers (no decoding); ``error`` when unreadable."""
    try:
        import av

        with av.open(path) as c:
            st = c.streams.video[0]
            rate = float(st.average_rate or st.guessed_rate or 0)
            n, how = int(st.frames or 0), "header"
            if n <= 0 and rate > 0:  # containers without a frame count: from the duration
                dur = float(st.duration * st.time_base) if st.duration else (c.duration or 0) / 1e6
                n, how = int(round(dur * rate)), "duration x rate"
            return {"frames": n, "fps": rate, "size": (st.codec_context.width, st.codec_context.height),
                    "how": how}
    except ImportError:
        pass
    except Exception as e:  # noqa: BLE001 - any unreadable file is reported, never raised
        return {"error": f"{type(e).__name__}: {e}"}
    try:
        import cv2

        cap = cv2.VideoCapture(path)
        try:
            n, rate = int(cap.get(cv2.CAP_PROP_FRAME_COUNT)), float(cap.get(cv2.CAP_PROP_FPS))
            size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        finally:
            cap.release()
        if n > 0 and rate > 0:
            return {"frames": n, "fps": rate, "size": size, "how": "opencv"}
        return {"error": "no frame count or rate in the file"}
    except ImportError:
        return {"error": "neither PyAV nor OpenCV is installed"}


def _model_check(cfg) -> tuple[str | None, str | None]:
    """(what stops the run, what this machine lacks) about the model: what the runner checks before loading --
    is the model there at all (offline: in the local cache)?

    A registered alias names weights that exist on the hub: not having them here (no cache, no hub) is a fact
    about this machine, like an absent GPU, not a flaw of the plan. Any other name cannot be confirmed."""
    from ego_adr.models.registry import ALIASES
    from ego_adr.run.checks import check_model_name
    from ego_adr.run.config import ConfigError

    try:
        check_model_name(cfg.model, cfg.backend)
    except (ConfigError, InfrastructureError) as e:  # not cached, and offline or the hub unreachable
        spec = ALIASES.find(cfg.model or "")
        return (None, str(e)) if spec is not None and not spec.tiny else (str(e), None)
    return None, None


def model_family(name: str | None) -> tuple[str, str]:
    """(family, how it was found) from the alias, a known hub id or a folder's config.json; nothing loaded."""
    from ego_adr.models.registry import family_from_model_type, known_spec

    if name is None:
        return "qwen2.5-vl", "embedded tiny demo model (random Qwen2.5-VL)"
    spec = known_spec(name)
    if spec is not None:
        if spec.tiny:
            return spec.family, f"alias {name!r} (tiny random model)"
        return spec.family, f"alias/hub id {spec.hub_id}"
    cfg = Path(os.path.expanduser(name)) / "config.json"
    if cfg.is_file():
        import json

        try:
            mt = json.loads(cfg.read_text()).get("model_type")
        except (OSError, ValueError):
            mt = None
        return family_from_model_type(mt) or f"unknown ({mt})", f"{cfg} model_type"
    return "unknown", "not an alias, known hub id or local folder (a dry run reads no weights)"


def _memory(cfg) -> tuple[object | None, str]:
    """The planner's plan for this run (what ``load_model`` would check), or why there is none."""
    spec = BACKENDS[cfg.backend]
    if not spec.plans_memory:
        return None, f"backend {cfg.backend}: {spec.memory_note}"
    from ego_adr.models import memory_planner
    from ego_adr.models.registry import ALIASES

    name = cfg.model or "tiny"
    spec = ALIASES.find(name)
    if spec is not None and spec.tiny:  # the tiny model's own config, if it was ever built (never built here)
        from ego_adr.models.tiny import tiny_folder_name
        from ego_adr.store import cache_root

        folder = cache_root() / tiny_folder_name(spec.family)
        arch = memory_planner.arch_from_folder(folder) if (folder / "config.json").is_file() else None
        if arch is None:
            return None, f"{name}: a random tiny model, not built yet (it is built on the first run)"
    else:
        arch = memory_planner.arch_for(name)
    if arch is None:
        return None, f"no architecture numbers for {name!r}: the run skips the memory plan too"
    try:
        gpu = memory_planner.parse_memory(cfg.gpu_memory or "24GB")
    except ValueError as e:
        from ego_adr.run.config import ConfigError

        raise ConfigError(f"--gpu-memory: {e}") from None
    plan = memory_planner.plan(name, arch, gpu, cfg.frames, cfg.batch_size or 1, pixels=cfg.max_pixels_per_frame)
    return (arch, plan), ""


def _visual_tokens(arch, pixels_budget: int | None, frames: int, size: tuple[int, int] | None) -> int | None:
    """Visual tokens of one request for frames of ``size`` (never upscaled past their own pixels)."""
    from ego_adr.models import memory_planner

    if arch is None:
        return None
    px = pixels_budget
    if size and arch.dynamic:
        own = size[0] * size[1]
        px = min(px, own) if px else own
    return memory_planner.estimate(arch, frames, px).visual_tokens


def preflight(cfg) -> dict:
    """Everything the dry run reports, as data (the tests read it; :func:`render` prints it)."""
    from dataclasses import replace

    from ego_adr.models.loading import device_absent
    from ego_adr.run.runner import cache_scope

    # A dry run plans for the device named, present here or not (a laptop, before renting a GPU): its absence
    # is reported, not a reason to stop. Every other setting is checked exactly as the run checks it.
    try:
        absent = device_absent(cfg.device, cfg.backend)
    except UserError as e:
        raise ConfigError(str(e)) from None
    cfg = replace(replace(cfg, device="cpu").validate(), device=cfg.device) if absent else cfg.validate()
    with cache_scope(cfg):  # --cache-dir: where the demo set and tiny models are
        return {**_preflight(cfg), "device_absent": absent}


def _preflight(cfg) -> dict:
    from ego_adr.data.window import WindowError
    from ego_adr.reasoning.protocol import apply_to_samples
    from ego_adr.run.runner import load_dataset
    from ego_adr.video.policies import get_policy

    samples, info = load_dataset(cfg)
    samples = apply_to_samples(samples, cfg.protocol_settings)  # the windows and steps the run itself would use
    policy = cfg.protocol_settings.sampling  # a sampling rule and its policy share one name (video/policies.py)
    rule = get_policy(policy)
    family, family_how = model_family(cfg.model)
    model_problem, model_here = _model_check(cfg)
    mem, mem_note = _memory(cfg)
    arch, plan = mem if mem else (None, None)
    budget = plan.estimate.pixels_per_frame if plan is not None else cfg.max_pixels_per_frame
    probes: dict[str, dict] = {}
    per: dict[str, dict] = {}
    for s in samples:
        src = per.setdefault(s.source, {"samples": 0, "videos": set(), "found": set(), "missing": set(),
                                        "unreadable": {}, "no_path": 0, "unusable": 0, "short": [],
                                        "whole_video": 0, "clamped": 0, "refused": [], "fps": Counter(),
                                        "sizes": Counter(), "examples": []})
        src["samples"] += 1
        from ego_adr.data.egoerrorvqa import sample_problem

        if sample_problem(s):
            src["unusable"] += 1
        if not s.video_path:
            src["no_path"] += 1
            continue
        src["videos"].add(s.video_path)
        if s.video_path not in probes:
            probes[s.video_path] = (probe_video(s.video_path) if os.path.isfile(s.video_path)
                                    else {"error": "file not found"})
        pr = probes[s.video_path]
        if pr.get("error") == "file not found":
            src["missing"].add(s.video_path)
            continue
        if "error" in pr:
            src["unreadable"][s.video_path] = pr["error"]
            continue
        src["found"].add(s.video_path)
        src["fps"][round(pr["fps"], 3)] += 1
        src["sizes"][tuple(pr["size"])] += 1
        try:  # the run's own rule: the window normalisation and the sampling policy
            p = rule(pr["frames"], pr["fps"], s.start, s.end, cfg.frames)
        except WindowError as e:  # the run records this sample as a failure with this reason
            src["refused"].append((s.sample_id, str(e)))
            continue
        idx, window = p.indices, p.window
        flags = {"notes": p.notes}
        in_window = max(1, int(round((window[1] - window[0]) * pr["fps"])))
        src["whole_video"] += bool(p.whole_video)
        src["clamped"] += bool(p.clamped)
        if p.duplicated:
            src["short"].append(s.sample_id)
        if len(src["examples"]) < EXAMPLES_PER_SOURCE:
            seconds = max(window[1] - window[0], 1.0 / pr["fps"])
            src["examples"].append({
                "sample_id": s.sample_id, "requested": (s.start, s.end), "window": window,
                "frames_in_window": in_window, "indices": idx, "distinct": len(set(idx)),
                "effective_fps": len(idx) / seconds, "video_fps": pr["fps"], "notes": flags["notes"]})
    for src in per.values():
        size = max(src["sizes"], key=lambda wh: wh[0] * wh[1]) if src["sizes"] else None
        src["largest_size"] = size
        src["visual_tokens"] = _visual_tokens(arch, budget, cfg.frames, size)
    return {"config": cfg, "info": info, "n_samples": len(samples), "family": family, "family_how": family_how,
            "per_source": per, "policy": policy, "plan": plan, "arch": arch, "memory_note": mem_note, "model_problem": model_problem,
            "model_here": model_here}


def _fmt_fps(c: Counter) -> str:
    return ", ".join(f"{f:g}" for f, _ in c.most_common(3)) + (" ..." if len(c) > 3 else "") if c else "-"


def render(rep: dict) -> str:
    cfg = rep["config"]
    out = [f"Dry run (no model loaded): {rep['n_samples']} samples from {rep['info']['origin']} "
           f"({rep['info']['data_root']}), videos under {rep['info']['video_root']}",
           f"model {cfg.model or 'embedded tiny demo model'}: family {rep['family']} ({rep['family_how']}); "
           f"backend {cfg.backend}, {cfg.frames} frames per clip ({rep['policy']} sampling), batch {cfg.batch_size}", "",
           "| source | samples | unusable | videos | found | missing | unreadable | no path | short clips "
           f"(< {cfg.frames} frames) | whole video | clamped | refused windows | video fps | largest frame | "
           "visual tokens/request |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|"]
    tot = Counter()
    sizes: Counter = Counter()
    fps: Counter = Counter()
    for name, s in rep["per_source"].items():
        vals = {"samples": s["samples"], "unusable": s["unusable"], "videos": len(s["videos"]),
                "found": len(s["found"]), "missing": len(s["missing"]), "unreadable": len(s["unreadable"]),
                "no_path": s["no_path"], "short": len(s["short"]), "whole_video": s["whole_video"],
                "clamped": s["clamped"], "refused": len(s["refused"])}
        tot.update(vals)
        sizes.update(s["sizes"])
        fps.update(s["fps"])
        size = "x".join(map(str, s["largest_size"])) if s["largest_size"] else "-"
        vt = s["visual_tokens"] if s["visual_tokens"] is not None else "-"
        out.append(f"| {name} | " + " | ".join(str(v) for v in vals.values()) +
                   f" | {_fmt_fps(s['fps'])} | {size} | {vt} |")
    largest = max(sizes, key=lambda wh: wh[0] * wh[1]) if sizes else None
    out.append("| **total** | " + " | ".join(str(tot[k]) for k in ("samples", "unusable", "videos", "found",
               "missing", "unreadable", "no_path", "short", "whole_video", "clamped", "refused")) +
               f" | {_fmt_fps(fps)} | {'x'.join(map(str, largest)) if largest else '-'} | |")
    for name, s in rep["per_source"].items():
        if s["missing"]:
            shown = sorted(s["missing"])[:MISSING_SHOWN]
            out.append(f"\n{name}: {len(s['missing'])} video(s) missing, e.g. " + ", ".join(shown))
        for path, why in list(s["unreadable"].items())[:MISSING_SHOWN]:
            out.append(f"{name}: unreadable {path}: {why}")
        if s["refused"]:
            sid, why = s["refused"][0]
            out.append(f"{name}: {len(s['refused'])} window(s) the run would refuse (recorded as failures), "
                       f"e.g. {sid}: {why}")
        if s["short"]:
            out.append(f"{name}: {len(s['short'])} clip(s) hold fewer than {cfg.frames} frames, so frames repeat, "
                       "e.g. " + ", ".join(s["short"][:MISSING_SHOWN]))
    out.append("\nFrames that would be sampled (first clips with a video; effective fps = frames / window):")
    for name, s in rep["per_source"].items():
        for e in s["examples"]:
            w = e["window"]
            note = f"; {'; '.join(e['notes'])}" if e["notes"] else ""
            out.append(f"- {e['sample_id']}: window {w[0]:.2f}-{w[1]:.2f}s (~{e['frames_in_window']} frames at "
                       f"{e['video_fps']:g} fps) -> indices {e['indices']} ({e['distinct']} distinct), "
                       f"effective {e['effective_fps']:.2f} fps{note}")
        if not s["examples"]:
            out.append(f"- {name}: no clip with a readable video")
    plan = rep["plan"]
    if plan is None:
        out.append(f"\nMemory plan: {rep['memory_note']}")
    else:
        from ego_adr.models.memory_planner import format_plans

        out.append(f"\nMemory plan for {plan.model} on {cfg.gpu_memory}{rep['memory_note']}:")
        out.append(format_plans([plan]))
        if not plan.fits:
            out.append(f"The run would stop here: {plan.reason}")
    if rep["model_problem"]:
        out.append(f"The run would stop before loading: {rep['model_problem']}")
    if rep.get("model_here"):
        out.append(f"Model: {rep['model_here']}. The machine that runs it needs the weights in its cache or the hub "
                   "(this plan's exit status does not depend on it).")
    if rep.get("device_absent"):
        out.append(f"Device: planned for --device {cfg.device}, but {rep['device_absent']}: the run itself needs "
                   "a machine that has it (this plan's exit status does not depend on it).")
    arch = rep.get("arch")
    if arch is not None and arch.dynamic and arch.temporal_patch > 1 and cfg.frames % arch.temporal_patch:
        out.append(f"Note: this family encodes frames in groups of {arch.temporal_patch}; with {cfg.frames} frames "
                   "its processor repeats the last frame to fill the group.")
    return "\n".join(out)


def run_dry(cfg) -> int:
    """The ``--dry-run`` entry point of ``python -m ego_adr.run``: print the report; exit code as documented."""
    rep = preflight(cfg)
    print(render(rep))
    return 0 if (rep["plan"] is None or rep["plan"].fits) and not rep["model_problem"] else 1
