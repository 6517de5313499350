"""The monitors the research scripts compare (ours), by short name."""

from __future__ import annotations

MONITORS = ("graph", "seq2seq", "sgt", "ngram", "ngram-task", "stacked")


def build(name: str):
    from ego_adr.online_mistakes.monitors.graph import GraphMonitor
    from ego_adr.online_mistakes.monitors.neural_oneclass import OneClassMonitor
    from ego_adr.online_mistakes.monitors.ngram import NGramMonitor
    from ego_adr.online_mistakes.monitors.stacked import StackedMonitor

    return {"graph": GraphMonitor, "seq2seq": lambda: OneClassMonitor("gru"),
            "sgt": lambda: OneClassMonitor("transformer"), "ngram": NGramMonitor,
            "ngram-task": lambda: NGramMonitor(task=True),
            "stacked": StackedMonitor}[name]()
