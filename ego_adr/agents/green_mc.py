"""Multiple choice in the green agent: ask each question, record the reply as the answer, score strictly.

Why it looks like this: the public green agent scores the first text part of the white agent's reply, stripped,
with the public rule (:mod:`ego_adr.eval.scoring`), and counts a sample whose reply could not be obtained (a
transport or JSON-RPC error, a Task instead of a Message, no text part, a missing video) in the total and in
no cell. Every row therefore stores ``answer`` (that stripped string, or ``None``), ``raw`` (the text as it
came), ``answer_from`` and ``failure``; ``prediction`` is the option the answer *is* under the strict rule (or
``None``). What ours adds: rows in the runner's format (resume-safe), a seeded per-source ``limit``, a lenient
reading shown beside the strict score, exclusions counted instead of crashing, and a summary that never fails.
"""

from __future__ import annotations

import os
from pathlib import Path

ANSWER_FROM = "white agent reply (first text part, stripped)"


def mc_row(s, white_url: str, reply, error: str | None, seconds: float, wording: str) -> dict:
    from ego_adr.eval.scoring import SCORING, strict_option

    text = getattr(reply, "text", None)
    kind = getattr(reply, "kind", None)
    failure = error
    if failure is None and kind == "task":
        failure = "white agent replied with a Task, not a Message (the public evaluator fails such a sample)"
    if failure is None and text is None:
        failure = "no text part in the reply"
    answer = text.strip() if failure is None and text is not None else None
    return {"sample_id": s.sample_id, "source": s.source, "task_id": s.task_id, "video_id": s.video_id,
            "window": [s.start, s.end], "action": s.action, "ground_truth": list(s.ground_truth),
            "answer": answer, "answer_from": ANSWER_FROM if answer is not None else "no answer",
            "prediction": strict_option(answer), "failure": failure, "raw": text, "route": "a2a", "mode": "a2a",
            "question_wording": wording, "scoring": SCORING,
            "white": {"url": white_url, "protocol": getattr(reply, "protocol", None), "kind": kind,
                      "metadata": getattr(reply, "metadata", None)},
            "timings": {"a2a_s": round(seconds, 4)}}


def questions(cfg, samples: list) -> tuple[dict[str, tuple[str, str]], str | None]:
    """``({sample_id: (message, video_path)}, guidance file or None)`` for the configured wording."""
    from ego_adr.agents.messages import mc_question, white_message
    from ego_adr.agents.public_mc import (
        GREEN_SOURCE,
        PUBLIC,
        find_public_root,
        public_messages,
        read_guidance,
    )

    if cfg.question_wording == PUBLIC:
        root = find_public_root(cfg.public_evaluator_root, cfg.json_root)
        msgs = public_messages(samples, cfg.json_root, cfg.video_root, cfg.procedure_json_path, read_guidance(root))
        return msgs, str(root / GREEN_SOURCE)
    return ({s.sample_id: (white_message(s.video_path, mc_question(s.procedure, s.action), s.start, s.end),
                           s.video_path or "") for s in samples}, None)


async def run_mc(client, sem, samples, messages, store, white_url, wording, progress, tqdm) -> None:
    import asyncio

    from ego_adr.agents.client import ask
    from ego_adr.agents.messages import ProtocolError

    # a folder holds answers to one wording only (rows written before the field existed used ours)
    other = {r.get("question_wording", "ego_adr") for r in store.rows()} - {wording}
    if other:
        raise ProtocolError(f"output_dir {store.path.parent} holds answers to questions worded {sorted(other)[0]!r}, "
                            f"not {wording!r}: use another output_dir, or question_wording {sorted(other)[0]!r}")
    done = store.done_ids()
    todo = [s for s in samples if s.sample_id not in done]
    bar = tqdm(total=len(todo), desc="a2a multiple-choice", unit="sample", disable=not progress)

    async def one(s):
        msg, path = messages[s.sample_id]
        if not path or not os.path.exists(path):
            row = mc_row(s, white_url, None, f"video not found: {path or '(no path)'}", 0.0, wording)
        else:
            reply, err, secs = await ask(client, sem, msg)
            row = mc_row(s, white_url, reply, err, secs, wording)
        store.append(row)
        bar.update(1)

    try:
        await asyncio.gather(*(one(s) for s in todo))
    finally:
        bar.close()


def score_mc(rows: list[dict], samples, out: Path, white_url: str, cfg, guidance_file: str | None) -> dict:
    from ego_adr.eval.mc import compute_mc_metrics
    from ego_adr.eval.report import exclusion_line, summary_table, write_metrics_json, write_report

    wanted = {s.sample_id for s in samples}
    rows = [r for r in rows if r.get("sample_id") in wanted]
    metrics = compute_mc_metrics(rows, sources=cfg.datasets)
    metrics["question_wording"] = cfg.question_wording
    metrics["guidance_file"] = guidance_file
    write_metrics_json(metrics, out)
    wording = (f"the public green agent's questions (guidance read from {guidance_file})" if guidance_file
               else "ego_adr's own question wording (question_wording 'ego_adr', not the public text)")
    write_report(metrics, out, title=f"Multiple-choice VQA over A2A: {white_url}",
                 notes=f"Answers collected by the ego_adr green agent with {wording}; each reply scored as the "
                       "public evaluator scores it (ego_adr.eval.scoring).")
    o, len_ = metrics["overall"], metrics["lenient"]
    lines = [summary_table(metrics), "",
             f"scoring {metrics['scoring']['name']}: TP {o['tp']}  FP {o['fp']}  TN {o['tn']}  FN {o['fn']}  "
             f"n {o['n']}  not an option {o['n_unparseable']}  no answer {o['n_failed']}",
             f"lenient reading (not the paper's protocol): Acc {100 * len_['accuracy']:.1f}  F1 "
             f"{100 * len_['f1']:.1f}  ({len_['n_lenient_only']} answers only it understands)"]
    for kind in ("excluded", "unscored"):
        if metrics[kind]["n"]:
            lines.append(f"{kind}: {exclusion_line(metrics[kind])}")
    if metrics["ci95_flags"].get("note"):
        lines.append(f"intervals flagged: {metrics['ci95_flags']['note']}")
    return {"metrics": metrics, "summary": "\n".join(lines), "output_dir": str(out)}
