"""The records of NLVR2's collection: a search result's images, as they shrink stage by
stage (S2 search, S3 pruning, the crowd pruning rounds, pairing).

Their own module so that the search stages and the local similar-images stand-in
(local_search.py, which search.py wires in when configured) both read them without
importing each other.
"""
from __future__ import annotations

from typing import NamedTuple, Tuple


class Image(NamedTuple):
    position: int          # 0 = the search result itself, then the similar images in order
    url: str
    path: str              # the local file read
    sha256: str = ""
    width: int = 0
    height: int = 0


class ImageSet(NamedTuple):
    """A query's result and its similar images; `images` shrink stage by stage."""
    query: str
    rank: int
    synset: str
    images: Tuple[Image, ...]
    needs_similar: bool = False   # a seed alone, for the local similar-images stand-in

    @property
    def key(self) -> str:
        """The set's id in every task and answer file."""
        return f"{self.query}#{self.rank}"

    @property
    def query_field(self) -> str:
        """The released `query`: the query text and the result index ("some cups38")."""
        return f"{self.query}{self.rank}"
