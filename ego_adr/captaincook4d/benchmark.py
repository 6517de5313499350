"""The CaptainCook4D step-stream benchmarks: ``captaincook4d-complete`` (every step of every test recording) and
``captaincook4d-o`` (each test recording cut at its first mistake, as Assembly101-O and EPIC-Tent-O are), on the
authors' recording split (``recordings_data_split_combined.json``: train 213 / val 62 / test 109), oracle steps.

**A recording as a stream.** Its steps done (start >= 0), in order of start time, then one more observation,
:data:`END_ID` (*the recording ends*): the moment a monitor learns that nothing more will be done, when an omission
becomes certain (HelpMeOut, Sec. 3.4, confirms an omission at task end). Every stream and every training sequence
ends with it. A step never done without an error tag (6 recordings of ``zoodles`` skip its optional "Top with more
parmesan if desired") is not in the stream and is not a mistake.

**Positives** (what a step stream can show):

- a step tagged ``Order Error`` (the step was done out of its order);
- a skipped step (``Missing Step``, start and end -1): it has no time, so its mistake is placed on the first
  observation at which the stream shows it: the first step done that needs it, directly or through other steps,
  in the recipe's graph (the step's node an ancestor of that step's node, :mod:`.graphs`), else :data:`END_ID`.
  Why there: until a step that needs it is done, or the recording ends, the skipped step may still come (recipes
  allow many orders), so no observer of the stream can know earlier; and a monitor that alarms there is right. A
  row targeted by several skipped steps is one positive. Rule ``end`` (option ``missing_target``) places every
  skipped step on :data:`END_ID` instead, reading no graph: the labels then owe nothing to the graph the
  procedure monitor reads.

**Every other tag** (Technique, Preparation, Measurement, Timing, Temperature, Other) stays on its step as its kind
and the step is scored as correct unless it is also an order error: these happen inside a correctly chosen step,
which a step stream cannot see; each is reported per kind. ``Missing Step`` on a step that was done (4 steps, e.g.
"did not cover the lid with a paper towel") is kept as the kind ``Missing Step (step done)``, not a positive.

**Task input** (what a monitor reads without being privileged): the recipe of a recording (like Assembly101-O's
toy; in the episode's name, ``captaincook4d-<recording>-<recipe>``, where the registered monitors that read a task
find it), the step taxonomy (every recipe's steps and texts), the recipe's official graph (Ego-ADR takes the
procedure as task input), the correct training recordings (the training split's recordings without an error,
:attr:`Training.sequences`) and the observed prefix. The training split's labelled recordings
(:attr:`Training.labelled`) are training data too; a monitor that learns from their labels is *supervised* and
says so.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from ego_adr.captaincook4d import graphs as G
from ego_adr.captaincook4d import sources as S
from ego_adr.errors import UserError
from ego_adr.online_mistakes.types import TrainingSet

END_ID = 0  # no CaptainCook4D step has id 0 (ids 1-352)
END_NAME = "END: the recording ends"
BENCHMARKS = ("captaincook4d-complete", "captaincook4d-o")
#: the name the training set carries: both benchmarks train on the same split, so a monitor fitted for one is the
#: monitor fitted for the other (the fits are shared through the cache, :func:`.evaluate._fitted`)
TRAINING = "captaincook4d"
MISSING_TARGETS = ("graph", "end")
MISSING_HERE = "Missing Step"
MISSING_DONE = "Missing Step (step done)"
END_KIND = "END (recording ends)"


@dataclass(frozen=True)
class Recording:
    """One recording as observations, with every field the complete-trial benchmarks' recordings have."""

    video: str  # captaincook4d-<recording>-<recipe>
    recording: str
    recipe: str
    steps: tuple[int, ...]
    labels: tuple[int, ...]
    source_labels: tuple[str, ...]  # correct, errorful (some tag), end
    kinds: tuple[tuple[str, ...], ...]
    names: tuple[str, ...]
    times: tuple[float, ...]  # start time of each step (END: the last step's end)
    skipped: tuple[tuple[int, int], ...] = ()  # (step id, the row its omission is placed on)
    optional_not_done: tuple[int, ...] = ()

    @property
    def scored(self) -> tuple[bool, ...]:
        return (True,) * len(self.steps)


