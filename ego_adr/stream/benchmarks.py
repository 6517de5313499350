"""The Ego-ADR video stream on the monitoring layer's benchmark registry (:mod:`ego_adr.monitoring.benchmarks`
finds this module): EgoErrorVQA's annotated recordings, or the embedded synthetic ones, watched window by window;
the driver is :class:`ego_adr.stream.evaluate.EgoADRStream`."""

from __future__ import annotations

from ego_adr.monitoring.benchmarks import BenchmarkSpec, Split

BENCHMARKS = (
    BenchmarkSpec(
        "egoadr-stream", "Ego-ADR online over whole video recordings (EgoErrorVQA's annotated segments)",
        episodes="a whole recording with its annotated segments (--data-root, or the embedded synthetic recordings)",
        observation="one video window (every --stride seconds, the last --window seconds)",
        splits=(Split("test", "score", "every annotated recording of --sources (--limit N per source)"),),
        monitors="ego_adr.stream.registry:REGISTRY",
        metrics="the layer's M1, M2, M4 over annotated segments; time-based M3, delay, point of error, real-time "
                "factor (stream/metrics.py, stream/detection.py)",
        report="one table row per monitor (all recordings, then the fully annotated ones), per-recording timelines",
        driver="ego_adr.stream.evaluate:EgoADRStream", page="docs/stream.md"),
)
