"""A sample's clip as the pipeline's :class:`~ego_adr.reasoning.pipeline.Item`: its frames, or the reason there are
none (a data problem, no video path, a decoder failure tagged by kind).

Why here: every entry point that answers a sample (the run, ``check``, the white agent) decodes its clip the same
way, and the result is a pipeline item; it used to live in ``run/``, which made the others import the run layer.
"""

from __future__ import annotations

import errno
import time

from ego_adr.data.egoerrorvqa import sample_problem
from ego_adr.data.sample import Sample
from ego_adr.models.base import infra_error
from ego_adr.reasoning.pipeline import Item

#: errno values of an OSError that mean "the machine", not "this file" (a missing or unreadable file is final).
_MACHINE_ERRNOS = {errno.EIO, errno.ENOMEM, errno.ENOSPC, errno.EAGAIN, errno.EMFILE, errno.ENFILE,
                   errno.ETIMEDOUT, errno.ECONNRESET, errno.ECONNREFUSED}


def decode_error_text(e: BaseException) -> str:
    """The frames error of one sample, tagged as infrastructure when the decoder (or the machine) broke rather
    than the file: out of memory, I/O errors of the disk, too many open files, a timeout."""
    text = f"{type(e).__name__}: {e}"
    machine = isinstance(e, MemoryError | TimeoutError | ConnectionError) or (
        isinstance(e, OSError) and not isinstance(e, FileNotFoundError | PermissionError | IsADirectoryError)
        and e.errno in _MACHINE_ERRNOS
    )
    return infra_error(text) if machine else text


def decode_item(sampler, sample: Sample, num_frames: int) -> Item:
    """A pipeline :class:`Item` with the sample's frames, or the reason there are none."""
    item = Item(sample)
    if not sample.video_path:
        item.frames_error = "no video path (pass --video-root; see README 'Running a real model')"
        return item
    t0 = time.perf_counter()
    try:
        item.frames = sampler.sample_clip(sample.video_path, sample.start, sample.end, num_frames)
        info = getattr(item.frames, "info", None)
        item.frames_info = info.to_dict() if info is not None else {}
    except Exception as e:  # noqa: BLE001 -- any decoder failure is this sample's failure
        item.frames_error = decode_error_text(e)
    item.timings["decode_s"] = round(time.perf_counter() - t0, 4)
    return item


def decode_fn(sampler, num_frames: int, needs_frames: bool):
    """The prefetcher's per-sample function: a data problem fails the sample before any decoding."""

    def fn(sample: Sample) -> Item:
        problem = sample_problem(sample)
        if problem:
            item = Item(sample)
            item.failure = f"data: {problem}"
            return item
        return decode_item(sampler, sample, num_frames) if needs_frames else Item(sample)

    return fn
