"""The step-stream benchmarks' data sources: the cut benchmarks' files (DTGL's ``train.json`` / ``test.json``, PREGO's
predictions: :mod:`.cut`), the complete trials' recordings (:mod:`.complete`) labelled from the datasets' own
annotation files (:mod:`.sources`), and how all of them are fetched and built (:mod:`.download`, :mod:`.convert`)."""
