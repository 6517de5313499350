"""The field's step-stream benchmarks, Assembly101-O and EPIC-Tent-O (PREGO, TI-PREGO, DTGL), on the monitoring
layer: each test recording is a sequence of recognised steps cut at its first mistake (the last step is the
mistake); monitors learn from the correct training sequences only."""
