"""The embedded demo set: synthetic procedural clips with known errors, in the EgoErrorVQA file layout.

Why: ``ego-adr`` must run end to end with no download (tests, CI, a first try), and the pipeline must see the
same shapes as the real benchmark -- several samples sharing one longer task video with per-step windows,
omission samples without a window (``-1``/``-1``, as in the public CaptainCook4D data), multiple-choice answers
as lists of exact option strings, open-ended QA pairs.

Each clip is a top-down view of a table: labelled coloured objects (kettle, cup, bread, ...) are picked up by a
"hand" marker and carried or used step by step, following the task's procedure from ``procedures/demo/*.yaml``.
A *run* says which steps are performed, in which order, and with which objects, so errors are injected by
construction: a swapped pair of steps (Wrong order), a step left out (Omission), a step done with another object
(Wrong object). Labels therefore follow from what is drawn, not from a guess.

Layout written under the root (read by the EgoErrorVQA loader)::

    annotations/procedure.json       {task_id: procedure paragraph}
    annotations/demo_answer.json     multiple-choice records (close_end_answer: list of options)
    annotations/demo_qa_pairs.json   the same records with qa_pairs instead of close_end_answer
    videos/demo/{video_id}.mp4       H.264, 320x240, 8 fps

The build is atomic (temporary folder, then rename) and versioned (``demo-v{VERSION}``; a stamp with a hash of
the procedures and :data:`VERSION` triggers a rebuild when either changes).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ego_adr.store import build_once, cache_root

VERSION = "1"
FPS = 8
SIZE = (320, 240)
PROCEDURE_DIR = Path(__file__).resolve().parents[2] / "procedures" / "demo"

# ---------------------------------------------------------------------------------------- scene definitions
# name -> (x, y, shape, RGB colour, (w, h) or radius, label). Shapes: "rect", "circle", "bar" (thin rect).
_LAYOUTS: dict[str, dict[str, tuple]] = {
    "demo_make_tea": {
        "tap": (38, 38, "rect", (150, 160, 170), (44, 30), "tap"),
        "base": (60, 188, "rect", (60, 60, 60), (44, 30), "base"),
        "kettle": (140, 52, "circle", (90, 140, 200), 20, "kettle"),
        "cup": (228, 140, "circle", (245, 245, 245), 17, "cup"),
        "tea bag": (280, 58, "rect", (150, 110, 60), (20, 16), "tea"),
        "sugar": (180, 205, "rect", (235, 235, 225), (28, 26), "sugar"),
        "salt": (240, 205, "rect", (210, 215, 235), (28, 26), "salt"),
        "spoon": (292, 150, "bar", (190, 190, 200), (8, 34), "spoon"),
    },
    "demo_make_sandwich": {
        "plate": (165, 125, "circle", (240, 240, 240), 42, "plate"),
        "bread": (48, 58, "rect", (215, 170, 100), (40, 36), "bread"),
        "second slice": (48, 118, "rect", (210, 165, 95), (40, 36), "bread"),
        "butter": (268, 46, "rect", (250, 225, 90), (30, 20), "butter"),
        "knife": (282, 186, "bar", (170, 170, 180), (8, 44), "knife"),
        "cheese": (100, 200, "rect", (250, 180, 40), (30, 28), "cheese"),
        "lettuce": (200, 205, "circle", (80, 170, 70), 15, "lettuce"),
        "spoon": (305, 110, "bar", (200, 200, 210), (8, 30), "spoon"),
    },
    "demo_make_cereal": {
        "placemat": (165, 130, "rect", (170, 60, 60), (90, 70), "mat"),
        "bowl": (55, 60, "circle", (230, 230, 240), 22, "bowl"),
        "cereal box": (262, 55, "rect", (220, 120, 40), (34, 44), "cereal"),
        "milk": (262, 190, "rect", (245, 245, 250), (28, 40), "milk"),
        "spoon": (55, 195, "bar", (190, 190, 200), (8, 34), "spoon"),
    },
}
# (task, step number 1-based) -> action kind and optional fill colour left in the last object.
# "move": the object stays at the last destination; "use": it visits the destinations and goes back.
_ACTS: dict[tuple[str, int], tuple[str, tuple | None]] = {
    ("demo_make_tea", 1): ("move", None),
    ("demo_make_tea", 2): ("move", None),
    ("demo_make_tea", 3): ("move", None),
    ("demo_make_tea", 4): ("use", (150, 90, 40)),
    ("demo_make_tea", 5): ("use", None),
    ("demo_make_tea", 6): ("use", (190, 130, 70)),
    ("demo_make_sandwich", 1): ("move", None),
    ("demo_make_sandwich", 2): ("use", None),
    ("demo_make_sandwich", 3): ("move", None),
    ("demo_make_sandwich", 4): ("move", None),
    ("demo_make_sandwich", 5): ("move", None),
    ("demo_make_sandwich", 6): ("use", None),
    ("demo_make_cereal", 1): ("move", None),
    ("demo_make_cereal", 2): ("use", (200, 140, 60)),
    ("demo_make_cereal", 3): ("use", (250, 250, 250)),
    ("demo_make_cereal", 4): ("move", None),
}


@dataclass
class _Run:
    """One recording: steps performed (1-based, in the order performed), object substitutions per step, and
    the samples annotated on it: (step, option, error description or None)."""

    video_id: str
    task_id: str
    steps: list[int]
    swaps: dict[int, dict[str, str]]
    samples: list[tuple[int, str, str | None]]


_RUNS = [
    _Run("tea_01", "demo_make_tea", [1, 2, 3, 4, 5, 6], {5: {"sugar": "salt"}},
         [(1, "correct", None), (3, "correct", None), (4, "correct", None),
          (5, "Wrong object", "Salt was spooned into the cup instead of sugar.")]),
    _Run("tea_02", "demo_make_tea", [1, 3, 4, 2, 5], {},
         [(4, "Wrong order", "The water was poured into the cup before the kettle was put on its base and "
                             "switched on, so the tea was made with cold water."),
          (5, "correct", None),
          (6, "Omission", "The tea was never stirred with the spoon.")]),
    _Run("sandwich_01", "demo_make_sandwich", [1, 2, 3, 4, 5, 6], {2: {"knife": "spoon"}},
         [(1, "correct", None),
          (2, "Wrong object", "The butter was spread with a spoon instead of the knife."),
          (3, "correct", None), (6, "correct", None)]),
    _Run("sandwich_02", "demo_make_sandwich", [1, 2, 3, 5, 6], {},
         [(4, "Omission", "No lettuce leaf was added; the sandwich was closed right after the cheese."),
          (5, "correct", None)]),
    _Run("cereal_01", "demo_make_cereal", [1, 3, 2, 4], {},
         [(3, "Wrong order", "The milk was poured into the bowl before the cereal."), (4, "correct", None)]),
    _Run("cereal_02", "demo_make_cereal", [2], {}, [(2, "correct", None)]),
]


# ------------------------------------------------------------------------------------------------ renderer
class _Scene:
    REACH, TRAVEL, DWELL, RELEASE, PAUSE = 1.25, 1.5, 1.25, 0.5, 0.75  # seconds
    REST = (300.0, 232.0)

    def __init__(self, task_id: str, fps: int = FPS, size: tuple[int, int] = SIZE):
        import cv2

        self.cv2, self.fps, self.size = cv2, fps, size
        self.layout = _LAYOUTS[task_id]
        self.pos = {k: (float(v[0]), float(v[1])) for k, v in self.layout.items()}
        self.z = {k: i for i, k in enumerate(self.layout)}
        self.fill: dict[str, tuple] = {}
        self.hand = self.REST
        self.held: str | None = None
        self.frames: list[np.ndarray] = []
        w, h = size
        bg = np.empty((h, w, 3), np.uint8)
        bg[:] = (150, 110, 75)  # a wooden table
        for y in range(0, h, 12):
            bg[y : y + 1] = (135, 98, 66)
        self.bg = bg

    @property
    def now(self) -> float:
        return len(self.frames) / self.fps

    def _draw(self) -> np.ndarray:
        f = self.bg.copy()
        for name in sorted(self.layout, key=lambda k: self.z[k]):
            if name != self.held:
                self._draw_object(f, name)
        self._draw_hand(f)
        if self.held:  # on top of the hand, so the carried object stays visible
            self._draw_object(f, self.held)
        return f

    def _draw_object(self, f: np.ndarray, name: str) -> None:
        cv2 = self.cv2
        x, y = (int(round(c)) for c in self.pos[name])
        _, _, shape, colour, dims, label = self.layout[name]
        if shape == "circle":
            cv2.circle(f, (x, y), dims, colour, -1, cv2.LINE_AA)
            cv2.circle(f, (x, y), dims, (40, 40, 40), 1, cv2.LINE_AA)
            if name in self.fill:
                cv2.circle(f, (x, y), max(3, dims - 5), self.fill[name], -1, cv2.LINE_AA)
            ly = y + dims + 9
        else:
            dw, dh = dims
            cv2.rectangle(f, (x - dw // 2, y - dh // 2), (x + dw // 2, y + dh // 2), colour, -1)
            cv2.rectangle(f, (x - dw // 2, y - dh // 2), (x + dw // 2, y + dh // 2), (40, 40, 40), 1)
            ly = y + dh // 2 + 9
        cv2.putText(f, label, (x - 4 * len(label), ly), cv2.FONT_HERSHEY_SIMPLEX, 0.33, (20, 20, 20), 1,
                    cv2.LINE_AA)

    def _draw_hand(self, f: np.ndarray) -> None:
        cv2 = self.cv2
        hx, hy = (int(round(c)) for c in self.hand)
        cv2.line(f, (hx, hy), (min(self.size[0] - 1, hx + 45), self.size[1] - 1), (200, 150, 120), 9, cv2.LINE_AA)
        cv2.circle(f, (hx, hy), 11, (235, 180, 150), -1, cv2.LINE_AA)
        cv2.circle(f, (hx, hy), 11, (120, 70, 50), 1, cv2.LINE_AA)

    def go(self, dest: tuple[float, float], seconds: float, wiggle: bool = False) -> None:
        n = max(1, round(seconds * self.fps))
        x0, y0 = self.hand
        for k in range(1, n + 1):
            a = 0.5 - 0.5 * math.cos(math.pi * k / n)  # ease in and out
            x, y = x0 + (dest[0] - x0) * a, y0 + (dest[1] - y0) * a
            if wiggle:
                x += 7 * math.sin(2 * math.pi * 2 * k / n)
                y += 3 * math.sin(2 * math.pi * 3 * k / n)
            self.hand = (x, y)
            if self.held:
                self.pos[self.held] = (x, y)
            self.frames.append(self._draw())

    def hold(self, seconds: float) -> None:
        self.go(self.hand, seconds)

    def step(self, kind: str, objects: list[str], fill: tuple | None) -> tuple[float, float]:
        """Perform one step; returns its (start, end) in seconds."""
        start = self.now
        thing, dests = objects[0], objects[1:]
        home = self.pos[thing]
        self.go(self.pos[thing], self.REACH)
        self.held = thing
        self.z[thing] = max(self.z.values()) + 1
        for d in dests:
            tx, ty = self.pos[d]
            target = (tx + 10, ty - 8) if kind == "use" else (tx, ty)
            self.go(target, self.TRAVEL)
            if kind == "use":
                self.go(target, self.DWELL, wiggle=True)
        if fill is not None and dests:
            self.fill[dests[-1]] = fill
        if kind == "use":
            self.go(home, self.TRAVEL)
        self.hold(self.RELEASE)
        self.held = None
        end = self.now
        self.go((self.hand[0] + 25, self.hand[1] + 20), self.PAUSE)
        return start, end


def _render_run(run: _Run, procedure: dict) -> tuple[list[np.ndarray], dict[int, tuple[float, float, list]]]:
    scene = _Scene(run.task_id)
    scene.hold(1.0)
    windows = {}
    for no in run.steps:
        objs = [run.swaps.get(no, {}).get(o, o) for o in procedure["steps"][no - 1]["objects"]]
        kind, fill = _ACTS[(run.task_id, no)]
        s, e = scene.step(kind, objs, fill)
        windows[no] = (s, e, objs)
    scene.go(scene.REST, 1.0)
    return scene.frames, windows


# ------------------------------------------------------------------------------------------------- builder
def load_procedures(folder: Path = PROCEDURE_DIR) -> dict[str, dict]:
    """task_id -> the parsed YAML of each demo task."""
    import yaml

    if not folder.is_dir():
        raise FileNotFoundError(
            f"demo procedures not found at {folder}; the embedded demo needs the repository checkout "
            "(install with `pip install -e .`)"
        )
    out = {}
    for p in sorted(folder.glob("*.yaml")):
        d = yaml.safe_load(p.read_text())
        out[str(d["task_id"])] = d
    return out


def _fingerprint(procs: dict[str, dict]) -> str:
    h = hashlib.sha256(VERSION.encode())
    h.update(json.dumps(procs, sort_keys=True).encode())
    h.update(repr(_RUNS).encode() + repr(_LAYOUTS).encode() + repr(_ACTS).encode())
    return h.hexdigest()[:16]


def _qa(step_text: str, label: str, desc: str | None, objs: list[str] | None) -> list[dict]:
    step = step_text[0].lower() + step_text[1:]
    if label == "Omission":
        return [{"question": "Did I skip any step of the procedure?",
                 "answer": f"Yes, I skipped the step: {step}. {desc}"}]
    verdict = "No, the step was done correctly." if label == "correct" else f"Yes. {desc}"
    qas = [{"question": f"Did I make a mistake when I tried to {step}?", "answer": verdict}]
    if objs and len(objs) > 1:
        used = " and then to the ".join(objs[1:])
        qas.append({"question": "Which object did I pick up, and where did I take it?",
                    "answer": f"I picked up the {objs[0]} and took it to the {used}."})
    return qas


def _build(dest: Path, procs: dict[str, dict]) -> None:
    from ego_adr.video.synth import write_video

    (dest / "annotations").mkdir(parents=True)
    vdir = dest / "videos" / "demo"
    vdir.mkdir(parents=True)
    mc, oe = [], []
    for run in _RUNS:
        proc = procs[run.task_id]
        frames, windows = _render_run(run, proc)
        write_video(vdir / f"{run.video_id}.mp4", frames, FPS, codec="h264")
        for no, label, desc in run.samples:
            text = proc["steps"][no - 1]["text"]
            if no in windows:
                s, e, objs = windows[no]
                start, end = round(s, 3), round(e, 3)
            else:  # omission: no segment, like the public data
                start = end = -1
                objs = None
            rec = {"video_id": run.video_id, "task_id": run.task_id, "start_time": start, "end_time": end,
                   "action_annotation": text, "is_error": label != "correct",
                   "error_description": desc}
            mc.append({**rec, "close_end_answer": [label]})
            oe.append({**rec, "qa_pairs": _qa(text, label, desc, objs)})
    ann = dest / "annotations"
    (ann / "procedure.json").write_text(json.dumps({k: v["procedure"] for k, v in procs.items()}, indent=1))
    (ann / "demo_answer.json").write_text(json.dumps(mc, indent=1))
    (ann / "demo_qa_pairs.json").write_text(json.dumps(oe, indent=1))


def ensure_demo(root: str | os.PathLike | None = None) -> Path:
    """Build the demo set once and return its root (``<root or the cache root>/demo-v{VERSION}``).

    Idempotent: an existing build with the same stamp is returned as is (no work). Atomic
    (:func:`ego_adr.store.build_once`), so an interrupted build is never seen as complete.
    """
    procs = load_procedures()
    stamp = _fingerprint(procs)

    def build(dest: Path) -> None:
        _build(dest, procs)
        (dest / "STAMP").write_text(stamp + "\n")

    def current(folder: Path) -> bool:
        return (folder / "STAMP").is_file() and (folder / "STAMP").read_text().strip() == stamp

    parent = Path(root) if root is not None else cache_root()
    return build_once(parent / f"demo-v{VERSION}", build, current)


def demo_paths(root: str | os.PathLike | None = None) -> tuple[Path, Path]:
    """``(data_root, video_root)`` of the built demo set: the annotation folder and the folder holding
    ``demo/{video_id}.mp4``."""
    r = ensure_demo(root)
    return r / "annotations", r / "videos"
