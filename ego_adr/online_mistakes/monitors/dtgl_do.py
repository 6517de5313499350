"""``dtgl-do``: DTGL's Direct Optimisation (DO) task graph and its online precondition check (Seminara et al.,
NeurIPS 2024, Sec. 3 and 4.3; Table 3's DO* and DO+ rows) as a step-stream monitor, in our own code of its
published method and settings: training in :mod:`.dtgl_train`, the graph and the check in :mod:`.dtgl_graph`.

**Which config.** DTGL trains one graph per published row from the configs of its repository (commit 536aaa7):
EPIC-Tent-O's DO* and DO+ rows both read ``EPIC-Tent-O/DO.yaml`` (early stopping at 0.97); Assembly101-O's DO* row
(oracle steps) reads ``DO-without-early-stopping.yaml`` (1,200 epochs) and its DO+ row (MiniRoad's recognised
steps) ``DO-with-early-stopping.yaml`` (mask, early stopping at 0.79). ``config="auto"`` (the default) follows
that from what the training set says the run's steps are (``TrainingSet.steps``, set by
:func:`ego_adr.online_mistakes.fitting.configured` for every fit of a run, the nested selection's and the complete
trials' included): the early-stopping config for a recogniser's steps (``miniroad`` or a predictions file), the
other for the annotated steps (``oracle``, ``oracle-merged``, a complete benchmark's ``oracle``);
``config=early-stopping`` / ``no-early-stopping`` picks one on any stream (Assembly101-O only; EPIC-Tent-O has one
config). Another data set gets the settings all DTGL's DO configs share, without early stopping (its threshold is
set per data set). The config's seed is 42; ``seed`` replaces it (DTGL's ``--seed``), seeding ``torch.manual_seed``
and ``np.random.seed`` as DTGL does. ``config``, ``seed`` and ``precision`` are the monitor's declared options
(:data:`DtglDo.OPTIONS`, ``--monitor-option KEY=VALUE``).

**Nothing chosen by us**, and nothing chosen on a test file: beta, epochs, learning rate, early stopping, mask and
threshold are the configs'. ``precision="float32"`` trains in DTGL's precision (default float64: the same graph on
any thread count; recorded as a deviation).

**Cache.** Training is deterministic, so the trained matrix is stored once under the cache root
(``dtgl-do/<key>/graph.json``, :func:`ego_adr.store.build_once`); the key is the digest of the training sequences
and taxonomy, the config, the seed, the precision and :data:`CODE_VERSION`. A second run trains nothing.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np

from ego_adr.errors import UserError
from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.monitoring.registry import MonitorOption
from ego_adr.online_mistakes.monitors import dtgl_graph as G
from ego_adr.online_mistakes.monitors import dtgl_train as T
from ego_adr.online_mistakes.types import ORACLE_STEPS, StepContext, TrainingSet

CODE_VERSION = "3"  # bump when training or the graph rules change: older cached graphs are then not reused
CONFIG_CHOICES = ("auto", "early-stopping", "no-early-stopping")
PRECISIONS = ("float64", "float32")


def resolve_config(benchmark: str, steps: str, config: str = "auto") -> tuple[str, T.DoConfig]:
    """The DTGL config of the published row for ``benchmark`` and its ``steps`` (``oracle`` or ``recognised``,
    :data:`~ego_adr.online_mistakes.types.ORACLE_STEPS`; module docstring)."""
    if config not in CONFIG_CHOICES:
        raise UserError(f"dtgl-do config {config!r} is not one of {', '.join(CONFIG_CHOICES)}")
    if benchmark == "epic-tent-o":
        if config == "no-early-stopping":
            raise UserError("dtgl-do config no-early-stopping exists for assembly101-o only (DTGL's EPIC-Tent-O "
                            "has one DO config, with early stopping); use config=auto")
        name = "epic-tent-o/early-stopping"
    elif benchmark == "assembly101-o":
        if config == "auto":
            config = "no-early-stopping" if steps == ORACLE_STEPS else "early-stopping"
        name = f"assembly101-o/{config}"
    elif config == "early-stopping":
        raise UserError(f"dtgl-do config early-stopping: DTGL sets its threshold per data set and has none for "
                        f"{benchmark!r}; use config=auto")
    else:
        name = "other/no-early-stopping"
    return name, T.CONFIGS[name]


def config_deviation(benchmark: str) -> list[str]:
    """What a benchmark without a DTGL config gets instead (recorded in ``deviations``)."""
    if benchmark in ("assembly101-o", "epic-tent-o"):
        return []
    return [f"no DTGL config for {benchmark!r}: the settings all of DTGL's DO configs share, without early stopping "
            "(its thresholds are set per data set)"]


def data_digest(train: TrainingSet) -> str:
    doc = {"sequences": [list(s) for s in train.sequences], "taxonomy": [[int(k), v] for k, v in train.taxonomy.items()]}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()


def cache_key(train: TrainingSet, cfg: T.DoConfig, seed: int, precision: str) -> str:
    doc = {"data": data_digest(train), "config": cfg.key(), "seed": seed, "precision": precision,
           "code": CODE_VERSION}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:20]


def trained(train: TrainingSet, cfg: T.DoConfig, seed: int, precision: str = "float64") -> tuple[dict, bool]:
    """The trained matrix and its training record, from the cache or trained now (then stored); whether it was
    trained now."""
    from ego_adr.store import build_once, cache_root, write_json

    final = cache_root() / "dtgl-do" / cache_key(train, cfg, seed, precision)
    did: list[bool] = []

    def build(dest: Path) -> None:
        import networkx  # noqa: F401 - imported before the clock starts: train_seconds is the training alone
        import torch  # noqa: F401

        with T.deterministic():  # its first use imports more of torch (seconds): not training time either
            pass
        t0 = time.perf_counter()
        data = T.prepare(train.sequences, list(train.taxonomy))
        rec = T.train(data, cfg, seed, float32=precision == "float32")
        rec["train_seconds"] = round(time.perf_counter() - t0, 3)
        rec["config"], rec["seed"], rec["precision"], rec["code"] = cfg.key(), seed, precision, CODE_VERSION
        write_json(dest / "graph.json", rec)
        did.append(True)

    build_once(final, build, lambda f: (f / "graph.json").is_file())
    return json.loads((final / "graph.json").read_text()), bool(did)


class DtglDo(Monitor):
    """DTGL's DO graph fitted on the training sequences, then DTGL's precondition check over each recording."""

    OPTIONS = (
        MonitorOption("config", str, "auto", "DTGL's DO config: auto follows the steps (annotated: DO*'s, a "
                      "recogniser's: DO+'s); early-stopping / no-early-stopping pick one (Assembly101-O)",
                      CONFIG_CHOICES),
        MonitorOption("seed", int, None, "DTGL's --seed (default None: the config's seed, 42)"),
        MonitorOption("precision", str, "float64", "float64 (default: the same graph on any thread count; a "
                      "named deviation) or float32 (DTGL's)", PRECISIONS),
    )

    @classmethod
    def check_inputs(cls, train: TrainingSet, data_root, options: dict) -> None:
        """A config the benchmark has no DTGL file for is refused before anything is written."""
        resolve_config(train.benchmark, train.steps, options.get("config") or "auto")

    def __init__(self, seed: int | None = None, config: str = "auto", precision: str = "float64") -> None:
        if precision not in PRECISIONS:
            raise UserError(f"dtgl-do precision {precision!r} is not one of {', '.join(PRECISIONS)}")
        self.seed, self.config, self.precision = seed, config, precision
        self.deviations = [] if precision == "float32" else [
            "precision=float64: DTGL trains in float32; we train in float64 on one thread with deterministic "
            "algorithms so the graph does not depend on the thread count (precision=float32 follows DTGL)"]

    def fit(self, train: TrainingSet) -> None:
        if not train.sequences:
            raise UserError(f"dtgl-do needs the correct training sequences of {train.benchmark}, and the training "
                            "file has none; pass a --data-root whose train.json holds DTGL's training recordings")
        name, cfg = resolve_config(train.benchmark, train.steps, self.config)
        self.deviations = [d for d in self.deviations if not d.startswith("no DTGL config")]
        self.deviations += config_deviation(train.benchmark)
        seed = cfg.seed if self.seed is None else int(self.seed)
        rec, fresh = trained(train, cfg, seed, self.precision)
        data = T.prepare(train.sequences, list(train.taxonomy))
        masked = set(data.masked) if cfg.check_mask else set()
        z = _tensor(rec["z"])
        w = T.graph_matrix(z.float() if self.precision == "float32" else z, _allowed(data.n), frozenset(masked))
        e = G.check_graph(w, masked)
        self.pre = G.preconditions(e, masked)
        order = list(train.taxonomy)
        self.node = {s: i + 1 for i, s in enumerate(order)}
        self.label = {0: "START", len(order) + 1: "END", **{i + 1: str(s) for i, s in enumerate(order)}}
        self.selection = {
            "hyper_parameters": {"config": name, "steps": train.steps, "dtgl_config_file": cfg.file, "beta": cfg.beta,
                                 "epochs": cfg.epochs, "early_stopping": cfg.early_stopping, "seed": seed,
                                 "lr": T.LR, "precision": self.precision, "relaxed": True,
                                 "sequence_variants": 3, "masked_steps": sorted(order[p] for p in masked)},
            "chosen_by": f"nothing chosen: DTGL's published config for this benchmark and its {train.steps} steps "
                         "(config=auto)"
                         if self.config == "auto" else f"config={self.config} given by the user"}
        self.training = {"epochs_run": rec["epochs"], "early_stopping_score": rec["score"],
                         "train_seconds": rec["train_seconds"], "from_cache": not fresh,
                         "edges": int(sum(len(v) for v in self.pre.values()))}

    def stats(self) -> dict:
        return self.training

    def reset(self, ctx: StepContext) -> None:
        self.check = G.PreconditionCheck(self.pre)

    def step(self, t: int, step_id: int) -> StepOutput:
        mistake, pre, missing = self.check.step(self.node.get(step_id))
        evidence = ({"preconditions": [self.label[x] for x in pre], "missing": [self.label[x] for x in missing]}
                    if pre else {"preconditions": "not defined"})
        return StepOutput(1.0 if mistake else 0.0, flagged=mistake, evidence=evidence)


def _tensor(rows):
    import torch

    return torch.tensor(np.array(rows, dtype=np.float64))


def _allowed(n: int):
    import torch

    return torch.from_numpy(T.allowed_mask(n))
