"""Procedure banks per task, built once: rule-based in memory, model-assisted cached on disk per bank model.

The model-assisted bank (deep mode, Section 5.2) is one text-only call per task. The paper builds it with
Qwen2.5-VL-7B-Instruct for every deep model ("We first apply Qwen2.5-VL-7B-Instruct to segment the entire
procedure"), so the bank model is its own setting (``--bank-model``, reasoning/bank_model.py), with its own token
budget (:data:`BANK_MAX_NEW_TOKENS`): a step list with objects for a long procedure needs more than the 256 tokens
of the other stages. The prompt asks for a closing ``END`` line; an answer without it was probably cut off by the
budget, which the bank's ``note`` records (the steps read so far are kept). An answer that cannot be parsed falls
back to the rule-based bank with the reason in ``note``. Banks are cached per (task, procedure, prompt version,
bank model fingerprint, budget). The store is given the bank model, its budget and the cache folder, never the
pipeline (which imports this module).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ego_adr.models.base import GenerationConfig, Message, Request
from ego_adr.reasoning import prompts as P
from ego_adr.reasoning.procedures import ProcedureBank, parse_model_bank, rule_based_bank
from ego_adr.store import write_json

BANK_MAX_NEW_TOKENS = 768  # our choice (the paper gives no bank budget): ~20 steps with objects fit
_END = re.compile(r"^\s*\**END\**\s*$", re.M)


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cut_off_note(text: str | None, budget: int) -> str | None:
    """Why the bank answer looks cut off (no closing END line within ``budget`` new tokens), or None."""
    if text and _END.search(text):
        return None
    return f"bank output probably cut off: no END line within {budget} new tokens"


class BankStore:
    """The banks of one pipeline. ``model`` is what builds model-assisted banks: a VLM, or a zero-argument loader
    with a name-based ``fingerprint`` (reasoning/bank_model.py) called the first time a bank is not in the cache;
    None when the run uses rule-based banks only. ``budget``: the bank call's new tokens."""

    def __init__(self, cache_dir: Path | None, model=None, budget: int = BANK_MAX_NEW_TOKENS) -> None:
        self.cache_dir = cache_dir
        self.budget = budget
        self._model = model
        self._fingerprint: str | None = None
        self._mem: dict[tuple, ProcedureBank] = {}

    @property
    def uses_model(self) -> bool:
        return self._model is not None

    def fingerprint(self) -> str:
        """Cache identity of the bank model, read once (before any load), so that the keys do not change when a
        loader turns into the loaded model."""
        if self._fingerprint is None:
            self._fingerprint = self._model.fingerprint
        return self._fingerprint

    def _vlm(self):
        self.fingerprint()
        if callable(self._model) and not hasattr(self._model, "generate"):
            self._model = self._model()
        return self._model

    def for_task(self, task_id: str, procedure: str) -> ProcedureBank:
        """The task's bank: model-assisted when this store has a bank model, else rule-based."""
        return self.model(task_id, procedure) if self.uses_model else self.rule(task_id, procedure)

    def rule(self, task_id: str, procedure: str) -> ProcedureBank:
        key = ("rule", task_id, _h(procedure))
        if key not in self._mem:
            self._mem[key] = rule_based_bank(task_id, procedure)
        return self._mem[key]

    def _path(self, task_id: str, procedure: str) -> Path | None:
        if self.cache_dir is None:
            return None
        name = _h(f"{task_id}|{procedure}|{P.BANK_BUILD.name}|{P.BANK_BUILD.version}|{self.budget}")
        return self.cache_dir / "banks" / _h(self.fingerprint()) / f"{name}.json"

    def _key(self, task_id: str, procedure: str) -> tuple:
        return ("model", self.fingerprint(), task_id, _h(procedure))

    def prepare(self, tasks: dict[str, str]) -> None:
        """Build the model-assisted banks of all ``tasks`` not built yet, in one batch, with the bank model."""
        if not self.uses_model:
            return
        budget = self.budget
        todo = []
        for task_id, proc in tasks.items():
            key = self._key(task_id, proc)
            if key in self._mem or not proc:
                continue
            path = self._path(task_id, proc)
            if path is not None and path.exists():
                try:
                    self._mem[key] = ProcedureBank.from_dict(json.loads(path.read_text()))
                    continue
                except (json.JSONDecodeError, KeyError, TypeError):
                    pass
            todo.append((task_id, proc, key, path))
        if not todo:
            return
        model = self._vlm()
        reqs = []
        for _, proc, _, _ in todo:
            parts: list = [P.BANK_BUILD.render(procedure=proc)]
            if not model.capabilities.text_only:
                from ego_adr.models.base import black_frames

                parts.insert(0, black_frames())  # Section 6.4: a black image beside the text
            reqs.append(Request([Message.user(*parts)], GenerationConfig(max_new_tokens=budget),
                                P.BANK_BUILD.meta("bank")))
        gens = model.generate(reqs)
        builder = f"model:{model.model_id}"
        for (task_id, proc, key, path), g in zip(todo, gens):
            bank = parse_model_bank(task_id, _END.split(g.text or "")[0], builder) if g.ok else None
            if bank is None:
                bank = rule_based_bank(task_id, proc)
                bank.note = f"model bank unusable ({g.error or 'unparseable answer'}); rule-based fallback"
            else:
                bank.note = cut_off_note(g.text, budget)
            bank.raw = g.text  # type: ignore[attr-defined]
            self._mem[key] = bank
            if path is not None and g.ok:
                write_json(path, bank.to_dict())

    def model(self, task_id: str, procedure: str) -> ProcedureBank:
        key = self._key(task_id, procedure)
        if key not in self._mem:
            self.prepare({task_id: procedure})
        return self._mem.get(key) or self.rule(task_id, procedure)
