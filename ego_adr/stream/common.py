"""Pieces the stream CLI and the evaluation share: the user-error type, the settings of the model and the method
(:class:`PipelineChoice`, typed, built once by each command line), loading them, the output folder's identity check
and naming."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

from ego_adr.errors import UserError as _UserErrorBase
from ego_adr.store import write_json

DEMO_MAX_NEW_TOKENS = 64  # the random tiny model never stops; the run CLI's demo budget (run/cli.py)


class UserError(_UserErrorBase):
    """A wrong flag or input: one line, exit 2."""


@dataclass(frozen=True)
class PipelineChoice:
    """The model and the method a stream command watches with (the flags of ``python -m ego_adr.stream`` and of
    ``monitoring evaluate --benchmark egoadr-stream``)."""

    model: str | None = None  # None: the embedded tiny model (random weights)
    backend: str = "hf"
    device: str = "auto"
    base_url: str | None = None
    cache_dir: str | None = None
    use_cache: bool = True
    mode: str = "auto"
    frames: int = 8
    max_new_tokens: int | None = None  # None: 256 (Appendix C), 64 for the tiny models
    narration_source: str = "model"

    @property
    def tokens(self) -> int:
        """The new-token budget: the random tiny models never stop on their own, so theirs is the demo's."""
        tiny = self.model is None or self.model.startswith("tiny")
        return self.max_new_tokens or (DEMO_MAX_NEW_TOKENS if tiny else 256)

    @property
    def label(self) -> str:
        """The model's part of a default folder name."""
        return re.sub(r"[^A-Za-z0-9._-]+", "_", Path(self.model).name if self.model else "tiny")

    @property
    def narration_tag(self) -> str:
        return "-refnarr" if self.narration_source == "reference" else ""


def seconds(text: str) -> float:
    """argparse type of a duration: ``8s``, ``0.5m``, ``4``."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min)?\s*", str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 8s, 0.5m, 4)")
    v = float(m.group(1)) * (60.0 if (m.group(2) or "s").startswith("m") else 1.0)
    if v <= 0:
        raise argparse.ArgumentTypeError("a duration must be positive")
    return v


def load_pipeline(choice: PipelineChoice):
    """(pipeline, model behind the stage cache, max new tokens) for the requested model and route."""
    from ego_adr.models.loading import ModelSettings, load_vlm
    from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig

    cfg = ModelSettings(model=choice.model, backend=choice.backend, device=choice.device, frames=choice.frames,
                        cache_dir=choice.cache_dir, use_cache=choice.use_cache, base_url=choice.base_url,
                        batch_size=1, gpu_memory="24GB" if choice.backend == "hf" else None)
    try:
        model = load_vlm(cfg)
    except (ValueError, OSError) as e:  # unknown model, no weights offline, a plan that cannot fit
        raise UserError(" ".join(str(e).split())) from None
    mnt = choice.tokens
    pipe = EgoADR(model, PipelineConfig(mode=choice.mode, frames=choice.frames, max_new_tokens=mnt),
                  cache_dir=cfg.resolved_cache_dir())
    return pipe, model, mnt


#: What the stream writes in its folder (one recording, and ``--evaluate``): what ``--fresh`` discards.
WRITTEN = ("alerts.jsonl", "ticks.jsonl", "timeline.png", "timeline.html", "run.json", "identity.json",
           "outputs", "ticks", "timelines", "report.md", "metrics.json")


def check_identity(out: Path, identity: dict, fresh: bool = False,
                   result_files: tuple[str, ...] | None = None) -> None:
    """The folder's identity (:mod:`ego_adr.folders`, the rule of every entry point): the same settings resume,
    others refuse in one line naming each setting that differs (``settings.frames 8 -> 16``); ``fresh`` discards
    the stream's results first. ``identity`` may lack the keys known only once the model is loaded
    (:func:`late_keys`: checked by :func:`confirm_identity` right after the load). The caller holds the folder's
    lock (:func:`folder_lock`)."""
    from ego_adr.folders import RESULT_FILES, claim

    # the ways out are the run's: another --out, or --fresh
    claim(out, identity, fresh=fresh, written=WRITTEN, result_files=result_files or RESULT_FILES)
    write_json(out / "run.json", identity)


def late_keys(pipe, model) -> dict:
    """What a folder's identity learns only once the model is loaded: its fingerprint and the probe's route."""
    return {"model": model.fingerprint, "route": pipe.route}


def folder_lock(out: Path):
    """The output folder, checked writable (a probe file: root ignores permission bits) and locked."""
    from ego_adr.folders import FolderLock
    from ego_adr.store import check_writable_dir

    check_writable_dir(out, "--out")
    return FolderLock(out)

