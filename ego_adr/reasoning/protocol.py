"""Protocols: the inputs that change a number, as one named preset plus named deviations.

``public`` reproduces the public EgoErrorVQA white agent (z1oong/EgoErrorVQA, which produced the paper's Table 4)
in every input that changes a number; ``ego-adr`` (the default) is this project's choice for each. Any single
setting can be changed with ``protocol_options`` (``--protocol-option key=value``); every setting that differs
from the chosen preset appears in the output folder name, and the report and ``run.json`` list every setting
that differs from the public white agent.

Why each ``ego-adr`` default (evidence in docs/protocol.md):

* ``sampling=bin-centre`` -- the public ``linspace`` includes both end frames; the end frame ``int(end*fps)`` is the
  first frame of the next annotated segment where segments abut (19% of Assembly101 windows, 1% of
  CaptainCook4D, none in EgoOops / Epic-Tent of the developer split): a modest effect, kept for its cleanliness;
* ``clip_fps=true`` -- Qwen2.5-VL places frames in absolute time from this rate. The public agent's model saw
  2.0 (its processor's default; the ``fps: 1.0`` of its message is dropped, video/public_policy.py), which tells
  it that 8 frames span 4 s while the annotated windows' median is 11-35 s (p10 1.7 s, p90 108 s);
* ``resize=processor`` -- one resize by the model's own processor, at the same 768-cell cap;
* ``step=clean`` -- the raw EgoOops ``action_annotation`` is null on exactly its error clips (a label leak);
  the clean step comes from EgoOops' step list for every clip (data/sources/egooops.py);
* ``question=ours`` -- our wording needs no third-party text at run time; ``public`` reads it from the source;
* ``max_new_tokens=256`` -- the paper's budget (Appendix C); the public agent uses 128;
* ``answers=raw`` in both -- the baselines send the raw reply as the public white agent does (a lenient
  extractor is the explicit ``answers=lenient``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

from ego_adr.registry import Registry
from ego_adr.video.public_policy import (
    BIN_CENTRE,
    PROCESSOR,
    PUBLIC_LINSPACE,
    QVU_0_0_14,
    RESIZE_RULES,
    SAMPLING_RULES,
)

PUBLIC, EGO_ADR = "public", "ego-adr"
PROTOCOLS = (EGO_ADR, PUBLIC)
DEFAULT_PROTOCOL = EGO_ADR


@dataclass(frozen=True)
class ProtocolSettings:
    sampling: str  # bin-centre | public-linspace (with the white agent's reading of the window)
    clip_fps: str  # "true" (N / window seconds) or the number written beside the frames
    resize: str  # processor | qwen-vl-utils-0.0.14
    step: str  # clean | raw (action_annotation as stored)
    question: str  # ours | public (one-pass baselines)
    max_new_tokens: int
    answers: str  # raw | lenient (one-pass baselines)

    def to_dict(self) -> dict:
        return asdict(self)


#: The protocol presets (the shared registry type, in ``--protocol`` order); a preset's name is its key.
PRESETS: Registry[ProtocolSettings] = Registry("protocol", {
    EGO_ADR: ProtocolSettings(BIN_CENTRE, "true", PROCESSOR, "clean", "ours", 256, "raw"),
    PUBLIC: ProtocolSettings(PUBLIC_LINSPACE, "2.0", QVU_0_0_14, "raw", "public", 128, "raw"),
}, describe=lambda s: ", ".join(f"{k} {v}" for k, v in s.to_dict().items()))
CHOICES = {"sampling": SAMPLING_RULES, "resize": RESIZE_RULES, "step": ("clean", "raw"),
           "question": ("ours", "public"), "answers": ("raw", "lenient")}
EXTRA_KEYS = ("public_source",)  # where the public evaluator's source is (not a setting: changes no number)


class ProtocolError(ValueError):
    """A wrong protocol name or option (the run stops before any work)."""


def parse_options(text: str | None) -> dict:
    """``"sampling=bin-centre,answers=lenient"`` -> dict (what ``--protocol-option`` takes)."""
    out: dict = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ProtocolError(f"--protocol-option {part!r}: expected key=value")
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def resolve(protocol: str, options: dict | None = None, max_new_tokens: int | None = None) -> ProtocolSettings:
    """The preset with ``options`` applied; ``max_new_tokens`` (an explicit ``--max-new-tokens``) wins."""
    if protocol not in PRESETS:
        raise ProtocolError(f"--protocol must be one of {PROTOCOLS}, got {protocol!r}")
    s = PRESETS[protocol]
    names = {f.name for f in fields(ProtocolSettings)}
    changes: dict = {}
    for k, v in (options or {}).items():
        if k in EXTRA_KEYS:
            continue
        if k not in names:
            raise ProtocolError(f"unknown protocol option {k!r}; known: {sorted(names | set(EXTRA_KEYS))}")
        if k == "max_new_tokens":
            try:
                v = int(v)
            except (TypeError, ValueError):
                raise ProtocolError(f"protocol option max_new_tokens must be a number, got {v!r}") from None
        elif k == "clip_fps":
            v = str(v)
            if v != "true":
                try:
                    if float(v) <= 0:
                        raise ValueError
                except ValueError:
                    raise ProtocolError(f"protocol option clip_fps must be 'true' or a rate > 0, got {v!r}") from None
        elif v not in CHOICES[k]:
            raise ProtocolError(f"protocol option {k} must be one of {CHOICES[k]}, got {v!r}")
        changes[k] = v
    if max_new_tokens is not None:
        changes["max_new_tokens"] = int(max_new_tokens)
    return replace(s, **changes)


def differences(settings: ProtocolSettings, reference: str) -> dict:
    """Settings that differ from preset ``reference``: {name: (value here, value there)}."""
    ref = PRESETS[reference]
    return {f.name: (getattr(settings, f.name), getattr(ref, f.name)) for f in fields(ProtocolSettings)
            if getattr(settings, f.name) != getattr(ref, f.name)}


def folder_tag(protocol: str, settings: ProtocolSettings) -> str:
    """Suffix of the output folder: the protocol unless it is the default, then each deviation from it."""
    parts = [] if protocol == DEFAULT_PROTOCOL else [protocol]
    parts += [f"{k}={v}" for k, (v, _) in differences(settings, protocol).items()]
    return "".join(f"-{p}" for p in parts)


def describe(protocol: str, settings: ProtocolSettings) -> dict:
    """What run.json records."""
    return {"name": protocol, "settings": settings.to_dict(),
            "deviations_from_public": {k: {"here": a, "public": b} for k, (a, b) in differences(settings, PUBLIC).items()},
            "deviations_from_preset": {k: a for k, (a, _) in differences(settings, protocol).items()}}


#: The case the public white agent exists for: Qwen2.5-VL, 8 frames, one direct question, one request at a time,
#: bf16, on transformers 4.57.x (its uv.lock pins 4.57.3; src/white_agent/agent.py).
PUBLIC_CASE = {"family": "qwen2.5-vl", "frames": 8, "mode": "direct", "batch_size": 1, "backend": "hf",
               "dtype": "bfloat16", "transformers": "4.57."}


def case_of(cfg, run_info: dict) -> dict:
    """What, beside the protocol settings, decides whether a run's inputs and replies can be the public agent's."""
    model = run_info.get("model") or {}
    return {"family": model.get("family"), "frames": cfg.frames, "mode": cfg.mode, "batch_size": cfg.batch_size,
            "backend": cfg.backend, "dtype": (model.get("dtype") or "").removeprefix("torch.") or None,
            "transformers": (run_info.get("versions") or {}).get("transformers")}


def case_differences(case: dict) -> dict:
    """{what: "here (public: there)"} for every way ``case`` is not :data:`PUBLIC_CASE`; the runtime entry
    names the known rope-index difference of transformers 5.x."""
    from ego_adr.models.compat import ROPE_INDEX_NOTE

    ref, out = PUBLIC_CASE, {}
    if case.get("family") != ref["family"]:
        out["family"] = f"{case.get('family') or 'unknown'} (public: Qwen2.5-VL)"
    if case.get("frames") != ref["frames"]:
        out["frames"] = f"{case.get('frames')} (public: 8)"
    if case.get("mode") != ref["mode"]:
        out["mode"] = f"{case.get('mode')} (public: one direct question)"
    if case.get("backend") != ref["backend"]:
        out["backend"] = f"{case.get('backend')} (public: transformers generate)"
    if (case.get("batch_size") or 1) > 1:
        out["batch_size"] = (f"{case['batch_size']} (public: one request at a time; a left-padded batch can "
                             "change the numbers)")
    if case.get("dtype") and case["dtype"] != ref["dtype"]:
        out["dtype"] = f"{case['dtype']} (public: bfloat16)"
    tv = case.get("transformers")
    if tv and not tv.startswith(ref["transformers"]):
        out["runtime"] = f"transformers {tv} (public: 4.57.3): {ROPE_INDEX_NOTE}"
    return out


def public_agent_record(settings: ProtocolSettings, case: dict) -> dict:
    """What run.json records about the public white agent: whether every input is its input, and the rest."""
    differs = case_differences(case)
    same = not differences(settings, PUBLIC) and not {k: v for k, v in differs.items() if k != "runtime"}
    return {"case": case, "differs_in": differs, "same_inputs": same, "reply_identity": same and not differs,
            "known_runtime_difference": differs.get("runtime")}


def report_notes(protocol: str, settings: ProtocolSettings, sources: list[str] | None,
                 case: dict | None = None) -> list[str]:
    """The report's protocol paragraph(s). ``case`` (:func:`case_of`): the model family, frames, mode, runtime;
    without it only the protocol settings are compared."""
    diffs = differences(settings, PUBLIC)
    others = case_differences(case) if case is not None else {}
    items = [f"{k} = {a} (public: {b})" for k, (a, b) in diffs.items()]
    items += [f"{k} = {v}" for k, v in others.items()]
    own = differences(settings, protocol)
    head = f"Protocol `{protocol}`" + (f" with {', '.join(f'{k}={v}' for k, (v, _) in own.items())}" if own else "")
    if not items:
        claim = "Every input equals the public white agent's (Qwen2.5-VL, 8 frames, direct, transformers 4.57.x)."
    elif not diffs and set(others) == {"runtime"}:
        claim = ("The inputs are the public white agent's, but not its runtime, so replies can differ: "
                 + others["runtime"] + ".")
    else:
        claim = "Differs from the public white agent in: " + "; ".join(items) + "."
    notes = [f"{head}. {claim}"]
    if settings.step == "raw" and (sources is None or "egooops" in sources):
        notes.append("Label leak reproduced: with step=raw the EgoOops step is its stored `action_annotation`, "
                     "which is null on exactly the error clips, so the question itself says `Current Step: "
                     "\"None\"` for every error clip. EgoOops numbers under this setting are not a measure of "
                     "error detection (use step=clean).")
    if settings.answers == "lenient":
        notes.append("Baseline answers extracted leniently (answers=lenient): not the public white agent's raw reply.")
    return notes


def apply_to_samples(samples: list, settings: ProtocolSettings) -> list:
    """Rewrite the inputs the protocol changes in each sample (a copy): with the public sampling the window is
    the white agent's reading of the stored times; with step=raw the step is the stored ``action_annotation``."""
    from dataclasses import replace as dc_replace

    from ego_adr.video.public_policy import white_agent_window

    out = []
    for s in samples:
        wire = getattr(s, "wire", None) or {}
        changes: dict = {}
        if settings.sampling == PUBLIC_LINSPACE and wire:
            changes["start"], changes["end"] = white_agent_window(wire.get("start_time", ""), wire.get("end_time", ""))
        if settings.step == "raw" and wire:
            raw = wire.get("action_annotation", "")
            changes["action"] = None if raw is None or str(raw) == "" else str(raw)
            changes["action_field"] = "action_annotation (raw, public)"
        out.append(dc_replace(s, **changes) if changes else s)
    return out


