"""The lmms-eval task folder (``LMMS_EVAL_PLUGINS`` points lmms-eval here; ``--include_path`` may name it too)."""
