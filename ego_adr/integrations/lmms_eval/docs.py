"""The documents of the lmms-eval tasks and the clip each model sees, from ego_adr's own layers.

Why this is thin: the samples come from the source registry (:func:`ego_adr.data.egoerrorvqa.load_samples`), the
window and step text from the public protocol (:func:`ego_adr.reasoning.protocol.apply_to_samples`), the question
from the public green agent's text read at run time (:mod:`ego_adr.reasoning.public_text`), the open-ended
question selection from :func:`ego_adr.eval.open_end.select_qa`, and the frames from the protocol's sampler
(:func:`ego_adr.reasoning.protocol.make_sampler`), so a change in any of them reaches lmms-eval unchanged.

Where the data is: one environment variable pair, :data:`ENV_DATA` (the annotations root, the public
EgoErrorVQA ``data/json``) and :data:`ENV_VIDEO` (the video root, laid out as the public evaluator expects). The
demo task needs neither (the embedded demo set is built offline on first use).

The protocol is ``public`` with one named deviation, ``resize=processor``: frames reach the model wrapper at their
decoded size and the wrapper resizes them (lmms-eval's ``qwen2_5_vl`` runs qwen-vl-utils 0.0.14 on the frame
list, the public white agent's own resize path; resizing here first would resize twice).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ego_adr.errors import UserError

ENV_DATA, ENV_VIDEO = "EGOERRORVQA_DATA_ROOT", "EGOERRORVQA_VIDEO_ROOT"
ENV_FRAMES = "EGOERRORVQA_FRAMES"
DEFAULT_FRAMES = 8  # the public white agent's num_frames (src/white_agent/agent.py) and the paper's Table 4
PROTOCOL = "public"
PROTOCOL_OPTIONS = {"resize": "processor"}  # the model wrapper resizes (see the module docstring)
MC, OE = "multiple-choice", "open-end"
QA_SELECTION = "one"  # the public green agent asks one QA pair per sample (we choose it by a seeded hash)

_LOCK = threading.Lock()
_SAMPLER = None
CLIP_FAILURES: dict[str, str] = {}  # sample_id -> why its clip could not be made (read by results.py)


def protocol_settings():
    from ego_adr.reasoning import protocol

    return protocol.resolve(PROTOCOL, PROTOCOL_OPTIONS)


def protocol_label() -> str:
    return PROTOCOL + "".join(f",{k}={v}" for k, v in PROTOCOL_OPTIONS.items())


def frames() -> int:
    raw = os.environ.get(ENV_FRAMES, "").strip()
    if not raw:
        return DEFAULT_FRAMES
    if not raw.isdigit() or int(raw) < 1:
        raise UserError(
            f"${ENV_FRAMES} must be a positive number of frames (the paper uses 8, 16, 24 or 32), got {raw!r}"
        )
    return int(raw)


def roots(source: str) -> tuple[Path, Path | None]:
    """(annotations root, video root) of ``source``: the demo set's own, else the environment variable pair."""
    if source == "demo":
        from ego_adr.video.demo import ensure_demo

        root = ensure_demo()
        return root / "annotations", root / "videos"
    data = os.environ.get(ENV_DATA, "").strip()
    if not data:
        raise UserError(
            f"task egoerrorvqa ({source}) needs ${ENV_DATA}=DIR (the public EgoErrorVQA data/json; "
            f"`python scripts/download_annotations.py --out DIR`) and ${ENV_VIDEO}=DIR (the videos)"
        )
    if not Path(data).expanduser().is_dir():
        raise UserError(f"${ENV_DATA}={data} is not a folder")
    video = os.environ.get(ENV_VIDEO, "").strip()
    if video and not Path(video).expanduser().is_dir():
        raise UserError(f"${ENV_VIDEO}={video} is not a folder")
    return Path(data).expanduser(), Path(video).expanduser() if video else None


