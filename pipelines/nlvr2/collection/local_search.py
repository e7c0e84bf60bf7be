"""A local stand-in for the search engine's similar-images tool (App. B; spec S2).

A search-result line may give only its `seed` (no `similar`): with
`collection.search.local_similar.collection` set, its similar images are the seed's
nearest neighbours in that local image collection: exact kNN (transforms/vectors/knn.py)
over embeddings of the project's encoder (transforms/image/encoders.py: CLIP, or the
thumbnail stand-in), most similar first. The seed's own file, when the collection holds
it, is not its own neighbour (same path or same bytes). A neighbour's URL is its path
relative to the collection's folder.
"""
from __future__ import annotations

import os

import apache_beam as beam

from pipelines.nlvr2.collection.config import LocalSimilarConfig
from pipelines.nlvr2.collection.image_sets import Image, ImageSet
from schemas.records import ImageRef
from transforms.core.stage import MAIN, REJECTS
from transforms.image.collection import ReadImageCollection, is_manifest
from transforms.image.embed import EmbedImages
from transforms.image.encoders import EncoderSpec
from transforms.vectors.knn import ShardedExactKnn

STAND_IN = ("similar images: exact kNN over a local image collection with the project's image "
            "encoder, instead of the search engine's similar-images tool (App. B)")


CONFIG_PREFIX = "collection.search.local_similar"   # where LocalSimilarConfig sits


def encoder_spec(cfg: LocalSimilarConfig) -> EncoderSpec:
    return EncoderSpec(kind=cfg.kind, model_name=cfg.model_name, pretrained=cfg.pretrained,
                       checkpoint=cfg.checkpoint, batch_size=cfg.batch_size, device=cfg.device,
                       thumbnail_size=cfg.thumbnail_size, precision=cfg.precision,
                       config_prefix=CONFIG_PREFIX)


def _complete(image_set: ImageSet, neighbours, seeds, base: str, n_similar: int) -> ImageSet:
    seed = image_set.images[0]
    seed_sha = seeds.get(image_set.key)
    similar = []
    for _, image_id, path in neighbours:
        if path == seed.path or image_id == seed_sha:
            continue
        similar.append(Image(len(similar) + 1, os.path.relpath(path, base) if base else path, path))
        if len(similar) == n_similar:
            break
    return image_set._replace(images=(seed,) + tuple(similar))


class LocalSimilarImages(beam.PTransform):
    """ImageSet (seed only) -> {MAIN: ImageSet with up to set_size - 1 similar images,
    REJECTS: unreadable seeds or collection images (stages "images", "embed")}."""

    def __init__(self, cfg: LocalSimilarConfig, set_size: int):
        super().__init__()
        self._cfg, self._n = cfg, set_size - 1

    def expand(self, seeds_only):
        cfg, n = self._cfg, self._n
        spec = encoder_spec(cfg)
        source = cfg.collection
        base = "" if "://" in source else (os.path.dirname(source) if is_manifest(source) else source)
        collection = seeds_only.pipeline | "Read collection" >> ReadImageCollection(source)
        database = collection[MAIN] | "Embed collection" >> EmbedImages(spec)
        seeds = (seeds_only | "Seed refs" >> beam.Map(lambda s: ImageRef(s.images[0].path, s.key))
                 | "Embed seeds" >> EmbedImages(spec))
        # database ids are content hashes, so the seed's own file is recognised by its bytes
        db = database[MAIN] | "Id by content" >> beam.Map(
            lambda e: e.__class__(image_id=e.content_sha256, path=e.path,
                                  content_sha256=e.content_sha256, embedding=e.embedding))
        found = (seeds[MAIN], db) | "Nearest" >> ShardedExactKnn(n + 1, cfg.shards, exclude_self=False,
                                                                        spec=cfg.knn.spec())
        seed_shas = beam.pvalue.AsDict(seeds[MAIN] | "Seed sha" >> beam.Map(lambda e: (e.image_id, e.content_sha256)))
        completed = ({"set": seeds_only | "Set by key" >> beam.Map(lambda s: (s.key, s)), "found": found}
                     | "Join" >> beam.CoGroupByKey()
                     | "Complete" >> beam.FlatMap(
                         lambda kv, shas: [_complete(s, next(iter(kv[1]["found"]), []), shas, base, n)
                                           for s in kv[1]["set"] if kv[1]["found"]],
                         shas=seed_shas))
        rejects = (collection[REJECTS], database[REJECTS], seeds[REJECTS]) | "Local rejects" >> beam.Flatten()
        return {MAIN: completed, REJECTS: rejects}
