"""Procedure banks per task, built once: rule-based in memory, model-assisted cached on disk per model.

The model-assisted bank (deep mode, Section 5.2) is one text-only call per task. Its answer is parsed with
:func:`ego_adr.procedures.parse_model_bank`; when that fails the rule-based bank is used and the reason is kept
in ``ProcedureBank.note``, so a run shows which tasks fell back.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ego_adr.reasoning import prompts as P
from ego_adr.reasoning.procedures import ProcedureBank, parse_model_bank, rule_based_bank

if TYPE_CHECKING:
    from ego_adr.reasoning.pipeline import EgoADR


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class BankStore:
    def __init__(self, cache_dir: Path | None) -> None:
        self.cache_dir = cache_dir
        self._mem: dict[tuple, ProcedureBank] = {}

    def rule(self, task_id: str, procedure: str) -> ProcedureBank:
        key = ("rule", task_id, _h(procedure))
        if key not in self._mem:
            self._mem[key] = rule_based_bank(task_id, procedure)
        return self._mem[key]

    def _path(self, fingerprint: str, task_id: str, procedure: str) -> Path | None:
        if self.cache_dir is None:
            return None
        name = _h(f"{task_id}|{procedure}|{P.BANK_BUILD.name}|{P.BANK_BUILD.version}")
        return self.cache_dir / "banks" / _h(fingerprint) / f"{name}.json"

    def _key(self, pipe: EgoADR, task_id: str, procedure: str) -> tuple:
        return ("model", pipe.model.fingerprint, task_id, _h(procedure))

    def prepare(self, tasks: dict[str, str], pipe: EgoADR) -> None:
        """Build the model-assisted banks of all ``tasks`` not built yet, in one batch."""
        use_model = pipe.config.bank_builder == "model" or (
            pipe.config.bank_builder == "auto" and pipe.route == "deep" and pipe.model is not None
        )
        if not use_model:
            return
        todo = []
        for task_id, proc in tasks.items():
            key = self._key(pipe, task_id, proc)
            if key in self._mem or not proc:
                continue
            path = self._path(pipe.model.fingerprint, task_id, proc)
            if path is not None and path.exists():
                try:
                    self._mem[key] = ProcedureBank.from_dict(json.loads(path.read_text()))
                    continue
                except (json.JSONDecodeError, KeyError, TypeError):
                    pass
            todo.append((task_id, proc, key, path))
        if not todo:
            return
        reqs = [pipe._text_request(P.BANK_BUILD, "bank", procedure=proc) for _, proc, _, _ in todo]
        gens = pipe.model.generate(reqs)
        builder = f"model:{pipe.model.model_id}"
        for (task_id, proc, key, path), g in zip(todo, gens):
            bank = parse_model_bank(task_id, g.text or "", builder) if g.ok else None
            if bank is None:
                bank = rule_based_bank(task_id, proc)
                bank.note = f"model bank unusable ({g.error or 'unparseable answer'}); rule-based fallback"
            bank.raw = g.text  # type: ignore[attr-defined]
            self._mem[key] = bank
            if path is not None and g.ok:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text(json.dumps(bank.to_dict(), ensure_ascii=False, indent=1))
                tmp.replace(path)

    def model(self, task_id: str, procedure: str, pipe: EgoADR) -> ProcedureBank:
        key = self._key(pipe, task_id, procedure)
        if key not in self._mem:
            self.prepare({task_id: procedure}, pipe)
        return self._mem.get(key) or self.rule(task_id, procedure)
