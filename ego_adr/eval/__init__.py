"""Scoring of EgoErrorVQA predictions: metrics, reports, comparisons, rater agreement, shard merging.

Multiple-choice samples are scored by one rule, the public evaluator's (:mod:`ego_adr.eval.scoring`), in every
caller; :func:`score_row` is that rule for one predictions row.

Everything here is a pure function of predictions files; nothing touches a model. The evidence browser
(:mod:`ego_adr.eval.browser`, ``report.html``) also re-reads the recorded frames from the videos, through
``ego_adr.video`` (a lower layer), for its thumbnails. Submodules are imported on
use so that ``import ego_adr.eval`` stays cheap (numpy/scipy/matplotlib load only when scoring).
"""

from __future__ import annotations

__all__ = ["compute_mc_metrics", "score_row", "write_report", "compare_runs", "agreement", "merge_predictions"]


def __getattr__(name: str):
    if name == "compute_mc_metrics":
        from ego_adr.eval.mc import compute_mc_metrics

        return compute_mc_metrics
    if name == "score_row":
        from ego_adr.eval.scoring import score_row

        return score_row
    if name == "write_report":
        from ego_adr.eval.report import write_report

        return write_report
    if name == "compare_runs":
        from ego_adr.eval.compare import compare_runs

        return compare_runs
    if name == "agreement":
        from ego_adr.eval.agreement import agreement

        return agreement
    if name == "merge_predictions":
        from ego_adr.eval.merge import merge_predictions

        return merge_predictions
    raise AttributeError(f"module 'ego_adr.eval' has no attribute {name!r}")
