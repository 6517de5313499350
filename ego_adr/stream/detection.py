"""When an alarm counts: HelpMeOut's M3 (first alarm against the first error) and the point-of-error F1 of
online mistake detection (PREGO), on video episodes in seconds.

**Errors and their times.** An erroneous segment ``[start, end]`` has its onset at ``start`` and is *due* by
``end``. An omitted step has its onset when it should have begun (``expected_start``) and is due when its time
had passed (``due``: the next step began, or the recording ended -- a *trailing* omission); EgoErrorVQA gives no
time for an omission (``-1``/``-1``), so there both are unknown and only the end can confirm it.

**End alarms.** An alarm of the end-of-recording check (``kind == "end"``) earns nothing unless the error it is
scored against is an omission (whose time has always passed at the end): against any other error it does not
count, and on a correct recording it is a false alarm. Window alarms (raised while watching, the last tick at
the recording's end included) count by their time. Without this rule a monitor that alarms at the end of every
recording is "on target" or "late" for errors in the last seconds (the stand-in videos end ~2 s after their last
segment) and its "delay" is the time to the end.

**M3** (HelpMeOut Section 3.4, Table 15; the verdict is the layer's
:func:`~ego_adr.monitoring.episode_metrics.first_alarm_outcome`, in seconds): the first error is the one with the
earliest known onset. Recordings whose first error is due before the end: the first counted alarm is *missed*
(none), *early* (before the onset), *on target* (onset .. due + tolerance) or *late*; detection delay = that
alarm - the onset (on target and late).
An omission first confirmed by the end check is credited (on target for a trailing omission, late for one due
earlier). *False alarm*: share of correct recordings with any alarm, the end check's included. Recordings with
an omission: share first alarmed at the end check / before it (Table 15's "Omission: end / before").

**Point-of-error F1** (PREGO, Flaborea et al., CVPR 2024, on Assembly101-O / Epic-tent-O: precision, recall and
F1 of the mistake class over the steps of each sequence). Units: every annotated segment (positive when
erroneous) and every omitted step (positive). A window alarm at ``t`` flags one unit whose interval
``(onset, due + tolerance]`` holds ``t`` -- an erroneous one when there is one (the earliest), else the correct
segment begun last; an alarm in unlabelled time flags none (counted apart). End alarms flag the recording's
omitted steps, one each, up to their number; each further end alarm claims a missing step that is not missing
(a false positive). TP / FP / FN pooled over recordings (micro, as PREGO pools sequences). PREGO cuts each
sequence after its first mistake; ``prego`` restricts the units to those begun by the first error's onset
(every unit of a correct recording), ``all`` keeps every step.
"""

from __future__ import annotations

import numpy as np

from ego_adr.monitoring.episode_metrics import detection_delay, first_alarm_outcome

EPS = 1e-6


def error_items(ep: dict) -> list[dict]:
    """Every annotated error with its onset and due time (``None`` where the data gives none)."""
    out = [
        {"kind": "segment", "onset": s["start"], "due": s["end"], "labels": s["labels"]}
        for s in ep["segments"]
        if s["error"]
    ]
    out += [
        {"kind": "omission", "onset": o.get("expected_start"), "due": o.get("due"), "labels": o["labels"]}
        for o in ep.get("omissions") or []
    ]
    return out


def first_error(ep: dict) -> dict | None:
    known = [e for e in error_items(ep) if e["onset"] is not None]
    return min(known, key=lambda e: (e["onset"], e["kind"] != "segment")) if known else None


def split_alarms(output: dict) -> tuple[list[dict], list[dict]]:
    alerts = sorted(output.get("alerts") or [], key=lambda a: a["t"])
    return [a for a in alerts if a["kind"] != "end"], [a for a in alerts if a["kind"] == "end"]


def m3_outcome(ep: dict, output: dict, tolerance: float) -> dict:
    """The M3 verdict of one recording: its group, outcome, delay and whether an end alarm went uncredited."""
    window, end = split_alarms(output)
    if ep["correct"]:
        return {"group": "correct", "outcome": "false_alarm" if window or end else "quiet"}
    om = {}
    if ep.get("omissions"):
        first_any = min(window + end, key=lambda a: (a["t"], a["kind"] == "end"), default=None)
        om = {
            "omission": "none" if first_any is None else ("end" if first_any["kind"] == "end" else "before")
        }
    f = first_error(ep)
    if f is None or f["due"] is None or (f["kind"] == "omission" and f["due"] >= output["duration"] - EPS):
        return {"group": "at_end", **om}  # only errors confirmed at the end: Table 15's omission columns
    counted = window + (end if f["kind"] == "omission" else [])
    first = min(counted, key=lambda a: a["t"], default=None)
    row = {
        "group": "before_end",
        "onset": f["onset"],
        "due": f["due"],
        "first_alarm": first and first["t"],
        "end_alarm_uncredited": bool(end) and f["kind"] != "omission",
        **om,
    }
    if first is None:
        return {**row, "outcome": "missed"}
    outcome = first_alarm_outcome(first["t"], f["onset"], f["due"], tolerance, EPS)
    delay = detection_delay(first["t"], f["onset"], outcome)
    return {**row, "outcome": outcome, "delay_s": None if delay is None else round(delay, 6)}


