"""HelpMeOut: a symbolic household benchmark for streaming error monitors (seed paper 000).

``python -m ego_adr.helpmeout generate|validate|evaluate|summarize|templates``; see docs/helpmeout.md.

Its rooms follow the data flow: ``world/`` (the domain, templates, planner and replay an episode happens in),
``generator/`` (episodes with injected errors), ``monitors/`` (what watches them, one step at a time, on the
monitoring layer's protocol) and ``evaluation/`` (scoring them with the layer's metrics, the paper's tables).
"""
