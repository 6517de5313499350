"""Reading CaptainCook4D (Peddi et al., NeurIPS 2024 Datasets and Benchmarks) from a data root laid out as
``../shared/online-mistakes/`` (what ``python -m ego_adr.monitoring download`` writes): the authors' annotation files
(``sources/CaptainCook4D-annotations/``, CaptainCook4D/annotations @ a8a920a, MIT) and DTGL's task-graph generation
data (``dtgl/captaincook4d/``, fpv-iplab/Differentiable-Task-Graph-Learning @ 536aaa7).

What is read, and what each holds (``ANNOTATIONS.md`` of the authors' repository describes every file):

- ``annotation_json/error_annotations.json``: the 384 recordings, each a recipe (``activity_id``) and its steps:
  ``step_id`` (a global id, 1-352), ``start_time`` / ``end_time`` in seconds, and for an errorful step ``errors``, a
  list of ``{tag, description}`` (the tags of :data:`TAGS`; the description is the annotator's words). A skipped
  step is in the list with start and end -1;
- ``annotation_json/step_idx_description.json`` (step id -> its text, ``"Verb-text"``) and
  ``activity_idx_step_idx.json`` (recipe -> its step ids); ``complete_step_annotations.json`` for the recipes'
  names (``activity_name``), which name the task-graph files (``"Butter Corn Cup"`` -> ``buttercorncup.json``);
- ``data_splits/recordings_data_split_combined.json``: the authors' recording split (train 213 / val 62 / test 109);
- ``task_graphs/<recipe>.json``: the recipe's graph (:mod:`.graphs`).

The step id is the authority on which step a row is: 7 rows carry a ``description`` other than their id's text
(e.g. ``1_136``, whose two microwave steps swap texts); the text of the id is used.

**Bad input** is one line naming the file and the item, exit 2, nothing written (:class:`~ego_adr.errors.UserError`):
a data root missing one of the files, a split naming a recording the annotations lack, a recording with a step id
outside its recipe, a recipe without its graph (the graph checks are in :mod:`.graphs`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ego_adr.errors import UserError

CC4D_DIR = "sources/CaptainCook4D-annotations"
DTGL_DIR = "dtgl/captaincook4d"
ERRORS = f"{CC4D_DIR}/annotation_json/error_annotations.json"
DESCRIPTIONS = f"{CC4D_DIR}/annotation_json/step_idx_description.json"
RECIPE_STEPS = f"{CC4D_DIR}/annotation_json/activity_idx_step_idx.json"
COMPLETE = f"{CC4D_DIR}/annotation_json/complete_step_annotations.json"
SPLIT = f"{CC4D_DIR}/data_splits/recordings_data_split_combined.json"
GRAPHS = f"{CC4D_DIR}/task_graphs"
DTGL_ANNOTATIONS = f"{DTGL_DIR}/task_graph_generation_annotations.json"
DTGL_GRAPHS = f"{DTGL_DIR}/ground_truth_task_graphs"
SPLITS = ("train", "val", "test")
#: CaptainCook4D's error tags (``annotation_json/error_category_idx.json``).
TAGS = ("Order Error", "Missing Step", "Technique Error", "Preparation Error", "Measurement Error", "Timing Error",
        "Temperature Error", "Other")
ORDER, MISSING = "Order Error", "Missing Step"
HINT = ("get the files with `python -m ego_adr.monitoring download --out DIR` and pass --data-root DIR (its "
        f"{CC4D_DIR}/ and {DTGL_DIR}/)")


@dataclass(frozen=True)
class Step:
    """One annotated step of a recording: its id, times (-1: not done) and error tags with the annotator's words."""

    step_id: int
    start: float
    end: float
    tags: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        return self.start >= 0


@dataclass(frozen=True)
class Annotated:
    recording: str
    recipe: str  # the task graph file's stem: the recipe's name, lower case, without spaces
    is_error: bool
    steps: tuple[Step, ...]  # in the file's order (not always time order)


@dataclass(frozen=True)
class Sources:
    """Everything the benchmarks and the graph experiment read from the authors' files."""

    root: str
    recordings: Mapping[str, Annotated]
    splits: Mapping[str, tuple[str, ...]]
    descriptions: Mapping[int, str]
    recipe_steps: Mapping[str, tuple[int, ...]]  # recipe -> its step ids (sorted)
    recipe_names: Mapping[str, str]  # recipe -> its name ("Butter Corn Cup")


def path(root: str | os.PathLike, rel: str) -> Path:
    """``root / rel``, which must exist (a data root missing a file is one line)."""
    p = Path(root).expanduser() / rel
    if not p.exists():
        raise UserError(f"--data-root {root}: {rel} not found; {HINT}")
    return p


def read_json(root: str | os.PathLike, rel: str):
    p = path(root, rel)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise UserError(f"{p} is not JSON ({e}); {HINT}") from None


def recipe_key(name: str) -> str:
    """``"Butter Corn Cup"`` -> ``buttercorncup`` (the task graph's file name; DTGL's ``scenario``)."""
    return str(name).lower().replace(" ", "")


