"""Run configuration: one dataclass, filled from defaults < YAML file (``--config``) < command-line flags.

Every run writes its resolved configuration to ``run.json`` beside its results, so a number can always be
traced back to the exact settings that produced it. Wrong values stop the run at once with a message that says
what to do (a :class:`ConfigError`), before any model is loaded.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ego_adr.data import sources as source_registry
from ego_adr.data.sample import TASKS
from ego_adr.errors import UserError
from ego_adr.eval.judges import DEFAULT_JUDGE_NAMES
from ego_adr.models.backends import BACKENDS
from ego_adr.models.backends import names as backend_names
from ego_adr.models.loading import DEFAULT_GPU_MEMORY
from ego_adr.reasoning.pipeline import MODES, NARRATION_SOURCES
from ego_adr.run.errors import ConfigError  # noqa: F401  (re-exported)
from ego_adr.store import cache_root

if TYPE_CHECKING:
    from ego_adr.reasoning.protocol import ProtocolSettings

QA_SELECTIONS = ("all", "one")


@dataclass
class RunConfig:
    model: str | None = None  # alias, hub id or folder; None = the embedded tiny demo model
    backend: str = "hf"
    task: str = "multiple-choice"
    mode: str = "auto"
    frames: int = 8
    match: bool = True
    narration: bool = True
    narration_source: str = "model"
    bank_builder: str = "auto"
    matcher: str = "tfidf"  # key-step matcher: tfidf (the paper's) | minilm (a deviation, reasoning/embed_matching.py)
    scoring: str = "generate"  # generate (the paper's) | likelihood (a deviation: options scored, reasoning/config.py)
    bank_model: str | None = None  # None/"paper": Qwen2.5-VL-7B-Instruct (Section 5.2) | evaluated | rule | name
    data_root: str | None = None  # None = the embedded demo set
    video_root: str | None = None
    sources: list[str] | None = None
    limit: int | None = None
    output_dir: str | None = None
    device: str = "auto"
    dtype: str | None = None
    batch_size: int | None = None  # None: 1 for hf, 8 for openai (its concurrency), 64 for vllm
    max_pixels_per_frame: int | None = None
    gpu_memory: str | None = None  # None: 24GB for the hf backend (Section 6.1's budget), unset otherwise
    base_url: str | None = None
    tensor_parallel_size: int = 1
    max_new_tokens: int | None = None  # None: the protocol's (ego-adr 256 as in the paper, public 128)
    num_shards: int = 1
    shard_index: int = 0
    seed: int = 0
    prefetch: int = 4  # clips decoded ahead of the model (bounded queue)
    decode_workers: int = 2
    cache_dir: str | None = None
    use_cache: bool = True
    judges: list[str] = field(default_factory=lambda: list(DEFAULT_JUDGE_NAMES))
    judge_backend: str = "hf"
    qa_selection: str = "all"  # QA_SELECTIONS: every QA pair, or one per sample chosen with the seed
    protocol: str = "ego-adr"  # ego-adr | public (reasoning/protocol.py): the inputs that change a number
    protocol_options: dict = field(default_factory=dict)  # single deviations from the preset, e.g. sampling=...
    extra: dict = field(default_factory=dict)

    def _check_methods(self) -> None:
        """The method's choices that deviate from the paper by name: the key-step matcher, the scoring."""
        from ego_adr.reasoning.embed_matching import MATCHERS

        if self.matcher not in MATCHERS:
            raise ConfigError(f"--matcher must be one of {', '.join(MATCHERS)}, got {self.matcher!r}")
        if self.matcher != "tfidf":
            from ego_adr.reasoning.embed_matching import check_available

            try:
                check_available(self.matcher)
            except UserError as e:
                raise ConfigError(f"--matcher {self.matcher}: {e}") from None
        from ego_adr.reasoning.config import SCORINGS

        if self.scoring not in SCORINGS:
            raise ConfigError(f"--scoring must be one of {', '.join(SCORINGS)}, got {self.scoring!r}")

    def validate(self) -> RunConfig:
        """Check every setting and return a resolved copy; ``self`` is left as given.

        The copy fills what the backend and protocol decide when a setting is unset (``gpu_memory``,
        ``batch_size``, ``max_new_tokens`` with ``extra["max_new_tokens_from"]``), so a caller uses what it
        returns: ``cfg = cfg.validate()``. Validating a resolved copy again returns an equal one."""
        if self.task not in TASKS:
            raise ConfigError(f"--task must be one of {TASKS}, got {self.task!r}")
        if self.mode not in MODES:
            raise ConfigError(f"--mode must be one of {MODES}, got {self.mode!r}")
        if self.backend not in backend_names():
            raise ConfigError(f"--backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.narration_source not in NARRATION_SOURCES:
            raise ConfigError(f"--narration-source must be one of {', '.join(NARRATION_SOURCES.names())}")
        self._check_methods()
        if self.frames < 1:
            raise ConfigError("--frames must be a positive number (the paper uses 8, 16, 24 or 32)")
        spec = BACKENDS[self.backend]
        resolved: dict = {}
        if self.gpu_memory is None and spec.plans_memory:
            resolved["gpu_memory"] = DEFAULT_GPU_MEMORY
        batch_size = spec.default_batch_size if self.batch_size is None else self.batch_size
        resolved["batch_size"] = batch_size
        if batch_size < 1:
            raise ConfigError("--batch-size must be >= 1")
        if self.limit is not None and self.limit < 1:
            raise ConfigError("--limit must be >= 1")
        if self.num_shards < 1:
            raise ConfigError("--num-shards must be >= 1")
        if not 0 <= self.shard_index < self.num_shards:
            raise ConfigError(f"--shard-index must be in 0..{self.num_shards - 1} for --num-shards {self.num_shards}")
        from ego_adr.reasoning.protocol import ProtocolError, check_public_source
        from ego_adr.reasoning.public_text import PublicSourceMissing

        try:
            check_public_source(self.protocol_settings, self.data_root, self.public_source)
            if self.max_new_tokens is None:  # the preset's reply budget (ego-adr 256, public 128)
                resolved["max_new_tokens"] = self.protocol_settings.max_new_tokens
                resolved["extra"] = {**(self.extra or {}), "max_new_tokens_from": f"protocol {self.protocol}"}
        except (ProtocolError, PublicSourceMissing) as e:
            raise ConfigError(str(e)) from None
        if self.qa_selection not in QA_SELECTIONS:
            raise ConfigError("--qa-selection must be 'all' or 'one'")
        if self.sources is not None:
            try:  # a built data root declares its own sources (sources.json)
                source_registry.discover(self.data_root if self.data_root and Path(self.data_root).is_dir() else None)
            except ValueError as e:
                raise ConfigError(str(e)) from None
            known = source_registry.names()
            bad = [s for s in self.sources if s not in known]
            if bad:
                raise ConfigError(f"unknown source(s) {bad}; choose from {', '.join(known)}")
        if self.narration_source == "reference" and self.task != "multiple-choice":
            raise ConfigError("--narration-source reference is a multiple-choice diagnostic")
        if self.data_root is not None and not Path(self.data_root).is_dir():
            raise ConfigError(
                f"--data-root {self.data_root} is not a folder. Get the annotations with "
                "`python scripts/download_annotations.py --out DIR` (the public EgoErrorVQA data/json) "
                "or leave --data-root out to run the embedded demo set."
            )
        if self.video_root is not None and not Path(self.video_root).is_dir():
            raise ConfigError(f"--video-root {self.video_root} is not a folder (the video layout: docs/getting_started.md, 'Running a real model')")
        from ego_adr.run.checks import check_environment

        out = replace(copy.deepcopy(self), **resolved)  # its lists and dicts are its own, too
        check_environment(out)
        return out

    @staticmethod
    def from_yaml(path: str | Path) -> dict:
        import yaml

        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"--config {path}: no such file")
        try:
            text = p.read_text()
            if not text.strip():  # an empty file is a mistake (a wrong path), not "no settings"
                raise ConfigError(f"--config {path} is empty; give a YAML mapping of settings (see configs/)")
            data = yaml.safe_load(text) or {}
        except (yaml.YAMLError, OSError, UnicodeDecodeError) as e:
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConfigError(f"--config {path} is not readable YAML ({first}); fix the file") from None
        if not isinstance(data, dict):
            raise ConfigError(f"--config {path}: expected a mapping of settings")
        names = {f.name for f in fields(RunConfig)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ConfigError(f"--config {path}: unknown setting(s) {unknown}; known: {sorted(names)}")
        from ego_adr.run.checks import check_types

        check_types(data, f"--config {path}", RunConfig)
        return data

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def protocol_settings(self) -> ProtocolSettings:
        """The protocol's settings (:func:`ego_adr.reasoning.protocol.resolve`: the preset, ``protocol_options``,
        an explicit ``max_new_tokens``), resolved here and handed to the method, which never sees this config.
        Derived from the fields on each read (a pure function of three fields, microseconds), so a changed
        field can never leave a stale copy; a wrong name or option raises ProtocolError (``validate`` turns it
        into a ConfigError)."""
        from ego_adr.reasoning.protocol import resolve

        return resolve(self.protocol, self.protocol_options, self.max_new_tokens)

    @property
    def public_source(self) -> str | None:
        """Where the public evaluator's source is (``--protocol-option public_source=DIR``; no setting)."""
        return (self.protocol_options or {}).get("public_source")

    def resolved_cache_dir(self) -> Path:
        return Path(self.cache_dir).expanduser() if self.cache_dir else cache_root()
