"""Pieces the stream CLI and the evaluation share: the user-error type, loading the model and pipeline, the
output folder's identity check and naming."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ego_adr.errors import UserError as _UserErrorBase

DEMO_MAX_NEW_TOKENS = 64  # the random tiny model never stops; the run CLI's demo budget (run/cli.py)


class UserError(_UserErrorBase):
    """A wrong flag or input: one line, exit 2."""


def load_pipeline(args):
    """(pipeline, model behind the stage cache, max new tokens) for the requested model and route."""
    from ego_adr.models.loading import ModelSettings as RunConfig  # the model-side settings of a run
    from ego_adr.models.loading import load_vlm
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig

    cfg = RunConfig(model=args.model, backend=args.backend, device=args.device, frames=args.frames,
                    cache_dir=args.cache_dir, use_cache=not args.no_cache, base_url=args.base_url,
                    batch_size=1, gpu_memory="24GB" if args.backend == "hf" else None)
    try:
        model = load_vlm(cfg)
    except (ValueError, OSError) as e:  # unknown model, no weights offline, a plan that cannot fit
        raise UserError(" ".join(str(e).split())) from None
    tiny = args.model is None or args.model.startswith("tiny")  # random weights: never stops on its own
    mnt = args.max_new_tokens or (DEMO_MAX_NEW_TOKENS if tiny else 256)
    pipe = EgoADR(model, PipelineConfig(mode=args.mode, frames=args.frames, max_new_tokens=mnt),
                  cache_dir=cfg.resolved_cache_dir())
    return pipe, model, mnt


def model_label(args) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(args.model).name if args.model else "tiny")


def narration_tag(args) -> str:
    return "-refnarr" if args.narration_source == "reference" else ""


def check_identity(out: Path, identity: dict) -> None:
    prev = out / "run.json"
    if prev.is_file():
        try:
            old = json.loads(prev.read_text())
        except json.JSONDecodeError:
            return
        diff = [k for k, v in identity.items() if json.dumps(old.get(k), sort_keys=True, default=str)
                != json.dumps(v, sort_keys=True, default=str)]
        if diff:
            raise UserError(f"{out} holds a run with other settings ({', '.join(diff)}); pass another --out "
                            "or delete that folder")
    out.mkdir(parents=True, exist_ok=True)
    write_json(prev, identity)


def write_json(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False, default=str))
    tmp.replace(path)
