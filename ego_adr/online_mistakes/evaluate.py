"""``python -m ego_adr.monitoring evaluate --benchmark assembly101-o|epic-tent-o``: one monitor (or ``all``) over
one stream of a cut step-stream benchmark, on the one harness (:mod:`ego_adr.monitoring.harness`;
:class:`CutStreams` is its driver).

Order of work, so that a bad input never leaves anything in ``--out``: the flags that need no data (output and
cache folders writable, device, model name, monitor), then the ``--stream`` file's syntax, then the data root
(training and test files, the stream's video keys and step ids), and only then the output folder is claimed
(:func:`ego_adr.folders.claim`: the same settings resume -- a finished monitor folder is read back, not redone --
other settings refuse in one line), then the model is loaded (only when a monitor that needs one will run) and
results are written.

``--monitor all`` runs every registered monitor into ``OUT/<monitor>/`` (each folder as a single run would write
it) and writes ``OUT/summary.json`` (one row per monitor: name, privileged, blind, reference, every metric and its
interval; the monitor chosen without the test, :mod:`.selection` over its outer-fold seeds (``--selection-seeds``,
default :data:`.selection.OUTER_SEEDS`), and how; position's ceiling; the goal rows, :mod:`.goal`; the reference
rules' alarm agreement with the chosen monitor) and ``OUT/summary.md``, which leads with the chosen monitor; a
monitor that needs a model runs only when ``--model`` is given and is listed as not run otherwise. Every report
prints the blind baselines and reference rules of its stream (:func:`references`), with each rule's agreement with
the report's monitor. The training set every fit of a run is given is the one
:func:`~ego_adr.online_mistakes.fitting.configured` makes for its stream (the run's own fits, the nested selection's
and the reference rows').
A monitor's options come as ``--monitor-option KEY=VALUE`` and are checked against what the monitor declares
(:meth:`ego_adr.monitoring.registry.Registry.options`); PREGO's older flags (``--decoding``, ``--samples``,
``--temperature``, ``--max-new-tokens``) are aliases of its options. With ``--monitor all`` an option goes to
every monitor that takes it, and one that no monitor takes is refused. The resolved options (defaults filled in)
are part of each folder's identity and of its ``metrics.json``.

``--partial`` scores a ``--stream FILE`` that covers only some test videos: the covered ones are scored, the
others listed (``unscored_videos``), nothing invented for them; ``coverage`` says how many of the benchmark's
test videos were scored, and no goal line compares such a run with a published row over the whole test set.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.monitoring.driver import MonitorResult
from ego_adr.monitoring.harness import monitors_to_run
from ego_adr.monitoring.step_metrics import COUNT_KEYS, METRIC_KEYS, RANK_KEYS
from ego_adr.online_mistakes.data import cut as D
from ego_adr.online_mistakes.driver import TIMING, Settings, StepStreams, timing_apart
from ego_adr.online_mistakes.fitting import HARNESS_VERSION, configured, result, run_monitor
from ego_adr.online_mistakes.goal import agreement
from ego_adr.online_mistakes.registry import BLIND, REFERENCE, REGISTRY
from ego_adr.online_mistakes.report import monitor_report, summary_markdown
from ego_adr.online_mistakes.types import TrainingSet
from ego_adr.store import write_json, write_text


@dataclass(frozen=True)
class CutData:
    """A cut benchmark's splits as a run reads them: the training set (:func:`configured` for the stream), the
    stream to score, the data's fingerprint, and the references every report prints (:func:`references`)."""

    train: TrainingSet
    stream: D.Stream
    fingerprint: dict
    refs: tuple