def _share(xs: list[dict], key: str, val) -> float:
    return sum(x.get(key) == val for x in xs) / len(xs) if xs else float("nan")


def m3_summary(outcomes: list[dict], tolerance: float) -> dict:
    main = [o for o in outcomes if o["group"] == "before_end"]
    correct = [o for o in outcomes if o["group"] == "correct"]
    oms = [o for o in outcomes if "omission" in o]
    delays = [o["delay_s"] for o in main if o.get("delay_s") is not None]
    share = _share
    out = {k: share(main, "outcome", k) for k in ("missed", "early", "on_target", "late")}
    out.update(
        {
            "false_alarm": share(correct, "outcome", "false_alarm"),
            "omission_end": share(oms, "omission", "end"),
            "omission_before": share(oms, "omission", "before"),
            "end_alarm_uncredited": share(main, "end_alarm_uncredited", True),
            "delay_mean_s": float(np.mean(delays)) if delays else float("nan"),
            "delay_median_s": float(np.median(delays)) if delays else float("nan"),
            "n_first_error_before_end": len(main),
            "n_correct_episodes": len(correct),
            "n_omission_episodes": len(oms),
            "tolerance_s": tolerance,
        }
    )
    return out


def _units(ep: dict, tolerance: float) -> list[dict]:
    units = [
        {
            "kind": "segment",
            "positive": s["error"],
            "start": s["start"],
            "lo": s["start"],
            "hi": s["end"] + tolerance,
        }
        for s in ep["segments"]
    ]
    for o in ep.get("omissions") or []:
        known = o.get("expected_start") is not None and o.get("due") is not None
        units.append(
            {
                "kind": "omission",
                "positive": True,
                "start": o.get("expected_start"),
                "lo": o.get("expected_start") if known else None,
                "hi": o["due"] + tolerance if known else None,
            }
        )
    return units


def _attribute(units: list[dict], t: float) -> dict | None:
    live = [u for u in units if u["lo"] is not None and u["lo"] < t <= u["hi"] + EPS]
    pos = [u for u in live if u["positive"]]
    if pos:
        return min(pos, key=lambda u: u["lo"])
    return max(live, key=lambda u: u["lo"], default=None)


def point_of_error(ep: dict, output: dict, tolerance: float, prego: bool = False) -> dict:
    """TP / FP / FN of one recording's steps (see the module docstring), with the delay of each caught error."""
    units = _units(ep, tolerance)
    f = first_error(ep)
    window, end = split_alarms(output)
    if prego and f is not None:  # the sequence stops at its first mistake
        units = [u for u in units if u["start"] is not None and u["start"] <= f["onset"] + EPS]
        if f["due"] is not None:
            window = [a for a in window if a["t"] <= f["due"] + tolerance + EPS]
        if f["kind"] != "omission":
            end = []
    flagged: dict[int, float] = {}
    unattributed = 0
    for a in window:
        u = _attribute(units, a["t"])
        if u is None:
            unattributed += 1
        else:
            flagged.setdefault(id(u), a["t"])
    oms = [u for u in units if u["kind"] == "omission"]
    free = [u for u in oms if id(u) not in flagged]
    for u, a in zip(free, end):  # one end alarm per omitted step
        flagged[id(u)] = a["t"]
    tp = sum(1 for u in units if u["positive"] and id(u) in flagged)
    fp = sum(1 for u in units if not u["positive"] and id(u) in flagged) + max(0, len(end) - len(oms))
    fn = sum(1 for u in units if u["positive"] and id(u) not in flagged)
    delays = [
        flagged[id(u)] - u["start"]
        for u in units
        if u["positive"] and id(u) in flagged and u["start"] is not None
    ]
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "units": len(units),
        "unattributed_alarms": unattributed,
        "delays": delays,
    }


def point_of_error_summary(rows: list[dict]) -> dict:
    tp, fp, fn = (sum(r[k] for r in rows) for k in ("tp", "fp", "fn"))
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else float("nan")
    delays = [d for row in rows for d in row["delays"]]
    return {
        "precision": p,
        "recall": r,
        "f1": f1,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "units": sum(row["units"] for row in rows),
        "unattributed_alarms": sum(row["unattributed_alarms"] for row in rows),
        "delay_median_s": float(np.median(delays)) if delays else float("nan"),
    }