def _step(p: Path, rid: str, i: int, s) -> Step:
    try:
        errs = s.get("errors") or []
        tags = tuple(str(e["tag"]) for e in errs)
        notes = tuple(str(e.get("description") or "") for e in errs)
        out = Step(int(s["step_id"]), float(s["start_time"]), float(s["end_time"]), tags, notes)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise UserError(f"{p}: recording {rid!r} step {i} lacks step_id, start_time, end_time or a readable "
                        "errors list") from None
    unknown = [t for t in tags if t not in TAGS]
    if unknown:
        raise UserError(f"{p}: recording {rid!r} step {i} has the error tag {unknown[0]!r}, not one of "
                        f"{', '.join(TAGS)}")
    return out


def _recipes(root) -> tuple[dict[int, str], dict[str, str]]:
    """activity id -> recipe key, recipe key -> name (from ``complete_step_annotations.json``)."""
    doc = read_json(root, COMPLETE)
    keys, names = {}, {}
    for rid, r in (doc.items() if isinstance(doc, dict) else ()):
        try:
            keys[int(r["activity_id"])] = recipe_key(r["activity_name"])
            names[recipe_key(r["activity_name"])] = str(r["activity_name"])
        except (KeyError, TypeError, ValueError):
            raise UserError(f"{path(root, COMPLETE)}: recording {rid!r} has no activity_id and activity_name") from None
    return keys, names


def _recipe_steps(root, keys: Mapping[int, str]) -> dict[str, tuple[int, ...]]:
    doc = read_json(root, RECIPE_STEPS)
    try:
        return {keys[int(a)]: tuple(sorted(set(int(s) for s in ids))) for a, ids in doc.items() if int(a) in keys}
    except (TypeError, ValueError, AttributeError):
        raise UserError(f"{path(root, RECIPE_STEPS)} is not a map of recipe id -> step ids") from None


def _recordings(root, keys: Mapping[int, str], recipe_steps: Mapping[str, tuple[int, ...]]) -> dict[str, Annotated]:
    p = path(root, ERRORS)
    doc = read_json(root, ERRORS)
    if not isinstance(doc, list):
        raise UserError(f"{p} is not a list of recordings")
    out = {}
    for n, r in enumerate(doc):
        rid = str(r.get("recording_id")) if isinstance(r, dict) else f"<entry {n}>"
        if not isinstance(r, dict) or not isinstance(r.get("step_annotations"), list):
            raise UserError(f"{p}: recording {rid!r} has no step_annotations list")
        if r.get("activity_id") not in keys:
            raise UserError(f"{p}: recording {rid!r} has activity_id {r.get('activity_id')!r}, a recipe "
                            f"{COMPLETE} does not name")
        recipe = keys[r["activity_id"]]
        steps = tuple(_step(p, rid, i, s) for i, s in enumerate(r["step_annotations"]))
        for i, s in enumerate(steps):
            if s.step_id not in recipe_steps.get(recipe, ()):
                raise UserError(f"{p}: recording {rid!r} step {i} has step id {s.step_id}, which recipe {recipe!r} "
                                f"does not have ({RECIPE_STEPS})")
        out[rid] = Annotated(rid, recipe, bool(r.get("is_error")), steps)
    return out


def _splits(root, recordings: Mapping[str, Annotated]) -> dict[str, tuple[str, ...]]:
    p = path(root, SPLIT)
    doc = read_json(root, SPLIT)
    out = {}
    for s in SPLITS:
        ids = doc.get(s) if isinstance(doc, dict) else None
        if not isinstance(ids, list):
            raise UserError(f"{p} has no {s!r} list of recordings")
        for rid in ids:
            if str(rid) not in recordings:
                raise UserError(f"{p}: split {s!r} names recording {rid!r}, which {ERRORS} does not have")
        out[s] = tuple(str(x) for x in ids)
    seen: dict[str, str] = {}
    for s, ids in out.items():
        for rid in ids:
            if rid in seen:
                raise UserError(f"{p}: recording {rid!r} is in both {seen[rid]!r} and {s!r}")
            seen[rid] = s
    return out


def load(root: str | os.PathLike) -> Sources:
    """The authors' files of ``root``, checked (module docstring)."""
    keys, names = _recipes(root)
    desc = read_json(root, DESCRIPTIONS)
    try:
        descriptions = {int(k): str(v) for k, v in desc.items()}
    except (TypeError, ValueError, AttributeError):
        raise UserError(f"{path(root, DESCRIPTIONS)} is not a map of step id -> text") from None
    recipe_steps = _recipe_steps(root, keys)
    for recipe, ids in recipe_steps.items():
        lacking = [i for i in ids if i not in descriptions]
        if lacking:
            raise UserError(f"{path(root, RECIPE_STEPS)}: recipe {recipe!r} names step {lacking[0]}, which "
                            f"{DESCRIPTIONS} does not describe")
    recordings = _recordings(root, keys, recipe_steps)
    return Sources(str(root), recordings, _splits(root, recordings), descriptions, recipe_steps, names)


def time_order(rec: Annotated) -> list[Step]:
    """The steps done (start >= 0) in order of start time (72 recordings list them otherwise; ties keep the file's
    order)."""
    return sorted((s for s in rec.steps if s.done), key=lambda s: s.start)
