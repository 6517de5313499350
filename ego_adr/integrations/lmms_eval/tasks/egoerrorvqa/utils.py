"""The functions the YAMLs of this folder name (``!function utils.<name>``): each delegates to ego_adr.

lmms-eval imports this file by its path; everything it does lives in :mod:`ego_adr.integrations.lmms_eval`
(documents and clips in ``docs``, multiple-choice scoring in ``results``, open-ended judging in ``open_end``).
"""

from __future__ import annotations

from ego_adr.integrations.lmms_eval import docs as _docs
from ego_adr.integrations.lmms_eval import open_end as _open_end
from ego_adr.integrations.lmms_eval import results as _results

process_results = _results.process_results
process_results_oe = _open_end.process_results
pooled = _results.pooled
globals().update(
    _results.AGGREGATIONS
)  # aggregate_<metric> for every ego_adr.eval metric (results.MC_METRICS)
globals().update(_open_end.AGGREGATIONS)


def process_docs(dataset):
    """The manifest lmms-eval loaded (which source(s), which kind) -> that task's documents, from ego_adr's
    source registry (``docs.load_docs``)."""
    import datasets

    rows = []
    for entry in dataset:
        rows += _docs.load_docs(entry["lmms_task"], entry["kind"], entry["source"])
    return datasets.Dataset.from_list(rows)


def doc_to_visual(doc):
    """The public protocol's clip as PIL images (``[]`` when it cannot be made; that sample then has no answer)."""
    return _docs.clip_images(doc)


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    """The public question text (the public green agent's wording, read at run time)."""
    return doc["question"]


def doc_to_messages(doc, lmms_eval_specific_kwargs=None):
    """Chat models: the clip as one video (a list of frames) followed by the question, in one user turn."""
    frames = _docs.clip_images(doc)
    content = ([{"type": "video", "url": frames}] if frames else []) + [
        {"type": "text", "text": doc["question"]}
    ]
    return [{"role": "user", "content": content}]


def doc_to_target(doc):
    """Ground truth (any listed option counts) or, open-ended, the reference answer."""
    return " | ".join(doc["ground_truth"]) if doc["kind"] == _docs.MC else doc["reference"]
