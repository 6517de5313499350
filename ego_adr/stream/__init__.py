"""Ego-ADR online over whole recordings: the stream runner, episodes from annotations, evaluation, timeline.

The monitor itself lives in :mod:`ego_adr.reasoning.stream`; ``python -m ego_adr.stream --help`` for the CLI.
"""
