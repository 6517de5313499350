"""PREGO (Flaborea et al., CVPR 2024, Sec. 3.2): symbolic next-step anticipation by an LLM in context, through
any model of the project's one protocol (HF, vLLM, OpenAI-compatible; ``--model tiny`` runs offline).

At every observed step the model is shown solved examples and the prefix observed so far, and asked for the
"Next Symbol" (``PREGO_NEXT_STEP`` in :mod:`ego_adr.reasoning.prompts`). The anticipated set is what the step's
``samples`` replies name; the step actually observed is a mistake when it is outside the set. As in PREGO's
``step_anticipation/src/models/llama_meta.py``:

- the prompt is the one its code builds, byte for byte by default (:mod:`.prego_prompt`: the examples of the
  recording's toy as PREGO's file labels and orders them, an empty context for a toy without training
  sequences, ``Sequence type: None`` on EPIC-Tent-O); each difference is a named option, recorded as a deviation;
- a reply is read as PREGO reads a numeric one: underscores stripped, then everything before the first and after
  the last ASCII digit, then ``int()``; what ``int()`` cannot read (``37, 74``, ``1²3``) names no step (PREGO
  keeps the string, never equal to a step id) and is counted in ``metrics.json`` (``stats``);
- the anticipated set is the union of the symbols the replies name (``pred.add`` over every reply of the step).

Decoding, as the named options of :data:`DECODINGS` (``--decoding``; ``--samples``, ``--temperature`` and
``--max-new-tokens`` change one value of it, and the result is recorded under its own name):

- ``numeric`` (the default): the setting of PREGO's numeric-symbol run, which is what our step ids are. Its
  ``scripts/anticipation.sh`` has one line with ``--type_prompt=num`` (commented out there, Llama-2 13B on the
  ground-truth steps): ``--temperature=0 --num_samples=5 --max_gen_len=4``. At temperature 0 Llama's
  ``generate`` takes the argmax, so its replies to one prompt are all the same reply: one greedy reply of at
  most 4 tokens is that set exactly.
- ``sampled``: the setting of the script's two active lines, which use emoji symbols (Llama-2 7B and 14b):
  ``--temperature=0.6 --num_samples=5 --max_gen_len=8``, with ``top_p`` 0.9 (``llama_meta.py``'s default, which
  the script never changes). ``llama_meta.py``'s loop asks ``num_samples`` times for a batch of ``num_samples``
  copies of the prompt, so its set is the union of 5 x 5 = 25 replies; ``samples`` here counts replies, 25.
  Our symbols stay the step ids (a recorded deviation).

Each sample is its own request with its own seed (the sample index), so each is its own stage-cache entry and
its reply is reproducible alone; the seeds and replies are in the step's evidence. PREGO draws its replies from
one torch stream seeded once (``Llama.build(seed=1)``): the same distribution, other draws.

Deviations, each recorded in ``metrics.json`` and the report:

- our backends are chat models: the prompt goes as one user message (a base model without a chat template gets
  ``User: ... Assistant:``), where PREGO completes the raw text;
- on EPIC-Tent-O the examples are DTGL's training sequences (PREGO's file holds 14 sequences of another split);
- every prompt option set away from PREGO's code (:mod:`.prego_prompt`).

Every prompt and reply goes through the stage cache: the prompts' texts are recorded (the examples once per
task in ``prompts.json``, the query and replies per step in ``steps.jsonl``). A failed call that asking again may
fix (an outage: connection, timeout, 5xx, out of memory) stops the run with exit 3 before anything is written,
never a verdict; the answers so far are cached, so rerunning the same command resumes where it stopped. A call
that fails for its input is recorded in the step's evidence and counted; it adds nothing to the anticipated set,
as PREGO counts a reply that names no step.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from ego_adr.errors import InfrastructureError
from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.monitoring.registry import MonitorOption
from ego_adr.online_mistakes.monitors import prego_prompt as PP
from ego_adr.online_mistakes.monitors.prego_prompt import line as _line
from ego_adr.online_mistakes.monitors.prego_prompt import task_of
from ego_adr.online_mistakes.types import StepContext, TrainingSet

_SCRIPT = "PREGO step_anticipation/scripts/anticipation.sh"
PREGO_TOP_P = 0.9  # llama_meta.py main(top_p=0.9): every sampled PREGO run uses it


@dataclass(frozen=True)
class Decoding:
    """How a step's anticipated set is drawn: ``samples`` replies at ``temperature`` (0: greedy, one reply) and
    ``top_p`` (None when greedy), each of at most ``max_new_tokens`` tokens; ``source`` says where in PREGO's code
    the values come from."""

    samples: int
    temperature: float
    top_p: float | None
    max_new_tokens: int
    source: str


DECODINGS = {
    "numeric": Decoding(1, 0.0, None, 4, f"{_SCRIPT}, its --type_prompt=num line: --temperature=0 --num_samples=5 "
                        "--max_gen_len=4 (greedy, so its 5 x 5 replies are one reply)"),
    "sampled": Decoding(25, 0.6, PREGO_TOP_P, 8, f"{_SCRIPT}, its active --type_prompt=emoji lines: "
                        "--temperature=0.6 --num_samples=5 --max_gen_len=8, top_p 0.9 (llama_meta.py's default); "
                        "llama_meta.py draws num_samples batches of num_samples replies: 25"),
}
DEFAULT_DECODING = "numeric"  # the numeric-symbol run's: our step ids are numbers
DEVIATIONS = ("prompt sent as one user message of a chat model (PREGO completes the raw text)",)
SAMPLED_DEVIATIONS = (
    "symbols are the step ids (numeric) where PREGO pairs this sampled decoding with emoji symbols",
    "each reply is drawn under its own seed (the sample index), where PREGO draws all from one torch stream "
    "seeded once: the same distribution, other draws",
)
_EDGES = re.compile(r"^[^0-9]*|[^0-9]*$")


def resolve_decoding(name: str | None = None, samples: int | None = None, temperature: float | None = None,
                     max_new_tokens: int | None = None) -> tuple[str, Decoding]:
    """The named option ``name`` with any value given here in its place; its label says what was changed.
    Raises ValueError naming the setting that cannot be used."""
    name = name or DEFAULT_DECODING
    if name not in DECODINGS:
        raise ValueError(f"decoding {name!r} is not one of {', '.join(DECODINGS)}")
    base = DECODINGS[name]
    given = {"samples": samples, "temperature": temperature, "max_new_tokens": max_new_tokens}
    changed = {k: v for k, v in given.items() if v is not None and v != getattr(base, k)}
    dec = replace(base, **changed)
    if dec.samples < 1 or dec.max_new_tokens < 1:
        raise ValueError("samples and max_new_tokens must be >= 1")
    if not (math.isfinite(dec.temperature) and dec.temperature >= 0):
        raise ValueError(f"temperature must be a finite number >= 0, got {dec.temperature}")
    if dec.temperature == 0 and dec.samples > 1:
        raise ValueError(f"{dec.samples} samples at temperature 0 are one greedy reply {dec.samples} times: use "
                         "samples 1, or a temperature > 0 to sample")
    dec = replace(dec, top_p=(dec.top_p or PREGO_TOP_P) if dec.temperature > 0 else None)
    label = name + (" (" + ", ".join(f"{k} {v}" for k, v in changed.items()) + ")" if changed else "")
    return label, dec


def parse_symbol(reply: str | None) -> int | None:
    """The step a reply names, read as PREGO's ``anticipation`` reads it (``int()`` of what is left between the
    first and the last ASCII digit); None when ``int()`` cannot read it, where PREGO keeps a string that never
    equals a step id."""
    v = _EDGES.sub("", (reply or "").strip("_"))
    try:
        return int(v)
    except ValueError:
        return None


def _opt(name: str, parse, help_: str, choices: tuple = (), default=None) -> MonitorOption:
    return MonitorOption(name, parse, default if default is not None or not choices else choices[0], help_, choices)


class Prego(Monitor):
    """PREGO's anticipation monitor; ``model`` is a VLM of :mod:`ego_adr.models` behind the stage cache.
    ``decoding`` names one of :data:`DECODINGS`; ``samples``, ``temperature`` and ``max_new_tokens`` replace one
    value of it. The prompt options are :mod:`.prego_prompt`'s; ``data_root`` is where PREGO's example file is."""

    OPTIONS = (
        _opt("decoding", str, "PREGO's decoding (alias --decoding)", tuple(DECODINGS), DEFAULT_DECODING),
        _opt("samples", int, "replies per step (alias --samples; default: the decoding's)"),
        _opt("temperature", float, "sampling temperature, 0 greedy (alias --temperature; default: the decoding's)"),
        _opt("max_new_tokens", int, "tokens per reply (alias --max-new-tokens; default: the decoding's)"),
        *(_opt(k, str, PP.PROMPT_HELP[k], v) for k, v in PP.PROMPT_CHOICES.items()),
    )

    def __init__(self, model=None, max_new_tokens: int | None = None, decoding: str | None = None,
                 samples: int | None = None, temperature: float | None = None, data_root=None,
                 unseen_task: str = "empty", example_labels: str = "prego", task_line: str = "prego",
                 example_order: str = "prego-file") -> None:
        if model is None:
            raise ValueError("prego needs a model (--model NAME; --model tiny runs offline)")
        self.model, self.data_root = model, data_root
        self.prompt = self.check_options(dict(
            decoding=decoding, samples=samples, temperature=temperature, max_new_tokens=max_new_tokens,
            unseen_task=unseen_task, example_labels=example_labels, task_line=task_line, example_order=example_order))
        self.label, self.decoding = resolve_decoding(decoding, samples, temperature, max_new_tokens)
        self.max_new_tokens = self.decoding.max_new_tokens
        self.calls = self.failed = self.unparseable = self.unreadable = 0
        d = self.decoding
        self.selection = {"hyper_parameters": {"decoding": self.label, "samples": d.samples,
                                               "temperature": d.temperature, "top_p": d.top_p,
                                               "max_new_tokens": d.max_new_tokens, "symbols": "numeric",
                                               "examples": "same task", **self.prompt},
                          "chosen_by": f"not tuned: PREGO's published settings ({d.source}), so nothing was "
                          "chosen on any data" + ("" if self.label in DECODINGS else
                                                  f"; changed by the user from {self.label.split(' (')[0]}")}
        self.deviations = list(DEVIATIONS) + (list(SAMPLED_DEVIATIONS) if d.temperature > 0 else [])

    @staticmethod
    def check_options(options: dict) -> dict:
        """The prompt options with PREGO's defaults filled in; ValueError naming one that cannot be used (the
        decoding's values included, checked before any data is read)."""
        resolve_decoding(*(options.get(k) for k in ("decoding", "samples", "temperature", "max_new_tokens")))
        out = dict(PP.PROMPT_DEFAULTS)
        for k, v in options.items():
            if k in PP.PROMPT_CHOICES and v is not None:
                if v not in PP.PROMPT_CHOICES[k]:
                    raise ValueError(f"option {k}={v!r} is not one of {', '.join(PP.PROMPT_CHOICES[k])}")
                out[k] = v
        return out

    @classmethod
    def check_inputs(cls, train: TrainingSet, data_root, options: dict) -> None:
        """What :meth:`fit` will read beside the training set is there (PREGO's example file): checked before
        the output folder is claimed."""
        if train.benchmark == "assembly101-o" and options.get("example_order", "prego-file") == "prego-file":
            PP.prego_order(data_root, train.videos, train.sequences)

    def fit(self, train: TrainingSet) -> None:
        o, epic = self.prompt, train.benchmark == "epic-tent-o"
        if train.benchmark != "assembly101-o" or o["example_order"] == "training":  # PREGO's file: Assembly101-O
            by_task: dict[str | None, list[tuple[int, ...]]] = {}
            for video, seq in zip(train.videos, train.sequences):
                by_task.setdefault(None if epic else task_of(video), []).append(seq)
        else:
            by_task = PP.prego_order(self.data_root, train.videos, train.sequences)
        labels = "query" if epic else o["example_labels"]
        self.benchmark = train.benchmark
        self.all_examples = "".join(PP.examples(t, seqs, labels) for t, seqs in by_task.items())
        self.examples = {t: PP.examples(t, seqs, labels) for t, seqs in by_task.items() if t is not None}
        self.files = {"prompts.json": {"prompt": "prego_next_step", "options": o,
                                       "examples": {"all": self.all_examples, **self.examples}}}
        self.deviations += PP.deviations(train.benchmark, o)

    def reset(self, ctx: StepContext) -> None:
        self.video = ctx.video
        self.task = None if ctx.benchmark == "epic-tent-o" else task_of(ctx.video)
        epic_all = ctx.benchmark == "epic-tent-o"
        unseen = "all" if self.prompt["unseen_task"] == "all" else "empty"
        self.context = "all" if epic_all else (self.task if self.task in self.examples else unseen)
        self.header = PP.header(ctx.benchmark, self.task, self.prompt)
        self.prefix: list[int] = []

    def requests(self) -> tuple[list, str]:
        """The step's requests, one per sample (seed = sample index; greedy: one request, no seed), and the
        query: the prompt without the examples, as recorded in the evidence."""
        from ego_adr.models.base import GenerationConfig, Message, Request
        from ego_adr.reasoning.prompts import PREGO_NEXT_STEP as P

        examples = {"all": self.all_examples, "empty": ""}.get(self.context) or self.examples.get(self.context, "")
        query = P.render(examples="", header=self.header, prefix=_line(self.prefix))
        text = P.render(examples=examples, header=self.header, prefix=_line(self.prefix))
        d = self.decoding
        configs = [GenerationConfig.sampled(d.temperature, top_p=d.top_p or 1.0, seed=i,
                                            max_new_tokens=d.max_new_tokens) for i in range(d.samples)]
        return [Request([Message.user(text)], c, meta=P.meta("prego_next_step")) for c in configs], query

    def step(self, t: int, step_id: int) -> StepOutput:
        reqs, query = self.requests()
        gens = self.model.generate(reqs)  # one batch: the cache asks the model for the misses only
        self.calls += len(reqs)
        outage = next((g for g in gens if g.retryable), None)
        if outage is not None:
            raise InfrastructureError(f"{self.model.model_id} failed at {self.video} step {t} ({outage.error}); "
                                      "nothing was recorded: rerun the same command (the replies so far are cached)")
        evidence: dict = {"examples": self.context, "query": query}
        if self.decoding.temperature > 0:
            evidence["seeds"] = [r.config.seed for r in reqs]
        evidence["replies"] = [g.text if g.ok else None for g in gens]
        failed = [g.error for g in gens if not g.ok]
        if failed:
            self.failed += len(failed)
            evidence["failed"] = failed
        anticipated = self.anticipated([g.text for g in gens if g.ok])
        evidence["anticipated"] = sorted(anticipated)
        self.prefix.append(step_id)
        outside = step_id not in anticipated
        return StepOutput(1.0 if outside else 0.0, flagged=outside, evidence=evidence)

    def anticipated(self, replies: list[str]) -> set[int]:
        """PREGO's set: the union of the symbols the replies name; a reply that names none adds nothing."""
        symbols = [parse_symbol(r) for r in replies]
        self.unparseable += sum(s is None for s in symbols)
        self.unreadable += sum(s is None and bool(_EDGES.sub("", (r or "").strip("_"))) for r, s in
                               zip(replies, symbols))
        return {s for s in symbols if s is not None}

    def stats(self) -> dict:
        return {"calls": self.calls, "samples_per_step": self.decoding.samples, "failed": self.failed,
                "unparseable": self.unparseable, "unreadable_digits": self.unreadable,
                "model_calls": getattr(self.model, "model_calls", None),
                "cache_hits": getattr(self.model, "cache_hits", None), "model": self.model.model_id}
