"""EgoErrorVQA sample ids: readable, built only from the clip's identity, never from its labels.

``{source}/{video_id}/{window}/{step}`` (EgoOops: ``egooops/{task}/{video}/...``, the source spec's ``id_prefix``),
the window as ``{start:.3f}-{end:.3f}`` or ``whole``. Times are rounded to milliseconds because the Epic-Tent
multiple-choice file stores them rounded to 3 decimals and the open-ended file does not; this way the
multiple-choice and open-ended records of one clip get the same id. Epic-Tent contains records for the same
clip and step with different annotations (14 groups in the multiple-choice file: one ``correct`` record and
one or two error records for the same window, and exact repeats in the open-ended file). Such a group gets
a suffix ``#`` + 6 hex digits of a hash of the record's fields that both tasks share (labels included), then
``.k`` for records that still coincide, ordered by a hash of the whole record. The suffix does not depend on
file order and agrees between tasks when both files hold the same group. Sample ids are bookkeeping keys:
never show them to a model under test. Apart from the loader (data/egoerrorvqa.py), which reads the files and
turns a record into a sample, because an id is the one thing there that looks at several records at once.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from ego_adr.data import sources as registry
from ego_adr.data.sources import spec as src

#: record fields that differ between the two tasks' files of one clip (the id suffix hashes the others)
_NOT_SHARED = frozenset({"qa_pairs", "close_end_answer", "action_annotation", "start_time", "end_time"})


def window_key(start: float | None, end: float | None) -> str:
    """``{start:.3f}-{end:.3f}`` (rounded to milliseconds), or ``whole`` without a segment."""
    if start is None or end is None:
        return "whole"
    return f"{round(start * 1000) / 1000:.3f}-{round(end * 1000) / 1000:.3f}"


def _digest(obj: Any) -> str:
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def base_sample_id(source: str, record: dict, start: float | None, end: float | None, parts: tuple) -> str:
    """``{source}/{id prefix...}/{video_id}/{window}/{step parts}``, before :func:`disambiguate`; a ``/`` inside a
    part becomes ``|``."""
    head = [source, *registry.get(source).id_prefix(record)]
    head += [src.video_id_of(record) or "?", window_key(start, end), *parts]
    return "/".join(p.replace("/", "|") if i else p for i, p in enumerate(head))


def disambiguate(ids: list[str], records: list[dict]) -> list[str]:
    """``ids`` (one per record, in file order) with those shared by several records suffixed as the module
    docstring says."""
    groups: dict[str, list[int]] = {}
    for i, sid in enumerate(ids):
        groups.setdefault(sid, []).append(i)
    out = list(ids)
    for sid, members in groups.items():
        if len(members) == 1:
            continue
        shared = {i: _digest({k: v for k, v in records[i].items() if k not in _NOT_SHARED})[:6] for i in members}
        by_tag: dict[str, list[int]] = {}
        for i in members:
            by_tag.setdefault(shared[i], []).append(i)
        for tag, same in by_tag.items():
            if len(same) == 1:
                out[same[0]] = f"{sid}#{tag}"
                continue
            ordered = sorted(same, key=lambda i: (_digest(records[i]), i))
            for k, i in enumerate(ordered):
                out[i] = f"{sid}#{tag}" + (f".{k}" if k else "")
    return out
