"""``report.html``: the evidence browser of one or more run folders -- a pure function of the folders (and
the videos their rows name, for thumbnails), like the metrics.

What a researcher does after a run is look: which samples flipped between two models, what the model saw when
it called a correct step "Wrong object", whether the matched step was the right one. So the page holds, per
sample, everything the row recorded: thumbnails of exactly the frames the model received (re-read by their
recorded indices, :mod:`ego_adr.eval.thumbs`), the procedure step, the matched step with score and method, the
narration, the raw reply, the answer and how it was extracted, the ground truth and the verdict (TP/FP/TN/FN,
from :func:`ego_adr.eval.scoring.score_row`, the one scoring rule -- never re-implemented here), the route, the
failure and its kind, the timings. Above the cards: report.md rendered (tables and plots) and a confusion
matrix whose cells filter the cards. With two or more runs the cards show the runs side by side and a
"flipped" filter finds samples right in one run and wrong in another.

The page is one file: no server, no network, no external script (``browser_assets/`` holds its CSS and JS).
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from ego_adr.eval.html_page import asset, markdown_to_html, page
from ego_adr.eval.mc import dedup_rows, is_open_end_rows, load_predictions
from ego_adr.eval.scoring import SCORED, score_row, screen
from ego_adr.eval.thumbs import DEFAULT_WIDTH, frame_key, read_thumbnails
from ego_adr.store import write_text

log = logging.getLogger(__name__)
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_TEXT_CAP = 4000  # characters kept of one raw model reply (a runaway generation should not fill the page)


def _cap(x):
    return x[:_TEXT_CAP] + " [...]" if isinstance(x, str) and len(x) > _TEXT_CAP else x


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _rows(run_dir: Path) -> tuple[list[dict], str]:
    """The folder's rows (one per sample, or per QA pair) and the task: ``mc`` or ``open``. Open-ended folders
    join each answer row (frames, timings) with its judgement row (scores) by (sample_id, qa_index)."""
    pred = run_dir / "predictions.jsonl"
    rows = dedup_rows(load_predictions(pred))  # FileNotFoundError names the file
    if not is_open_end_rows(rows):
        return rows, "mc"
    judged = run_dir / "judgements.jsonl"
    verdicts = {}
    if judged.is_file():
        verdicts = {(r.get("sample_id"), r.get("qa_index")): r for r in dedup_rows(load_predictions(judged))}
    return [{**r, **verdicts.get((r.get("sample_id"), r.get("qa_index")), {})} for r in rows], "open"


def _frames(row: dict) -> list[dict]:
    fi = row.get("frames_info") or {}
    if not isinstance(fi, dict) or not fi.get("path"):
        return []
    ts = fi.get("timestamps") or []
    return [
        {"k": frame_key(fi["path"], i), "i": int(i), "t": ts[n] if n < len(ts) else None}
        for n, i in enumerate(fi.get("indices") or [])
    ]


def _mc_view(row: dict) -> dict:
    """What one multiple-choice row shows: the verdict comes from the one scoring rule."""
    verdict, reason = screen(row)
    out: dict = {"verdict": verdict, "hit": None, "cm": None, "reason": reason}
    if verdict == SCORED:
        s = score_row(row)
        out.update(
            verdict=s["cell"].upper() if s["cell"] else "no answer",
            hit=bool(s["hit"]),
            cm=[s["cm_row"], s["cm_col"]],
            pred=s["pred"],
            cleaned=s["cleaned"],
            answer_from=s["answer_from"],
            reason=None,
        )
    st = row.get("stages") or {}
    cls = st.get("classification") or {}
    out.update(
        answer=row.get("answer"),
        extraction=row.get("extraction") or cls.get("method"),
        raw=_cap(row.get("raw")),
        narration=_cap(st.get("narration")),
        match=st.get("match"),
        evidence=cls.get("evidence"),
        bank=st.get("bank"),
    )
    return out


def _open_view(row: dict) -> dict:
    judges = {
        n: {k: _cap(j.get(k)) for k in ("score", "reason", "method", "error")}
        for n, j in (row.get("judges") or {}).items()
        if isinstance(j, dict)
    }
    has = isinstance(row.get("score"), (int, float))
    return {
        "verdict": "judged" if has else ("no answer" if row.get("error") else "no judge score"),
        "hit": None,
        "cm": None,
        "score": row.get("score"),
        "judges": judges,
        "answer": _cap(row.get("answer")),
        "question": row.get("question"),
        "reference": row.get("reference"),
    }


def _view(row: dict, task: str) -> dict:
    v = _mc_view(row) if task == "mc" else _open_view(row)
    fi = row.get("frames_info") if isinstance(row.get("frames_info"), dict) else {}
    v.update(
        route=row.get("route") or row.get("mode"),
        mode=row.get("mode"),
        failure=row.get("failure"),
        failure_kind=row.get("failure_kind") or ("sample" if row.get("failure") else None),
        timings=row.get("timings") or {},
        frames=_frames(row),
        frames_note={
            k: fi.get(k)
            for k in (
                "backend",
                "policy",
                "notes",
                "substitutions",
                "decoder_switches",
                "video_fps",
                "window",
            )
            if fi.get(k)
        },
    )
    return v


def _key(row: dict) -> str:
    return str(row.get("sample_id")) + (f"#q{row['qa_index']}" if row.get("qa_index") is not None else "")


def describe_run(run_dir: Path, letter: str) -> dict:
    """Label and settings line of a run folder, from its run.json (identity) -- nothing recomputed."""
    info = _json(run_dir / "run.json")
    ident = info.get("identity") or _json(run_dir / "identity.json")
    model = (info.get("model") or {}).get("id") or ident.get("model") or "?"
    bits = [
        str(ident.get("task") or "?"),
        f"model {Path(str(model)).name}",
        f"mode {ident.get('mode', '?')}",
        f"route {ident.get('route', '-')}",
        f"{ident.get('frames', '?')} frames",
        f"protocol {ident.get('protocol', '?')}",
    ]
    if isinstance(info.get("judges"), str):  # open-ended runs: which judges scored the answers
        bits.append(f"judges: {info['judges']}")
    return {"letter": letter, "name": run_dir.name, "dir": str(run_dir), "settings": ", ".join(bits)}


def _cm_block(metrics: dict) -> dict | None:
    cm = metrics.get("confusion_matrix")
    if not isinstance(cm, dict) or "counts" not in cm:
        return None
    from ego_adr.taxonomy import BY_OPTION

    ab = {o: BY_OPTION[o].abbrev for o in cm["labels"] if o in BY_OPTION}
    return {"labels": cm["labels"], "columns": cm["columns"], "counts": cm["counts"], "abbrev": ab}


def collect(run_dirs: list[Path], thumb_width: int = DEFAULT_WIDTH) -> dict:
    """The page's data: runs (label, settings, rendered report.md, confusion matrix), samples (shared fields +
    one view per run, ``None`` where a run lacks the sample) and the thumbnails they reference."""
    runs, per_run_rows, all_rows = [], [], []
    for k, d in enumerate(run_dirs):
        rows, task = _rows(d)
        letter = LETTERS[k % len(LETTERS)]
        metrics = _json(d / "metrics.json")
        md = d / "report.md"
        runs.append(
            {
                **describe_run(d, letter),
                "task": task,
                "n_rows": len(rows),
                "cm": _cm_block(metrics),
                "report": markdown_to_html(md.read_text(encoding="utf-8"), d) if md.is_file() else "",
            }
        )
        per_run_rows.append((rows, task))
        all_rows += rows
    samples: dict[str, dict] = {}
    for k, (rows, task) in enumerate(per_run_rows):
        for r in rows:
            key = _key(r)
            s = samples.get(key)
            if s is None:
                gt = r.get("ground_truth")
                s = samples[key] = {
                    "key": key,
                    "sample_id": r.get("sample_id"),
                    "source": r.get("source"),
                    "task_id": r.get("task_id"),
                    "video_id": r.get("video_id"),
                    "window": r.get("window"),
                    "action": r.get("action"),
                    "question": r.get("question"),
                    "reference": r.get("reference"),
                    "gt": gt if isinstance(gt, list) else ([gt] if gt else []),
                    "per": [None] * len(runs),
                }
            s["per"][k] = _view(r, task)
    thumbs, problems = read_thumbnails(all_rows, thumb_width)
    if problems:
        log.warning(
            "report.html: %d videos/frames without thumbnails (e.g. %s)",
            len(problems),
            next(iter(problems.items())),
        )
    return {
        "runs": runs,
        "samples": list(samples.values()),
        "thumbs": thumbs,
        "thumb_problems": problems,
        "thumb_width": thumb_width,
    }


def inputs_digest(run_dirs: list[Path], thumb_width: int, title: str | None = None) -> str:
    """What a page is made of: the folders' rows, report.md and identity, the settings and the page's own code.
    Equal digests mean an equal page, so a resumed run need not rebuild it (the videos are not hashed: a
    video replaced under the same path needs ``python -m ego_adr.eval view``, which always rebuilds)."""
    h = hashlib.sha256(f"{thumb_width}|{title}".encode())
    for name in ("report_body.html", "report.js", "page.css"):
        h.update(asset(name).encode())
    for d in run_dirs:
        h.update(str(d.resolve()).encode())
        for name in ("predictions.jsonl", "judgements.jsonl", "report.md", "identity.json"):
            p = d / name
            if p.is_file():
                with p.open("rb") as f:
                    for chunk in iter(lambda f=f: f.read(1 << 20), b""):
                        h.update(chunk)
    return h.hexdigest()[:20]


def render(data: dict, title: str | None = None, inputs: str = "") -> str:
    """The self-contained page for :func:`collect`'s data."""
    runs = data["runs"]
    if title is None:
        title = (
            ("ego_adr results: " + runs[0]["name"])
            if len(runs) == 1
            else "ego_adr comparison: " + " vs ".join(f"{r['letter']} {r['name']}" for r in runs)
        )
    body = asset("report_body.html")
    data_json = json.dumps(data, default=str, separators=(",", ":"))
    return page(title, body, script=asset("report.js"), data_json=data_json, inputs=inputs)


