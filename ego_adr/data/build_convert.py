"""The public release's ``data/json`` -> the build input schema (:mod:`ego_adr.data.build_input`), as a check.

Why: the release ships only the result of the paper's process (Appendix A). Converting it back into the input
schema and building again must give back its multiple-choice samples exactly (same clips, windows, labels, task
ids), which shows that the build writes what the loaders read. One row per multiple-choice record:

* ``source`` = the registered source; ``recording`` = ``video_id``; ``task`` = ``task_id``; ``start``/``end`` =
  the record's own ``start_time``/``end_time``, the JSON numbers unchanged (``-1.0``, ``777``, ``-3661.033``): the
  build writes them back verbatim, so the windows and what the public protocol sends (``Sample.wire``) are the same;
* ``labels`` = the record's ``close_end_answer`` as stored (a list stays a list, a text a text); ``step`` = the
  step text the loader reads for it (its ``action``; Epic-Tent's uninformative classes keep their raw text,
  ``instruction``); ``description`` = the loader's reference text, else the dataset's own error remark
  (Assembly101 ``error_annotation``, Epic-Tent ``error_annotation_main``);
* ``native`` = every other field of the record, kept verbatim, so that the source's own loader reads the rebuilt
  record as it read the original (EgoOops step indices, CaptainCook4D ``step_id``, Epic-Tent ``action_label``).

Open-ended records are not rows: their QA pairs are what a build generates. ``--procedures`` of the build takes
the release's ``procedure.json`` when the procedure texts should stay the release's.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.data.build_input import write_jsonl
from ego_adr.errors import OneLineParser, UserError

UNIFIED = ("video_id", "task_id", "start_time", "end_time", "close_end_answer", "qa_pairs")
_REMARKS = ("error_annotation", "error_annotation_main")


def _raw_records(root: Path, fname: str) -> list[dict]:
    from ego_adr.data.egoerrorvqa import _read_json, _records

    return [r for r in _records(_read_json(root / fname), root / fname) if isinstance(r, dict)]


def _row(source: str, record: dict, sample) -> dict:
    raw = record.get("close_end_answer")
    # a text stays a text, so that the rebuilt record stores it as the release does
    labels = raw if isinstance(raw, str) else [str(x) for x in raw] if isinstance(raw, list) else []
    description = sample.reference if not sample.correct else None
    if description is None and not sample.correct:
        description = next((str(record[k]) for k in _REMARKS if record.get(k)), None)
    step = sample.action or str(record.get("action_annotation") or "") or "unknown step"
    step_id = next(
        (record[k] for k in ("step_id", "instruction", "action_label") if record.get(k) is not None), None
    )
    return {
        "source": source,
        "recording": sample.video_id,
        "task": sample.task_id,
        "step": step,
        "step_id": None if step_id is None else str(step_id),
        "start": record.get("start_time"),
        "end": record.get("end_time"),
        "labels": labels,
        "description": description,
        "native": {k: v for k, v in record.items() if k not in UNIFIED},
    }


def convert_release(data_root: str | Path, sources=None) -> list[dict]:
    """The schema rows of the release's multiple-choice records, source by source in file order."""
    from ego_adr.data import sources as registry
    from ego_adr.data.egoerrorvqa import _requested, _root, load_samples

    root = _root(data_root)
    rows: list[dict] = []
    for source in _requested(sources, root):
        spec = registry.get(source)
        fname = spec.files.get("multiple-choice")
        records = [spec.normalise(r) if spec.normalise else r for r in _raw_records(root, fname)]
        samples = load_samples(root, task="multiple-choice", sources=[source])
        if len(samples) != len(records):  # never: the loader makes one sample per record
            raise UserError(f"{fname}: {len(records)} records but {len(samples)} samples")
        rows += [_row(source, r, s) for r, s in zip(records, samples, strict=True)]
    return rows


def main(argv: list[str]) -> int:
    from ego_adr.data.egoerrorvqa import DataError

    p = OneLineParser(
        prog="python -m ego_adr.data convert",
        description="Convert the public release's data/json into the build input schema (JSONL).",
    )
    p.add_argument("--data-root", required=True, help="the release's data/json folder")
    p.add_argument("--out", required=True, help="the JSONL file to write")
    p.add_argument("--sources", help="comma-separated (default: the public four)")
    a = p.parse_args(argv)
    sources = [s for s in (a.sources or "").split(",") if s.strip()] or None
    try:
        rows = convert_release(a.data_root, sources)
    except (DataError, ValueError) as e:
        raise UserError(str(e)) from None
    out = write_jsonl(rows, a.out)
    print(f"wrote {len(rows)} rows to {out}")
    return 0