def load_docs(lmms_task: str, kind: str, source: str) -> list[dict]:
    """The documents of one lmms-eval task: one per multiple-choice sample, or one per asked open-ended question."""
    from ego_adr.data.egoerrorvqa import load_samples
    from ego_adr.reasoning import protocol
    from ego_adr.reasoning.public_text import read_public_text

    if kind not in (MC, OE):
        raise UserError(f"task {lmms_task}: kind must be {MC} or {OE}, got {kind!r}")
    data_root, video_root = roots(source)
    samples = load_samples(data_root, task=kind, sources=[source], video_root=video_root)
    samples = protocol.apply_to_samples(samples, protocol_settings())
    base = {"lmms_task": lmms_task, "kind": kind, "protocol": protocol_label(), "frames": frames()}
    if kind == MC:
        guidance = read_public_text(data_root).guidance
        return [_mc_doc(base, s, guidance) for s in samples]
    from ego_adr.eval.open_end import select_qa

    return [_oe_doc(base, s, qi) for s, qi in select_qa(samples, QA_SELECTION, seed=0)]


def _common(base: dict, s) -> dict:
    return {
        **base,
        "sample_id": s.sample_id,
        "source": s.source,
        "task_id": s.task_id,
        "video_id": s.video_id,
        "video_path": s.video_path or "",
        "start": s.start,
        "end": s.end,
        "sample": json.dumps(s.to_dict(), ensure_ascii=False),
    }


def _mc_doc(base: dict, s, guidance: str) -> dict:
    from ego_adr.reasoning.one_pass import public_step
    from ego_adr.reasoning.public_text import public_question

    step = protocol_settings().step  # raw under the public protocol: the stored action_annotation
    return {
        **_common(base, s),
        "question": public_question(guidance, s.procedure, public_step(s, step)),
        "ground_truth": list(s.ground_truth),
        "qa_index": -1,
        "qa_question": "",
        "reference": "",
    }


def _oe_doc(base: dict, s, qi: int) -> dict:
    from ego_adr.reasoning import prompts as P

    qa = s.qa_pairs[qi]
    question = P.OPEN_END.render(procedure=s.procedure or "No procedure available.", question=qa.question)
    return {
        **_common(base, s),
        "question": question,
        "ground_truth": [],
        "qa_index": qi,
        "qa_question": qa.question,
        "reference": qa.answer,
    }


def sample_of(doc: dict):
    """The :class:`~ego_adr.data.sample.Sample` a document was made from (the ego_adr model runs on it)."""
    from ego_adr.data.sample import QAPair, Sample

    d = json.loads(doc["sample"])
    d["qa_pairs"] = [QAPair(**q) for q in d.get("qa_pairs") or []]
    return Sample(**d)


def is_ours(doc) -> bool:
    return isinstance(doc, dict) and "sample" in doc and "lmms_task" in doc and "kind" in doc


def _sampler():
    global _SAMPLER
    if _SAMPLER is None:
        from ego_adr.reasoning import protocol

        _SAMPLER = protocol.make_sampler(protocol_settings())
    return _SAMPLER


def item_of(doc: dict):
    """A pipeline :class:`~ego_adr.reasoning.pipeline.Item` with the document's clip (or why there is none):
    the public window and frame rule, decoded with the protocol's sampler (one open reader per video)."""
    from ego_adr.data.egoerrorvqa import sample_problem
    from ego_adr.reasoning.pipeline import Item
    from ego_adr.run.common import decode_item

    sample = sample_of(doc)
    problem = sample_problem(sample) if doc["kind"] == MC else None
    if problem:
        item = Item(sample)
        item.failure = f"data: {problem}"
        CLIP_FAILURES[sample.sample_id] = item.failure
        return item
    with _LOCK:
        item = decode_item(_sampler(), sample, int(doc["frames"]))
    if item.frames_error:
        CLIP_FAILURES[sample.sample_id] = f"video: {item.frames_error}"
    return item


def clip_images(doc: dict) -> list:
    """The clip as PIL images (what any lmms-eval model wrapper is given), ``[]`` when it cannot be made (the
    sample is then scored as having no answer, as ``ego_adr.run`` scores it; :mod:`.results`)."""
    from PIL import Image

    item = item_of(doc)
    if item.frames is None:
        return []
    return [Image.fromarray(a) for a in item.frames.array]