def make_sampler(settings: ProtocolSettings):
    from ego_adr.video.protocol_sampler import ProtocolSampler

    return ProtocolSampler(sampling=settings.sampling, clip_fps=settings.clip_fps, resize=settings.resize)


# ---- what a run (ego_adr.run, its RunConfig) needs; the config is duck-typed to keep run/ off this import path
def settings_of(cfg) -> ProtocolSettings:
    return resolve(cfg.protocol, cfg.protocol_options, cfg.max_new_tokens)


def pipeline_fields(cfg) -> dict:
    """PipelineConfig fields the protocol sets (the public question text is read here, at run time)."""
    s = settings_of(cfg)
    # the protocol's budget is the one-pass baselines' (the public white agent's 128); Ego-ADR's own stages keep
    # the paper's 256 (Appendix C) unless --max-new-tokens was given
    stages = PRESETS[EGO_ADR].max_new_tokens if (cfg.extra or {}).get("max_new_tokens_from") else cfg.max_new_tokens
    out = {"question": s.question, "answers": s.answers, "step": s.step, "max_new_tokens": stages,
           "one_pass_max_new_tokens": s.max_new_tokens}
    if s.question == "public":
        from ego_adr.reasoning.public_text import read_public_text

        text = read_public_text(cfg.data_root, (cfg.protocol_options or {}).get("public_source"))
        out.update(guidance=text.guidance, guidance_sha=text.sha)
    return out