def write_report_html(
    run_dirs: list[str | Path], out: str | Path, thumb_width: int = DEFAULT_WIDTH, title: str | None = None
) -> Path:
    """Build the page for ``run_dirs`` and write it to ``out`` (folders created). Raises FileNotFoundError for
    a folder without predictions.jsonl."""
    dirs = [Path(d) for d in run_dirs]
    html_text = render(collect(dirs, thumb_width), title, inputs_digest(dirs, thumb_width, title))
    return write_text(out, html_text)


def write_run_report_html(run_dir: Path) -> Path | None:
    """What a run calls at its end: ``RUN_DIR/report.html``. A failure here is logged, never fatal -- the
    results are already on disk and ``python -m ego_adr.eval view`` can build the page again. A page made
    from the same inputs (a resumed run with nothing new) is kept as it is."""
    out = Path(run_dir) / "report.html"
    try:
        if out.is_file():
            with out.open(encoding="utf-8", errors="replace") as f:
                head = f.read(4096)
            if f'name="ego-adr-inputs" content="{inputs_digest([Path(run_dir)], DEFAULT_WIDTH)}"' in head:
                return out
        return write_report_html([run_dir], out)
    except Exception as e:  # noqa: BLE001 - the page is a convenience; the run's results stand without it
        log.warning(
            "could not write %s/report.html (%s: %s); rerun `python -m ego_adr.eval view %s`",
            run_dir,
            type(e).__name__,
            e,
            run_dir,
        )
        return None
