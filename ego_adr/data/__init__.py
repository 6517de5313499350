"""Datasets: EgoErrorVQA (the four public sources) and the embedded demo set, all as :class:`Sample`."""

from ego_adr.data.sample import QAPair, Sample

__all__ = ["QAPair", "Sample"]
