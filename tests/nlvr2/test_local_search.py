"""The local stand-in for the similar-images tool: exact kNN with the thumbnail encoder."""
import os
import pickle

import apache_beam as beam
import numpy as np
from PIL import Image as PILImage

from pipelines.nlvr2.collection.config import LocalSimilarConfig
from pipelines.nlvr2.collection.image_sets import Image, ImageSet
from pipelines.nlvr2.collection.local_search import LocalSimilarImages
from tests.beam_testing import local_test_pipeline
from transforms.core.stage import MAIN


def _save(array, path):
    PILImage.fromarray(np.clip(array, 0, 255).astype(np.uint8)).save(path)


def test_seed_gets_its_nearest_collection_images_not_itself(tmp_path):
    import skimage.data
    folder = tmp_path / "collection"
    folder.mkdir()
    cup = skimage.data.coffee()[:300, :300].astype(np.int16)
    cat = skimage.data.chelsea()[:300, :300].astype(np.int16)
    rng = np.random.default_rng(0)
    _save(cup, folder / "seed.png")                                # the seed itself
    _save(cup + 12, folder / "cup_brighter.png")
    _save(cup + rng.integers(-6, 7, cup.shape), folder / "cup_noisy.png")
    _save(cat, folder / "cat.png")
    _save(cat[::-1], folder / "cat_flipped.png")
    seed = ImageSet("two cups", 0, "cup", (Image(0, "seed.png", str(folder / "seed.png")),), needs_similar=True)
    cfg = LocalSimilarConfig(collection=str(folder), kind="thumbnail", device="cpu")
    out = tmp_path / "out.pickle"
    p = local_test_pipeline()
    found = (p | beam.Create([seed]) | LocalSimilarImages(cfg, set_size=3))
    _ = found[MAIN] | beam.combiners.ToList() | beam.Map(lambda items: out.write_bytes(pickle.dumps(items)))
    p.run().wait_until_finish()
    (completed,) = pickle.loads(out.read_bytes())
    assert completed.images[0] == seed.images[0]
    assert sorted(i.url for i in completed.images[1:]) == ["cup_brighter.png", "cup_noisy.png"]
    assert [i.position for i in completed.images] == [0, 1, 2]
    assert all(os.path.isfile(i.path) for i in completed.images)
