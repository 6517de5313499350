"""Scoring monitors on episodes: ``evalrun`` (one monitor over a split, its M3 threshold rule, the 60-episode
subset), ``scoring`` (episodes and outputs as the monitoring layer's per-step rows, scored by the layer's M1-M4),
``report`` and ``summary`` / ``summary_html`` (the paper's tables), ``paper_results`` (the paper's rows beside
ours). The metrics themselves are the monitoring layer's (:mod:`ego_adr.monitoring.episode_metrics`)."""