@dataclass(frozen=True)
class Stream:
    benchmark: str
    split: str
    recordings: tuple[Recording, ...]
    missing_target: str = "graph"
    dropped: tuple[str, ...] = ()  # captaincook4d-o: recordings without a positive (not part of the cut benchmark)


@dataclass(frozen=True)
class Training(TrainingSet):
    """The registered monitors' training set (correct training sequences, taxonomy, episode names) plus what the
    monitors of this benchmark read: the recipes, their official graphs and the labelled training recordings."""

    graphs: Mapping[str, G.RecipeGraph] = field(default_factory=dict)
    recipe_steps: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    recipes: tuple[str, ...] = ()  # recipe of each correct sequence
    labelled: tuple[Recording, ...] = ()  # every training recording, complete, labelled


def episode(rec: S.Annotated) -> str:
    return f"captaincook4d-{rec.recording}-{rec.recipe}"


def recipe_of(video: str) -> str:
    """The recipe in an episode's name (the recording's task)."""
    parts = str(video).split("-")
    if len(parts) != 3 or parts[0] != "captaincook4d":
        raise UserError(f"{video!r} is not a CaptainCook4D episode name (captaincook4d-<recording>-<recipe>)")
    return parts[2]


def _occurrence_nodes(g: G.RecipeGraph, steps: list[int]) -> list[int | None]:
    seen: Counter = Counter()
    out = []
    for s in steps:
        out.append(g.node(s, seen[s]))
        seen[s] += 1
    return out


def targets(g: G.RecipeGraph, done: list[int], skipped: list[int], rule: str = "graph") -> list[int]:
    """The row of each skipped step's omission (module docstring): the index into ``done`` (the steps done, in
    order) of the first step whose node has the skipped step's node as an ancestor, else ``len(done)`` (END)."""
    if rule == "end":
        return [len(done)] * len(skipped)
    nodes = _occurrence_nodes(g, done)
    count = Counter(done)
    out = []
    for s in skipped:
        n = g.node(s, count[s])  # the next unused occurrence of s (a repeat skipped after some done)
        count[s] += 1
        hit = next((i for i, m in enumerate(nodes) if n is not None and m is not None and n in g.ancestors[m]), None)
        out.append(len(done) if hit is None else hit)
    return out


def _kinds(s: S.Step) -> tuple[str, ...]:
    return tuple(MISSING_DONE if t == S.MISSING else t for t in s.tags)


def recording(src: S.Sources, g: G.RecipeGraph, rec: S.Annotated, rule: str = "graph") -> Recording:
    """One annotated recording as a labelled stream (module docstring)."""
    done = S.time_order(rec)
    skipped = [s.step_id for s in rec.steps if not s.done and S.MISSING in s.tags]
    optional = tuple(s.step_id for s in rec.steps if not s.done and not s.tags)
    tgt = targets(g, [s.step_id for s in done], skipped, rule)
    hit = Counter(tgt)
    labels, kinds, src_labels = [], [], []
    for i, s in enumerate(done):
        k = _kinds(s) + ((MISSING_HERE,) * bool(hit[i]))
        labels.append(int(S.ORDER in s.tags or bool(hit[i])))
        kinds.append(k)
        src_labels.append("errorful" if s.tags else "correct")
    n = len(done)
    labels.append(int(bool(hit[n])))
    kinds.append((END_KIND,) + ((MISSING_HERE,) * bool(hit[n])))
    src_labels.append("end")
    names = [src.descriptions[s.step_id] for s in done] + [END_NAME]
    times = [s.start for s in done] + [max((s.end for s in done), default=0.0)]
    return Recording(episode(rec), rec.recording, rec.recipe, tuple(s.step_id for s in done) + (END_ID,),
                     tuple(labels), tuple(src_labels), tuple(kinds), tuple(names), tuple(times),
                     tuple(zip(skipped, tgt)), optional)


