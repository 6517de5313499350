"""``LMMS_EVAL_PLUGINS=lmms_scripted`` (with ``tests/integrations`` on ``PYTHONPATH``): lmms-eval imports
``lmms_scripted.models.scripted_replies.ScriptedReplies`` as ``--model scripted_replies``."""

AVAILABLE_MODELS = {"scripted_replies": "ScriptedReplies"}
