"""The mode registry: every way the pipeline can answer a sample, with the stages each one runs.

``--mode`` choices, their help text and validation derive from :data:`MODES`. The two decoupled routes are the
paper's (Section 5.2): *deep* decoupling narrates the clip and lets the model classify the narration in a
text-only call; *shallow* decoupling narrates and classifies with keyword vocabularies, for models whose text
reasoning the probe (Section 5.1) found unreliable. ``auto`` lets that probe choose. ``direct`` and ``cot`` are
the one-pass baselines of Table 4 (frames + procedure + step + taxonomy in one call, the latter thinking step by
step first). A new mode is one :class:`ModeSpec` here plus its branch in the pipeline's stage functions.
"""

from __future__ import annotations

from dataclasses import dataclass

from ego_adr.registry import Registry


@dataclass(frozen=True)
class ModeSpec:
    name: str
    description: str
    stages: tuple[str, ...]  # what a sample goes through, in order (documentation and run.json)
    one_pass: bool = False  # a single model call on the frames answers the sample
    prompt: str | None = None  # one-pass modes: the name of their prompt in ego_adr.reasoning.prompts
    classifier: str | None = None  # decoupled routes: "model" (a text-only call) or "keywords"
    routed: bool = False  # the text-only probe picks the route
    #: the protocol's one-pass token budget applies (the public agent's 128 tokens are for its direct question; CoT
    #: reasons first, so it keeps the paper's 256, App. C)
    protocol_budget: bool = False

    def budget(self, stages: int, protocol: int | None) -> int:
        """The token budget of this mode's call: ``stages`` is the pipeline's (the paper's 256, App. C, unless
        ``--max-new-tokens``), ``protocol`` the protocol's one-pass budget (public 128, ``--protocol-option
        max_new_tokens=N``). ``direct`` takes the protocol's; CoT, which reasons before its ``Answer:`` line, keeps
        the larger of the two -- so the protocol option can raise its budget (a reply cut off before that line is
        an error claim under the public rule, issue 29 item 1) but the public 128 never cuts it below 256. The
        option is a deviation from the preset, so it is named in the folder, report and run.json."""
        if not self.one_pass or protocol is None:
            return stages
        return protocol if self.protocol_budget else max(stages, protocol)


REGISTRY: Registry[ModeSpec] = Registry("mode", (
    ModeSpec("auto", "the text-only probe routes the model to deep or shallow decoupling (Section 5.1)",
             ("probe", "deep|shallow"), routed=True),
    ModeSpec("deep", "deep decoupling: bank, key-step match, narration, model classification (Section 5.2)",
             ("bank", "match", "narration", "classify"), classifier="model"),
    ModeSpec("shallow", "shallow decoupling: bank, key-step match, narration, keyword classification",
             ("bank", "match", "narration", "keywords"), classifier="keywords"),
    ModeSpec("cot", "one-pass baseline: think step by step, then answer with one option",
             ("cot",), one_pass=True, prompt="COT"),
    ModeSpec("direct", "one-pass baseline: answer with one option (the public white agent's question)",
             ("direct",), one_pass=True, prompt="DIRECT", protocol_budget=True),
))
MODES: dict[str, ModeSpec] = REGISTRY.specs  # name -> spec (the live dict of the registry)


def mode_help() -> str:
    """One line per mode, for ``--mode`` help texts."""
    return REGISTRY.help()


def get(name: str) -> ModeSpec:
    """The spec of mode ``name``; an unknown one is one line listing the choices (exit 2)."""
    return REGISTRY.get(name)