def references(train, stream) -> tuple[list[dict], dict, dict[str, list[dict]]]:
    """The blind baselines' and reference rules' results on ``stream`` (each table prints them), position's
    ceiling -- ``position`` with k picked on this very stream, computed here for the tables and never used to choose
    anything -- and the reference rules' per-step rows (each monitor's agreement with them)."""
    from ego_adr.monitoring.step_metrics import intervals, scored
    from ego_adr.online_mistakes.monitors.baselines import position_ceiling

    rules, rule_rows = [], {}
    for name in (*BLIND, *REFERENCE):
        rows, monitor = run_monitor(name, train, stream)
        rules.append(result(name, train, stream, rows, monitor))
        if name in REFERENCE:
            rule_rows[name] = rows
    ks, rows = position_ceiling([r for rec in stream.recordings for r in
                                 ({"episode": rec.video, "index": t, "label": y} for t, y in enumerate(rec.labels))])
    return rules, scored(rows) | {"intervals": intervals(rows), "k": ks, "stream": stream.name,
                                  "monitor": "position (k picked on the test)"}, rule_rows


class CutStreams(StepStreams):
    """Assembly101-O and EPIC-Tent-O on the harness (module docstring)."""

    def check(self, s, names: list[str], options: dict[str, dict]) -> None:
        from ego_adr.online_mistakes.data.complete import COMPLETE

        super().check(s, names, options)
        if s.own.corrections is not None:
            raise UserError(f"--corrections applies to {', '.join(COMPLETE.names())} (every step of whole recordings); "
                            f"{s.benchmark} scores each recording up to its first mistake, where there is no "
                            "correction")

    def load(self, s) -> CutData:
        own: Settings = s.own
        if own.stream not in D.STREAMS and not Path(own.stream).is_file():
            raise UserError(f"--stream {own.stream!r} is neither one of {', '.join(D.STREAMS.names())} nor a predictions "
                            "file")
        parsed = None if own.stream in D.STREAMS else D.parse_predictions(own.stream)
        train = D.load_training(own.data_root, s.benchmark)
        if not train.sequences and any(REGISTRY.get(n).trains for n in monitors_to_run(REGISTRY, s.monitor)):
            raise UserError(f"--data-root {own.data_root}: {D.spec(s.benchmark).files()['train']} holds no "
                            f"training sequence, and --monitor {s.monitor} trains on them; {D.DOWNLOAD_HINT}")
        stream = D.load_stream(own.data_root, s.benchmark, own.stream, parsed, partial=own.partial)
        train = configured(train, stream.name)  # every fit of this run, the nested selection's too, gets the stream's
        return CutData(train, stream, D.data_fingerprint(own.data_root, s.benchmark), references(train, stream))

    def check_data(self, s, data: CutData, names: list[str], options: dict[str, dict]) -> None:
        self.check_inputs(s, data.train, names, options)
        for note in data.stream.notes:
            print(f"note: {note}")

    def identity(self, s, data: CutData, monitor, options: dict[str, dict], former: bool = False) -> dict:
        """What a folder holds: one monitor's results (``monitor``: its name, the same whether run alone or by
        ``all``), or the summary of several (``monitor``: the list; the identity holds the monitors and options as
        asked, :meth:`~ego_adr.online_mistakes.driver.StepStreams.asked`; ``former``: as main spelled it before
        issue 46, the resolved list and every monitor's resolved options)."""
        stream = data.stream
        ident = {"command": "monitoring evaluate", "benchmark": s.benchmark, "stream": stream.name,
                 "stream_sha256": stream.sha256, **{f"{k}_sha256": v for k, v in data.fingerprint.items()},
                 "harness_version": HARNESS_VERSION, "validation_noise": dict(data.train.noise)}
        names = [monitor] if isinstance(monitor, str) else list(monitor)
        if isinstance(monitor, str):  # one key per option, so a refusal names the option that differs
            ident["monitor"] = monitor
            ident.update({f"option.{k}": v for k, v in options[monitor].items()})
        else:
            asked, given = self.asked(s, names)
            ident["monitors"] = names if former else asked
            ident["options"] = {n: options[n] for n in names} if former else given
            ident["selection_seeds"] = list(self.seeds(s))
        if stream.coverage["scored"] < stream.coverage["benchmark"]:
            ident["coverage"] = stream.coverage
        return ident | self.model_keys(s, names)

    def run_monitor(self, s, data: CutData, name: str, options: dict, prepared, out: Path) -> MonitorResult:
        import json

        needs = REGISTRY.get(name).needs_model
        kw = {"data_root": s.own.data_root, **options, **({"model": prepared} if needs else {})}
        t0 = time.perf_counter()
        rows, monitor = run_monitor(name, data.train, data.stream, progress=needs and not s.quiet, **kw)
        res, timing = timing_apart(result(name, data.train, data.stream, rows, monitor, options),
                                   round(time.perf_counter() - t0, 3))
        rules, ceiling, rule_rows = data.refs
        for key, names in (("blind_baselines", BLIND), ("reference_rules", REFERENCE)):
            res[key] = {b["monitor"]: {k: b[k] for k in ("macro_f1", "balanced_f1")} for b in rules
                        if b["monitor"] in names}
        res["position_ceiling"] = {k: {"k": ceiling["k"][k], "value": ceiling[k]} for k in ceiling["k"]}
        res["reference_agreement"] = {r: agreement(rows, rr) for r, rr in rule_rows.items() if r != name}
        files = {f: json.dumps(d, indent=1, ensure_ascii=False, default=str)
                 for f, d in (getattr(monitor, "files", None) or {}).items()}
        return MonitorResult(name, res, rows, monitor_report(res, rules, ceiling), files | {TIMING: timing})

    def said(self, s, result: MonitorResult, out: Path) -> None:
        if not s.quiet:
            res = result.metrics
            top1 = (res.get("next_step_top1") or {}).get("accuracy")
            extra = f"  auroc {res['auroc']:.3f}  next-step top-1 {top1:.3f}" if top1 is not None else ""
            cells = "  ".join(f"{k} {res[k]:.3f}" for k in METRIC_KEYS)
            print(f"{res['monitor']:<16} {cells}{extra}  -> {out}")

    def finish(self, s, data: CutData, results: list[MonitorResult], out: Path, not_run: list[str], prepared,
               beside=None) -> None:
        """``summary.json`` and ``summary.md`` of ``--monitor all``: the monitor chosen without the test
        (:mod:`.selection`, on the training recordings alone) leads; every row carries its intervals."""
        from ego_adr.online_mistakes.goal import goal

        (sel, timing), stream, ceiling = self.selection(s, data, beside or []), data.stream, data.refs[1]
        metrics = [r.metrics for r in results]
        keys = (*METRIC_KEYS, *RANK_KEYS, *COUNT_KEYS)
        rows = [{"monitor": m["monitor"], "privileged": m["privileged"], "blind": m["monitor"] in BLIND,
                 "reference": m["monitor"] in REFERENCE,
                 **{k: m[k] for k in keys}, "intervals": m["intervals"]} for m in metrics]
        goals = goal(metrics, s.benchmark, stream.name, sel["chosen"], ceiling, sel["seeds"])
        agree = next((m.get("reference_agreement") for m in metrics if m["monitor"] == sel["chosen"]), None)
        summary = {"benchmark": s.benchmark, "stream": stream.name, "stream_sha256": stream.sha256,
                   "coverage": stream.coverage, "unscored_videos": list(stream.unscored),
                   "chosen_on_validation": sel["chosen"], "selection": sel, "rows": rows,
                   "position_ceiling": {k: {"k": ceiling["k"][k], "value": ceiling[k],
                                            "interval": ceiling["intervals"].get(k)} for k in ceiling["k"]},
                   "not_run": list(not_run), "goal": goals, "reference_agreement": agree}
        write_text(out / "summary.md", summary_markdown(metrics, s.benchmark, stream.name, summary["not_run"],
                                                        goals, sel, ceiling, agree))
        write_json(out / "summary.json", summary)
        write_json(out / TIMING, timing)
        if not s.quiet:
            print(f"-> {out}/summary.json, summary.md" + (f" (not run: {', '.join(not_run)})" if not_run else ""))
