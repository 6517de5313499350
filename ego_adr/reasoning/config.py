"""The pipeline's settings (``PipelineConfig``) and the choices they are validated against.

Apart from the pipeline (reasoning/pipeline.py) so that the pieces it uses -- the one-pass baselines' requests
(reasoning/one_pass.py), the procedure banks (reasoning/banks.py) -- are given the settings they read and never
the pipeline itself: the pipeline imports them, none of them imports the pipeline (tests/test_layout.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from ego_adr.reasoning.banks import BANK_MAX_NEW_TOKENS
from ego_adr.reasoning.embed_matching import DEFAULT_MATCHER, MATCHERS
from ego_adr.reasoning.matching import TAU
from ego_adr.reasoning.modes import MODES as MODE_SPECS
from ego_adr.registry import Registry

MODES = tuple(MODE_SPECS)


@dataclass(frozen=True)
class NarrationSource:
    name: str
    description: str


#: What ``--narration-source`` takes (run, stream, the video-stream benchmark): a registry, so its choices, help and
#: refusal come from one place
NARRATION_SOURCES: Registry[NarrationSource] = Registry("narration source", (
    NarrationSource("model", "the model narrates each window (the method)"),
    NarrationSource("reference", "a diagnostic: each window narrated from the annotations, so the stages after "
                    "narration are measured with a perfect narrator (annotated data only)"),
))
#: How the model's choice among options is read: ``generate`` (the paper's: it writes its answer) or
#: ``likelihood`` (a named deviation: every option scored as the start of its reply, the most likely taken;
#: ego_adr.models.likelihood). Applies where the method asks the model to pick one of known options: the deep
#: classifier's error type and the routing probe's trial answers.
SCORINGS = ("generate", "likelihood")


@dataclass
class PipelineConfig:
    mode: str = "auto"
    frames: int = 8  # Section 6.1: 8/16/24/32 uniformly sampled frames; Ego-ADR results use 8
    match: bool = True
    narration: bool = True
    narration_source: str = "model"
    bank_builder: str = "auto"  # auto (model in deep mode, rules in shallow) | rule | model
    model_match: bool = True  # deep mode: the model picks the step (text only), TF-IDF as fallback
    tau: float = TAU
    matcher: str = DEFAULT_MATCHER  # tfidf (the paper's, Section 5.2) | minilm (a deviation: embed_matching.py)
    max_new_tokens: int = 256  # Appendix C
    one_pass_max_new_tokens: int | None = None  # the baselines' budget (public white agent: 128); None = as above
    bank_max_new_tokens: int = BANK_MAX_NEW_TOKENS  # the procedure bank's own budget (reasoning/banks.py)
    probe_trials: int = 3
    seed: int = 0
    # protocol settings that act inside the pipeline (reasoning/protocol.py): the one-pass baselines' question
    # (ours | public, whose guidance text is read at run time into ``guidance``), their answers (raw | lenient),
    # and the step text (clean | raw: the stored action_annotation, printed as the public green agent prints it)
    question: str = "ours"
    answers: str = "raw"
    step: str = "clean"
    guidance: str | None = None
    guidance_sha: str | None = None
    scoring: str = "generate"  # SCORINGS

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.narration_source not in NARRATION_SOURCES:
            raise ValueError(f"narration_source must be one of {', '.join(NARRATION_SOURCES.names())}")
        if self.matcher not in MATCHERS:
            raise ValueError(f"matcher must be one of {MATCHERS}, got {self.matcher!r}")
        if self.bank_builder not in ("auto", "rule", "model"):
            raise ValueError("bank_builder must be auto, rule or model")
        if self.scoring not in SCORINGS:
            raise ValueError(f"scoring must be one of {SCORINGS}, got {self.scoring!r}")
        if self.question not in ("ours", "public") or self.answers not in ("raw", "lenient"):
            raise ValueError("question must be ours|public and answers raw|lenient")
        if self.question == "public" and not self.guidance:
            raise ValueError("question=public needs the public guidance text (reasoning/public_text.py)")

