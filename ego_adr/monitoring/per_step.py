"""The per-step file (``steps.jsonl``): one row per observed step, what every episode metric of the layer reads.

A benchmark writes it from its episodes and a monitor's outputs; :mod:`ego_adr.monitoring.episode_metrics` scores
it with nothing else, so the numbers of a run can be recomputed from its file alone. A row:

- ``episode`` (id), ``index`` (0, 1, ... within the episode; the last row of an episode is its task-end step,
  where an omission is confirmed), ``label`` (1 at an error step), ``p_error`` (the monitor's P(an error has
  happened by this step)), ``flagged`` (whether it alarms here; ``None`` where the benchmark's threshold on
  ``p_error`` decides), ``category`` (the error type the monitor names here), ``onset`` (the step it blames),
  ``evidence`` (what it wants a reader to see; left out when empty);
- what is true of the episode, repeated on each of its rows so that any row subset still scores: ``errorful``,
  ``error_onset`` (its first error's step), ``error_types`` (every type it contains), ``primary_type`` (the first
  error's type), ``stratum`` (a breakdown group, e.g. HelpMeOut's template complexity), ``timed_out`` (the
  monitor gave up on it: left out of M3, as HelpMeOut's re-planner rows are).

A benchmark may add fields of its own (the step streams add ``step_id``); :func:`schema_errors` checks the
layer's fields and their types, and every benchmark's writer is tested against it (HelpMeOut's
``helpmeout/evaluation/scoring.py``, the video stream's ``stream/metrics.py``, the step streams'
``online_mistakes/fitting.py``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ego_adr.store import write_text

STEP_FIELDS = ("episode", "index", "label", "p_error", "flagged", "category", "onset", "evidence")
EPISODE_FIELDS = ("errorful", "error_onset", "error_types", "primary_type", "stratum", "timed_out")


def step_row(episode: str, index: int, label: int, p_error: float, truth: dict, *, flagged: bool | None = None,
             category: str | None = None, onset: int | None = None, evidence: dict | None = None) -> dict:
    """One row; ``truth`` holds the :data:`EPISODE_FIELDS` of its episode (missing ones are ``None``/false)."""
    row = {"episode": episode, "index": int(index), "label": int(label), "p_error": float(p_error),
           "flagged": flagged, "category": category, "onset": onset}
    if evidence:
        row["evidence"] = evidence
    row.update({k: truth.get(k) for k in EPISODE_FIELDS})
    row["errorful"] = bool(row["errorful"])
    row["timed_out"] = bool(row["timed_out"])
    row["error_types"] = list(row["error_types"] or ())
    return row


_N = type(None)
#: The layer's fields and the types a row may give each (``evidence`` may be left out).
FIELD_TYPES = {"episode": (str,), "index": (int,), "label": (int,), "p_error": (float, int), "flagged": (bool, _N),
               "category": (str, _N), "onset": (int, _N), "evidence": (dict,), "errorful": (bool,),
               "error_onset": (int, _N), "error_types": (list,), "primary_type": (str, _N), "stratum": (str, _N),
               "timed_out": (bool,)}


def schema_errors(row: dict) -> list[str]:
    """What is wrong with one row against the layer's schema (empty: nothing)."""
    errs = []
    for k, types in FIELD_TYPES.items():
        if k not in row:
            if k != "evidence":
                errs.append(f"no {k}")
            continue
        v = row[k]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            errs.append(f"{k} is {type(v).__name__}, not {' or '.join(t.__name__ for t in types)}")
    if not errs:
        if row["index"] < 0 or row["label"] not in (0, 1):
            errs.append("index must be >= 0 and label 0 or 1")
        if not (math.isfinite(row["p_error"]) and 0.0 <= row["p_error"] <= 1.0):
            errs.append(f"p_error {row['p_error']} is not a probability")
        if not all(isinstance(t, str) for t in row["error_types"]):
            errs.append("error_types holds a non-string")
    return errs


@dataclass(frozen=True)
class EpisodeSteps:
    """One episode's rows as arrays (what the metrics compute on)."""

    id: str
    labels: np.ndarray  # float 0/1 per step
    probs: np.ndarray  # float per step
    flagged: np.ndarray  # bool per step
    categories: tuple  # the type named at each step (None: none)
    errorful: bool
    error_onset: int | None
    error_types: frozenset
    primary_type: str | None
    stratum: str | None
    timed_out: bool

    @property
    def named_types(self) -> set:
        """The types named at the steps where the monitor alarms (M4's predicted set)."""
        return {c for f, c in zip(self.flagged, self.categories, strict=True) if f and c}


def group_episodes(rows: Iterable[dict], threshold: float = 0.5) -> list[EpisodeSteps]:
    """The rows grouped by ``episode`` in first-seen order, each episode's steps in ``index`` order.

    A row whose ``flagged`` is ``None`` alarms when ``p_error`` reaches ``threshold``. Raises ValueError when an
    episode's indices are not 0, 1, ... (a file cut or mixed up) or its truth differs between rows."""
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(str(r["episode"]), []).append(r)
    out = []
    for eid, rs in by.items():
        rs = sorted(rs, key=lambda r: r["index"])
        if [r["index"] for r in rs] != list(range(len(rs))):
            raise ValueError(f"episode {eid}: step indices {[r['index'] for r in rs][:8]}... are not 0, 1, 2, ...")
        truth = rs[0]
        if any(r.get(k) != truth.get(k) for r in rs for k in EPISODE_FIELDS):
            raise ValueError(f"episode {eid}: its rows disagree on what is true of the episode")
        probs = np.array([r["p_error"] for r in rs], dtype=float)
        flags = np.array([p >= threshold if r.get("flagged") is None else bool(r["flagged"])
                          for r, p in zip(rs, probs, strict=True)], dtype=bool)
        out.append(EpisodeSteps(eid, np.array([r["label"] for r in rs], dtype=float), probs, flags,
                                tuple(r.get("category") for r in rs), bool(truth.get("errorful")),
                                truth.get("error_onset"), frozenset(truth.get("error_types") or ()),
                                truth.get("primary_type"), truth.get("stratum"), bool(truth.get("timed_out"))))
    return out


def write_steps(path: str | Path, rows: Iterable[dict]) -> Path:
    """``rows`` as JSON lines, written whole or not at all (:func:`ego_adr.store.write_text`). Not
    :func:`~ego_adr.store.write_jsonl`: a numpy number here is written as a number (``default=float``), where that
    one writes any unknown value as a string, and a non-ASCII string is escaped as the per-step files always were."""
    return write_text(path, steps_text(rows))


def steps_text(rows: Iterable[dict]) -> str:
    """The text of a per-step file (:func:`write_steps`)."""
    return "".join(json.dumps(r, default=float) + "\n" for r in rows)


def read_steps(path: str | Path) -> list[dict]:
    """The rows of a per-step file. Raises ValueError naming the file and line of a row that is not JSON or
    lacks a field the metrics need."""
    rows = []
    for k, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{path}:{k} is not JSON") from None
        missing = [f for f in ("episode", "index", "label", "p_error") if f not in r]
        if missing:
            raise ValueError(f"{path}:{k} has no {', '.join(missing)} (not a per-step file)")
        rows.append(r)
    return rows
