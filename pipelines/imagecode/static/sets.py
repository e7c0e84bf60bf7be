"""Static-picture sets (ImageCoDe §3.1 "Static Pictures").

"For each image, we retrieve the 9 closest images from the training set based on their
CLIP encodings. We then randomly sample 4,845 of these image sets."

Forming a set for every image and sampling afterwards would search 1.74M queries to keep
4,845; the sample does not depend on the neighbours, so we sample the query images first
and search only for them. The sample is seeded and order-free: each image gets
priority(seed, image_id) and the `n_sets` lowest priorities are the queries (a Beam
combiner; no worker holds more than n_sets candidates). A query's rank in that order
(0 = lowest priority) gives its public name `open-images-<rank>_<image id>`, e.g.
"open-images-1283_0f0565064ea964f8". Its split comes from a seeded hash of that name.

Counters: stage "static_sets", level "set" (in: sampled queries; out: sets; rejected:
too_few_neighbours) and "image.candidates" (the images the queries were sampled from).
"""
from __future__ import annotations

import re
from typing import Dict, NamedTuple, Optional

import apache_beam as beam

from pipelines.imagecode import reasons
from pipelines.imagecode.records import StaticSet
from schemas.names import MAX_NAME_LENGTH, safe_name
from schemas.records import SPLITS
from transforms.core.sampling import priority
from transforms.core.stage import StageFn, stage_pardo
from apache_beam.io.filesystems import FileSystems

from transforms.vectors.knn import KnnSpec, SearchVectorFiles
from transforms.vectors.vector_files import ReadRows, RemoveFolderWhenDone, WriteVectorFiles, scratch_folder

STAGE = "static_sets"
SOURCE = "open-images"

# The source is the shortest prefix before "-<digits>_" ("open-images" has no such part);
# the image id after it may contain anything safe, "-" and "_" included.
STATIC_SET_NAME_RE = re.compile(r"^(?P<source>[A-Za-z0-9_.-]+?)-(?P<rank>\d+)_(?P<image_id>[A-Za-z0-9_.-]+)$")


class StaticSetName(NamedTuple):
    source: str
    rank: int
    image_id: str


def static_set_name(source: str, rank: int, image_id: str) -> str:
    """`<source>-<rank>_<query image id>`, e.g. "open-images-1283_0f0565064ea964f8"."""
    if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
        raise ValueError(f"rank must be a non-negative int, got {rank!r}")
    name = f"{safe_name(source)}-{rank}_{safe_name(image_id)}"
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(f"set name longer than {MAX_NAME_LENGTH} characters: {name[:40]}...")
    return name


def parse_static_set_name(name: str) -> StaticSetName:
    """Split a public static set name; ValueError if it does not match the grammar."""
    m = STATIC_SET_NAME_RE.match(name)
    if not m:
        raise ValueError(f"not a static set name: {name!r}")
    return StaticSetName(m["source"], int(m["rank"]), m["image_id"])


def check_split_ratios(split_ratios: Dict[str, float]) -> Dict[str, float]:
    """Ratios over SPLITS, normalised to sum 1, in SPLITS order; ValueError if malformed."""
    unknown = sorted(set(split_ratios) - set(SPLITS))
    if unknown:
        raise ValueError(f"split_ratios: unknown split(s) {unknown}; use {', '.join(SPLITS)}")
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0 for v in split_ratios.values()):
        raise ValueError("split_ratios: every ratio must be a number >= 0")
    total = float(sum(split_ratios.values()))
    if total <= 0:
        raise ValueError("split_ratios: the ratios must not all be 0")
    return {s: split_ratios[s] / total for s in SPLITS if split_ratios.get(s, 0) > 0}


def assign_split(seed: int, set_name: str, ratios: Dict[str, float]) -> str:
    """A split for a set, from a seeded hash of its name (checked ratios, see above)."""
    u = priority(seed, f"split\x00{set_name}") / 2.0 ** 64  # uniform in [0, 1)
    cumulative = 0.0
    for split, ratio in ratios.items():
        cumulative += ratio
        if u < cumulative:
            return split
    return next(reversed(ratios))  # u just below 1 with rounding in the sum


