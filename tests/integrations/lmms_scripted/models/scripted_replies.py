"""A model double for lmms-eval: it replies from a script, so the tests know every reply and can compute the
task's numbers by hand. The tests are about the task's scoring and judging code around the model.

``--model scripted_replies --model_args script=FILE``: ``FILE`` is JSON, ``{key: reply}`` with key the document's
``sample_id`` (multiple choice) or ``sample_id#qa_index`` (open-ended); a document missing from it stops the run.
"""

from __future__ import annotations

import json

from lmms_eval.api.model import lmms


class ScriptedReplies(lmms):
    is_simple = True  # it reads the task's documents (self.task_dict), as --model ego_adr does

    def __init__(self, script: str, batch_size=1, **_ignored) -> None:
        super().__init__()
        with open(script, encoding="utf-8") as f:
            self.script = json.load(f)

    def _key(self, request) -> str:
        _ctx, _gen, _visual, doc_id, task, split = request.args
        doc = self.task_dict[task][split][doc_id]
        return doc["sample_id"] + (f"#{doc['qa_index']}" if doc.get("kind") == "open-end" else "")

    def generate_until(self, requests) -> list[str]:
        keys = [self._key(r) for r in requests]
        missing = [k for k in keys if k not in self.script]
        if missing:
            raise KeyError(f"scripted_replies: no reply scripted for {missing[0]}")
        return [self.script[k] for k in keys]

    def loglikelihood(self, requests):
        raise NotImplementedError("scripted_replies only generates")

    def generate_until_multi_round(self, requests):
        raise NotImplementedError("scripted_replies answers in one round")