def cut(rec: Recording) -> Recording | None:
    """The recording up to and including its first positive (None: it has none)."""
    first = next((i for i, y in enumerate(rec.labels) if y), None)
    if first is None:
        return None
    k = first + 1
    return Recording(rec.video, rec.recording, rec.recipe, rec.steps[:k], rec.labels[:k], rec.source_labels[:k],
                     rec.kinds[:k], rec.names[:k], rec.times[:k], tuple(x for x in rec.skipped if x[1] < k),
                     rec.optional_not_done)


def stream(src: S.Sources, graphs: Mapping[str, G.RecipeGraph], benchmark: str, split: str,
           rule: str = "graph") -> Stream:
    """The recordings of ``split`` as ``benchmark`` scores them, in the split file's order."""
    if benchmark not in BENCHMARKS:
        raise UserError(f"--benchmark {benchmark!r} is not one of {', '.join(BENCHMARKS)}")
    if rule not in MISSING_TARGETS:
        raise UserError(f"missing_target {rule!r} is not one of {', '.join(MISSING_TARGETS)}")
    recs = [recording(src, graphs[src.recordings[r].recipe], src.recordings[r], rule) for r in src.splits[split]]
    if benchmark == "captaincook4d-complete":
        return Stream(benchmark, split, tuple(recs), rule)
    kept = [(r, cut(r)) for r in recs]
    return Stream(benchmark, split, tuple(c for _, c in kept if c is not None), rule,
                  tuple(r.recording for r, c in kept if c is None))


def taxonomy(src: S.Sources) -> dict[int, str]:
    return {END_ID: END_NAME, **{i: src.descriptions[i] for ids in src.recipe_steps.values() for i in ids}}


def training(src: S.Sources, graphs: Mapping[str, G.RecipeGraph], rule: str = "graph") -> Training:
    """The training split: its correct recordings as the registered monitors' sequences, all of it labelled; one
    for both benchmarks (named :data:`TRAINING`)."""
    recs = [src.recordings[r] for r in src.splits["train"]]
    correct = [r for r in recs if not r.is_error and not any(s.tags for s in r.steps)]
    seqs = tuple(tuple(s.step_id for s in S.time_order(r)) + (END_ID,) for r in correct)
    labelled = tuple(recording(src, graphs[r.recipe], r, rule) for r in recs)
    return Training(TRAINING, seqs, taxonomy(src), tuple(episode(r) for r in correct), graphs=dict(graphs),
                    recipe_steps=dict(src.recipe_steps), recipes=tuple(r.recipe for r in correct), labelled=labelled)


@dataclass(frozen=True)
class Data:
    """Everything one benchmark run reads: training, validation and test."""

    benchmark: str
    sources: S.Sources
    graphs: Mapping[str, G.RecipeGraph]
    train: Training
    val: Stream
    test: Stream


def load(root: str | os.PathLike, benchmark: str, rule: str = "graph") -> Data:
    src, graphs = G.data_root_graphs(root)
    return Data(benchmark, src, graphs, training(src, graphs, rule),
                stream(src, graphs, benchmark, "val", rule), stream(src, graphs, benchmark, "test", rule))


def counts(s: Stream) -> dict:
    """What a stream holds: recordings, observations (steps and ENDs), positives and why, kinds."""
    rows = [(r, i) for r in s.recordings for i in range(len(r.steps))]
    kinds: Counter = Counter(k for r, i in rows for k in r.kinds[i])
    return {"recordings": len(s.recordings), "observations": len(rows),
            "steps": sum(1 for r, i in rows if r.steps[i] != END_ID), "ends": sum(1 for r in s.recordings
                                                                                 if r.steps[-1] == END_ID),
            "positives": sum(r.labels[i] for r, i in rows),
            "order_error_steps": sum(1 for r, i in rows if S.ORDER in r.kinds[i]),
            "skipped_steps": sum(len(r.skipped) for r in s.recordings),
            "skipped_on_end": sum(1 for r in s.recordings for _, t in r.skipped if t == len(r.steps) - 1
                                  and r.steps[-1] == END_ID),
            "rows_with_omission": sum(1 for r, i in rows if MISSING_HERE in r.kinds[i]),
            "optional_not_done": sum(len(r.optional_not_done) for r in s.recordings),
            "dropped_without_positive": len(s.dropped), "kinds": dict(sorted(kinds.items()))}
