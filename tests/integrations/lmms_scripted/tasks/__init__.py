"""No tasks: lmms-eval 0.7.3 looks for <plugin>.tasks of every LMMS_EVAL_PLUGINS entry."""