def check(cfg) -> None:
    """Validate the protocol of ``cfg`` (it is not changed); raises :class:`ProtocolError` (or
    PublicSourceMissing) with what to do."""
    s = resolve(cfg.protocol, cfg.protocol_options, cfg.max_new_tokens)
    if s.question == "public":
        from ego_adr.reasoning.public_text import find_green_agent

        find_green_agent(cfg.data_root, (cfg.protocol_options or {}).get("public_source"))


def token_budget(cfg) -> int:
    """The reply budget of ``cfg``'s protocol: its ``max_new_tokens`` when set, else the preset's (ego-adr 256,
    public 128)."""
    return resolve(cfg.protocol, cfg.protocol_options, cfg.max_new_tokens).max_new_tokens


def run_folder_tag(cfg) -> str:
    s = settings_of(cfg)
    if cfg.model is None:  # the offline demo's short budget is documented (run/cli.py), not a protocol choice
        s = replace(s, max_new_tokens=PRESETS[cfg.protocol].max_new_tokens)
    tag = folder_tag(cfg.protocol, s)
    bank = getattr(cfg, "bank_model", None)
    if bank and bank != "paper":  # a deviation from the paper's bank model (Section 5.2)
        tag += f"-bank={bank.rstrip('/').split('/')[-1].lower()}"
    matcher = getattr(cfg, "matcher", "tfidf")
    if matcher != "tfidf":  # a deviation from the paper's TF-IDF key-step matcher (reasoning/embed_matching.py)
        tag += f"-matcher={matcher}"
    return tag


def policy_for(cfg) -> str:
    """The sampling policy name (:mod:`ego_adr.video.policies`) a run's configuration resolves to: its protocol
    settings' sampling rule (``public-linspace`` or ``bin-centre``; a policy and a rule share one name)."""
    try:
        return settings_of(cfg).sampling
    except (AttributeError, ValueError, TypeError):  # a config object without protocol fields
        return PUBLIC_LINSPACE if getattr(cfg, "protocol", "ego-adr") == PUBLIC else BIN_CENTRE
