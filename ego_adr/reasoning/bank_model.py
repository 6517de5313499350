"""Which model builds the deep-mode procedure bank (``--bank-model``), resolved from the run's settings.

The paper (Section 5.2, "Deep decoupling") builds the bank with Qwen2.5-VL-7B-Instruct for every deep model, so
that is the default (``paper``). ``evaluated`` uses the evaluated model, ``rule`` the rule-based bank, and any
alias, hub id or folder names another model. The embedded tiny demo model, tiny aliases and a model handed to
the runner as an object (library use, tests) default to ``evaluated``: the paper's bank model is a 7B download
they must not trigger. The bank model is loaded only when a bank is not in the cache.
"""

from __future__ import annotations

from collections.abc import Callable

from ego_adr.models.registry import is_tiny

PAPER = "paper"
PAPER_BANK_MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"  # Section 5.2
SPECIAL = (PAPER, "evaluated", "rule")


def resolve_bank_model(bank_model: str | None, model: str | None, injected: bool) -> str:
    """``evaluated``, ``rule`` or the name of the model that builds banks."""
    choice = bank_model or PAPER
    if choice == PAPER:
        if injected or is_tiny(model):  # the demo model or a tiny* alias: offline, so is its bank
            return "evaluated"
        choice = PAPER_BANK_MODEL
    if choice not in SPECIAL and model is not None:
        from ego_adr.models.registry import ALIASES

        same = {model, getattr(ALIASES.find(model), "hub_id", None)}
        if choice in same or getattr(ALIASES.find(choice), "hub_id", choice) in same:
            return "evaluated"
    return choice


class BankModelLoader:
    """A zero-argument loader with a name-based ``fingerprint`` (the cache identity of banks it builds)."""

    def __init__(self, name: str, load: Callable[[str], object]):
        self.name = name
        self.fingerprint = f"bank-model:{name}"
        self._load = load

    def __call__(self):
        return self._load(self.name)


def bank_setup(bank_model: str | None, model: str | None, injected: bool, load: Callable[[str], object]
               ) -> tuple[dict, object | None, str]:
    """(PipelineConfig fields, ``bank_model`` argument of EgoADR, resolved name for run.json) for
    ``--bank-model`` and the evaluated ``model`` (``injected``: a model object given instead of a name)."""
    name = resolve_bank_model(bank_model, model, injected)
    if name == "rule":
        return {"bank_builder": "rule"}, None, name
    if name == "evaluated":
        return {}, None, name
    return {}, BankModelLoader(name, load), name
