"""HelpMeOut: a symbolic household benchmark for streaming error monitors (seed paper 000).

``python -m ego_adr.helpmeout generate|validate|evaluate|summarize|templates``; see docs/helpmeout.md.
"""