class BuildStaticSets(beam.PTransform):
    """ImageEmbedding -> StaticSet (main) and set-level Rejects (too_few_neighbours).

    seed          drives the sample and the splits
    n_sets        how many query images (sets) to sample; None = every image
    k             neighbours per set (§3.1: 9, so a set holds 10 images)
    num_shards    database shards of the exact kNN (tasks searched in parallel)
    split_ratios  e.g. {"train": 0.78, "valid": 0.11, "test": 0.11}
    source        the first part of the set names
    scratch_dir   where the vectors are written while the sets are built (removed after;
                  default: transforms/vectors/vector_files.scratch_folder)
    knn           who proposes the kNN's candidates (KnnSpec: backend, device); the sets
                  do not depend on it

    The embeddings are written to vector files where they arrive; the sampled queries are
    read back from them and searched shard by shard (transforms/vectors/knn.py), so no
    worker holds the collection's vectors.
    """

    def __init__(self, seed: int, n_sets: Optional[int], k: int = 9, num_shards: int = 8,
                 split_ratios: Optional[Dict[str, float]] = None, source: str = SOURCE,
                 scratch_dir: Optional[str] = None, knn: Optional[KnnSpec] = None):
        super().__init__()
        if n_sets is not None and n_sets < 0:
            raise ValueError("n_sets must be >= 0 or None")
        self.seed, self.n_sets, self.k, self.num_shards = seed, n_sets, k, num_shards
        self.ratios = check_split_ratios(split_ratios or {"train": 1.0})
        self.source = safe_name(source)
        self.scratch_dir = scratch_dir
        self.knn = knn or KnnSpec()

    def expand(self, embeddings):
        seed = self.seed
        folder = scratch_folder(embeddings.pipeline, self.scratch_dir)
        files = embeddings | "Vectors to files" >> WriteVectorFiles(
            FileSystems.join(folder, "database"), self.num_shards)
        keyed = embeddings | "Priorities" >> beam.ParDo(_Prioritise(seed))
        if self.n_sets is None:
            lowest = keyed | "All, by priority" >> beam.combiners.ToList() | beam.Map(sorted)
        else:
            # Top.Of with reverse=True: the n smallest, ascending, as one list.
            lowest = keyed | "Lowest priorities" >> beam.combiners.Top.Of(self.n_sets, reverse=True)
        sample = beam.pvalue.AsSingleton(
            lowest | "Rank" >> beam.Map(lambda entries: {i: (rank, path)
                                                         for rank, (_, i, path) in enumerate(entries)}))
        queries = files | "Queries" >> ReadRows(sample)
        found = ((queries, files) | "Nearest" >> SearchVectorFiles(
            self.k, FileSystems.join(folder, "queries"), exclude_self=True, spec=self.knn))
        _ = found | "Remove vector files" >> RemoveFolderWhenDone(folder)
        return found | "Form sets" >> stage_pardo(
            _FormSet(seed, self.k, self.ratios, self.source), sample)


class _Prioritise(StageFn):
    """Every embedded image is a candidate query (a note: no image is dropped here)."""
    stage, level = STAGE, "image"
    counts_in = counts_out = False

    def __init__(self, seed: int):
        self._seed = seed

    def judge(self, embedding):
        self.counts.note("image.candidates")
        yield priority(self._seed, embedding.image_id), embedding.image_id, embedding.path


class _FormSet(StageFn):
    stage, level = STAGE, "set"

    def __init__(self, seed: int, k: int, ratios: Dict[str, float], source: str):
        self._seed, self._k, self._ratios, self._source = seed, k, ratios, source

    def judge(self, found, sample):
        query_id, neighbours = found
        rank, query_path = sample[query_id]
        name = static_set_name(self._source, rank, query_id)
        split = assign_split(self._seed, name, self._ratios)
        if len(neighbours) < self._k:
            yield self.reject(
                reasons.TOO_FEW_NEIGHBOURS, name, split=split,
                detail=f"{len(neighbours)} other image(s) in the collection, {self._k} needed")
            return
        yield StaticSet(
            set_name=name, query_id=query_id,
            image_ids=[query_id] + [i for _, i, _ in neighbours],
            image_paths=[query_path] + [p for _, _, p in neighbours],
            distances=[0.0] + [float(d) for d, _, _ in neighbours],
            split=split)
