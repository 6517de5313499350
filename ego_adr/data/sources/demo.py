"""The embedded demo set (built by :mod:`ego_adr.video.demo`): the ``demo`` source, not part of the benchmark.

Several demo samples share one video and omissions share the "whole" window: the step text tells them apart.
Videos: ``{video_root}/demo/{video_id}.mp4``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ego_adr.data.sources.spec import Extracted, SourceSpec, is_correct_flag, text, video_id_of


def extract(record: dict, context=None) -> Extracted:
    action = text(record.get("action_annotation"))
    step = hashlib.sha1((action or "").encode()).hexdigest()[:6]
    return Extracted(
        action=action,
        action_field="action_annotation" if action else "none",
        reference=text(record.get("error_description")),
        is_correct=is_correct_flag(record),
        id_parts=(f"step-{step}",),
    )


def video_path(root: Path, record: dict) -> str:
    return str(root / "demo" / f"{video_id_of(record)}.mp4")


SPEC = SourceSpec(
    name="demo",
    files={"multiple-choice": "demo_answer.json", "open-end": "demo_qa_pairs.json"},
    video_path=video_path,
    extract=extract,
    label="Demo",
    public=False,
    description="the embedded synthetic demo set (offline; its numbers only show that the machinery works)",
    layout="demo/{video_id}.mp4",
)
