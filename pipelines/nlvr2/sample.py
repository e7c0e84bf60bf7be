"""The embedded NLVR2 sample (interface; being written): generated images and simulated
crowd answers for every round, so that every reject reason occurs."""
from __future__ import annotations


def make_nlvr2_sample(folder: str) -> None:
    raise NotImplementedError("NLVR2 sample: not written yet")
