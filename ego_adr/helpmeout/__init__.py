"""HelpMeOut: a symbolic household benchmark for streaming error monitors (seed paper 000).

``python -m ego_adr.helpmeout generate|validate|summarize|templates``; its monitors are evaluated by the one
monitoring command, ``python -m ego_adr.monitoring evaluate --benchmark helpmeout`` (``benchmarks.py`` declares it);
see docs/helpmeout.md.

Its rooms follow the data flow: ``world/`` (the domain, templates, trajectory planner and replay an episode happens in),
``generator/`` (episodes with injected errors), ``monitors/`` (what watches them, one step at a time, on the
monitoring layer's protocol) and ``evaluation/`` (scoring them with the layer's metrics, the paper's tables).
"""
