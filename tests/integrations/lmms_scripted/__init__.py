"""An lmms-eval plugin holding one model double, ``scripted_replies`` (tests/integrations/test_lmms_eval_scripted.py)."""
