"""``python -m ego_adr.integrations.lmms_eval``: prints the task folder, for ``lmms-eval --include_path``.

Why it is needed: lmms-eval 0.7.3 builds its task index before it reads ``LMMS_EVAL_PLUGINS``, so the plugin
variable registers ``--model ego_adr`` but not the tasks; ``--include_path "$(python -m
ego_adr.integrations.lmms_eval)"`` does (docs/lmms_eval.md).
"""

from ego_adr.integrations.lmms_eval import TASKS_DIR

print(TASKS_DIR)
