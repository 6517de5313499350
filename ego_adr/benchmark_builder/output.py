"""The built data root: ``procedure.json``, ``sources.json`` and each source's two files, read back through the
source registry (:mod:`ego_adr.data.sources.built`) like any other data root.

A source the registry already knows by code (the public four, ``demo``) is written in its own record format and
file names: the row's ``native`` fields (as ``ego_adr.data convert`` keeps them) with the unified fields on top,
so its own loader reads it. Any other source gets the generic built record. Writes go to a temporary file and are
renamed, so an interrupted build never leaves half a file.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.data import sources as registry
from ego_adr.data.build_input import Row
from ego_adr.data.sources import built
from ego_adr.store import write_json

MC, OE = "multiple-choice", "open-end"


def is_registered(source: str) -> bool:
    """True for a source defined by code (its own record format), False for a new or an earlier built one."""
    spec = registry.SOURCES.get(source)
    return spec is not None and not spec.extras.get("built")


def _window(given: float | int | None, t: float | None) -> float | int:
    """The stored time: the number the annotation file gave, verbatim (``-1.0``, ``777``, ``-3661.033``: the public
    protocol sends it as written, ``Sample.wire``); ``-1`` (the public "no segment") when it gave none."""
    if given is not None:
        return given
    return -1 if t is None else t


#: label provenances that are not the user's annotation: a record names them (``label_provenance``)
NOT_GIVEN = ("llm-labelled", "human-revised")


def record(row: Row) -> dict:
    """The multiple-choice record of a row (``close_end_answer`` included; ``label_provenance`` when a label is
    the LLM's or a reviewer's, so that a user of the data can tell them from the annotation's)."""
    unified = {
        "video_id": row.recording,
        "task_id": row.task,
        "start_time": _window(row.start_given, row.start),
        "end_time": _window(row.end_given, row.end),
        "close_end_answer": list(row.labels),
    }
    if any(v in NOT_GIVEN for v in row.label_provenance.values()):
        unified["label_provenance"] = {x: row.label_provenance.get(x, "given") for x in row.labels}
    if is_registered(row.source):
        if row.start_given is None and row.native.get("start_time") is not None:
            unified["start_time"], unified["end_time"] = row.native["start_time"], row.native.get("end_time")
        if row.labels_text and len(row.labels) == 1:  # the dataset's own form: one label as a text
            unified["close_end_answer"] = row.labels[0]
        return {**row.native, **unified}
    rec = {
        **unified,
        "action_annotation": row.step,
        "is_error": not row.correct,
        "error_description": row.description,
    }
    if row.step_id is not None:
        rec["step_id"] = row.step_id
    if row.video:
        rec["video"] = row.video
    return rec


def files_of(source: str) -> dict[str, str]:
    return dict(registry.get(source).files) if is_registered(source) else built.files_for(source)


def manifest(sources: list[str], labels: dict[str, str] | None = None) -> dict:
    entries = []
    for s in sources:
        if is_registered(s):
            entries.append({"name": s, "reader": "registered"})
        else:
            entries.append(
                {
                    "name": s,
                    "reader": "built",
                    "label": (labels or {}).get(s, s),
                    "files": files_of(s),
                    "video_layout": built.DEFAULT_LAYOUT,
                }
            )
    return {"format": built.FORMAT, "sources": entries}


def write_mc_files(out: Path, rows: list[Row]) -> dict[str, list[Row]]:
    """Each source's multiple-choice file (the build, then each merge with the reviewed labels); rows by source."""
    by_source: dict[str, list[Row]] = {}
    for r in rows:
        by_source.setdefault(r.source, []).append(r)
    for source, rs in by_source.items():
        write_json(out / files_of(source)[MC], [record(r) for r in rs])
    return by_source


def write_multiple_choice(out: Path, rows: list[Row], procedures: dict[str, str]) -> dict[str, list[Row]]:
    """``procedure.json``, ``sources.json`` and each source's multiple-choice file; rows grouped by source."""
    write_json(out / "procedure.json", procedures)
    write_json(out / built.MANIFEST, manifest(list(dict.fromkeys(r.source for r in rows))))
    return write_mc_files(out, rows)


def sample_ids(out: Path, by_source: dict[str, list[Row]]) -> list[tuple[str, Row]]:
    """(sample id, row) for every row, as the loader names the samples of the file just written."""
    from ego_adr.data.egoerrorvqa import load_samples

    pairs: list[tuple[str, Row]] = []
    for source, rs in by_source.items():
        samples = load_samples(out, task=MC, sources=[source])
        pairs += [(s.sample_id, r) for s, r in zip(samples, rs, strict=True)]
    return pairs


def write_open_end(out: Path, segments: list[tuple[str, Row]], final: dict[str, list[dict]]) -> int:
    """Each source's open-ended file: the segments that have at least one final pair. Returns the pair count."""
    per: dict[str, list[dict]] = {}
    n = 0
    for sid, row in segments:
        per.setdefault(row.source, [])
        pairs = final.get(sid) or []
        if not pairs:
            continue
        rec = record(row)
        rec.pop("close_end_answer")
        rec.pop("label_provenance", None)
        rec["qa_pairs"] = pairs
        per[row.source].append(rec)
        n += len(pairs)
    for source, recs in per.items():
        write_json(out / files_of(source)[OE], recs)
    return n
