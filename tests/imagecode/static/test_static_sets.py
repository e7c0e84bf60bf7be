"""pipelines/imagecode/static/sets.py: sample queries, search their neighbours, name and split sets.

The chain runs as in a release: folder of real JPEGs -> ReadImageCollection ->
HashAndDedupe -> EmbedImages (thumbnail stand-in) -> BuildStaticSets, and every set is
checked against one flat FAISS index over all embeddings and against the public grammar.
"""
import json
import shutil
from collections import Counter

import apache_beam as beam
import faiss
import numpy as np
import pytest
from apache_beam.testing.util import assert_that, equal_to
from PIL import Image
from skimage import data

from pipelines.imagecode import reasons
from pipelines.imagecode.records import StaticSet
from pipelines.imagecode.static.sets import (BuildStaticSets, assign_split, check_split_ratios,
                                             parse_static_set_name, static_set_name)
from schemas.records import ImageEmbedding
from tests.beam_testing import local_test_pipeline
from tests.paths import REALDATA
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, read_stage_counts, reconcile
from transforms.image.collection import HashAndDedupe, ReadImageCollection
from transforms.image.embed import EmbedImages
from transforms.image.encoders import EncoderSpec, build_encoder

THUMB = EncoderSpec(kind="thumbnail", model_name="thumbnail-16", pretrained=None)
RATIOS = {"train": 0.78, "valid": 0.11, "test": 0.11}
PUBLIC = str(REALDATA / "imagecode" / "train_data.json")
SEED = 7


@pytest.fixture(scope="module")
def photo_folder(tmp_path_factory):
    """12 JPEGs (two crops of six real photos), an exact copy of one and a corrupt file."""
    root = tmp_path_factory.mktemp("open_images")
    photos = {"astronaut": data.astronaut(), "coffee": data.coffee(), "chelsea": data.chelsea(),
              "rocket": data.rocket(), "ihc": data.immunohistochemistry(),
              "camera": np.stack([data.camera()] * 3, axis=-1)}
    for n, (name, pixels) in enumerate(sorted(photos.items())):
        for crop in range(2):
            h, w = pixels.shape[:2]
            dy, dx = h // 40, w // 40  # two crops 2.5% apart: near, not identical
            part = pixels[crop * dy: h - (1 - crop) * dy, crop * dx: w - (1 - crop) * dx]
            image = Image.fromarray(np.ascontiguousarray(part))
            image.thumbnail((128, 128))
            # Hex ids, like Open Images: set names then look like the public ones.
            image.save(root / f"{n:02d}{crop:02d}{name.encode().hex()[:12]}.jpg", quality=90)
    first = sorted(root.iterdir())[0]
    shutil.copy(first, root / "ffffffffffffffff.jpg")
    (root / "0badf00d0badf00d.jpg").write_bytes(first.read_bytes()[:200])
    return root


def embed_folder(folder):
    """What the pipeline computes before BuildStaticSets, done here without Beam."""
    encoder = build_encoder(THUMB)
    out = []
    for path in sorted(folder.glob("*.jpg")):
        if path.name in ("ffffffffffffffff.jpg", "0badf00d0badf00d.jpg"):
            continue
        vector = encoder.encode([np.asarray(Image.open(path).convert("RGB"))])[0]
        out.append(ImageEmbedding(path.stem, str(path), "", vector))
    return out


def expected_sets(embeddings, n_sets, k):
    ids = [e.image_id for e in embeddings]
    vectors = np.stack([e.embedding for e in embeddings])
    index = faiss.IndexFlatL2(vectors.shape[1])
    index.add(vectors)
    squared, rows = index.search(vectors, len(ids))
    chosen = sorted(ids, key=lambda i: priority(SEED, i))[:n_sets]
    sets = []
    for rank, query in enumerate(chosen):
        q = ids.index(query)
        ranked = sorted((float(np.sqrt(np.float64(s))), ids[r]) for s, r in zip(squared[q], rows[q]) if r != q)[:k]
        name = static_set_name("open-images", rank, query)
        sets.append((name, [query] + [i for _, i in ranked], [0.0] + [d for d, _ in ranked],
                     assign_split(SEED, name, check_split_ratios(RATIOS))))
    return sets


def summary(s: StaticSet):
    return s.set_name, s.image_ids, s.distances, s.split


def test_static_sets_from_a_folder_of_photos(photo_folder):
    reference = embed_folder(photo_folder)
    expected = expected_sets(reference, n_sets=5, k=3)
    paths = {e.image_id: e.path for e in reference}

    def check(sets):
        got = sorted((summary(s) for s in sets), key=lambda t: t[0])
        want = sorted(expected, key=lambda t: t[0])
        assert [g[0] for g in got] == [w[0] for w in want]
        for g, w in zip(got, want):
            assert g[1] == w[1] and g[3] == w[3]
            np.testing.assert_allclose(g[2], w[2], atol=1e-5)  # float32 reference distances
        for s in sets:
            assert s.image_paths == [paths[i] for i in s.image_ids]
            assert s.distances == sorted(s.distances) and s.distances[0] == 0.0

    p = local_test_pipeline()
    images = p | ReadImageCollection(str(photo_folder))
    unique = images[MAIN] | HashAndDedupe()
    embedded = unique[MAIN] | EmbedImages(THUMB)
    sets = embedded[MAIN] | BuildStaticSets(SEED, n_sets=5, k=3, num_shards=4, split_ratios=RATIOS)
    assert_that(sets[MAIN], check, label="sets")
    assert_that(sets[REJECTS], equal_to([]), label="no set rejects")
    assert_that(embedded[REJECTS] | beam.Map(lambda r: (r.reason, r.item_id)),
                equal_to([(reasons.UNREADABLE_IMAGE, "0badf00d0badf00d")]), label="corrupt")
    assert_that(unique[REJECTS] | beam.Map(lambda r: r.reason), equal_to([reasons.DUPLICATE_IMAGE]), label="copy")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)
    assert counts["static_sets"]["set.in"] == counts["static_sets"]["set.out"] == 5
    assert counts["static_sets"]["image.candidates"] == 12
    assert reconcile(counts) == []


def test_crops_of_one_photo_are_each_others_nearest(photo_folder):
    """The thumbnail stand-in still finds the other crop of the same photo first."""
    embeddings = embed_folder(photo_folder)
    for name, ids, _, _ in expected_sets(embeddings, n_sets=None, k=1):
        assert ids[0][:2] == ids[1][:2], name  # the first two hex digits name the photo


def run_sets(embeddings, n_sets, k, num_shards=3, **options):
    p = local_test_pipeline(**options)
    out = p | beam.Create(embeddings) | BuildStaticSets(SEED, n_sets, k, num_shards, RATIOS)
    return p, out


def grid_embeddings(n):
    vectors = np.random.default_rng(5).integers(0, 3, (n, 6)).astype(np.float32)
    return [ImageEmbedding(f"{j:016x}", f"/img/{j}.jpg", "", v) for j, v in enumerate(vectors)]


def test_all_images_when_n_sets_is_none_with_ties_in_worker_processes():
    embeddings = grid_embeddings(30)
    expected = [(name, ids, dists, split) for name, ids, dists, split in expected_sets(embeddings, None, 9)]
    p, out = run_sets(embeddings, None, 9, num_shards=5,
                      direct_running_mode="multi_processing", direct_num_workers=2)
    assert_that(out[MAIN] | beam.Map(summary), equal_to(expected))  # grid distances are exact
    p.run().wait_until_finish()


def test_too_few_neighbours_are_rejected():
    embeddings = grid_embeddings(4)
    p, out = run_sets(embeddings, 10, k=9)
    assert_that(out[MAIN], equal_to([]), label="none")
    assert_that(out[REJECTS] | beam.Map(lambda r: (r.reason, parse_static_set_name(r.item_id).rank)),
                equal_to([(reasons.TOO_FEW_NEIGHBOURS, n) for n in range(4)]), label="rejects")
    result = p.run()
    result.wait_until_finish()
    counts = read_stage_counts(result)["static_sets"]
    assert counts["set.in"] == counts["set.rejected.too_few_neighbours"] == 4
    assert reconcile({"static_sets": counts}) == []


# ---------------------------------------------------------------- names and splits

def test_set_names_follow_the_public_grammar():
    with open(PUBLIC) as f:
        public = [k for k in json.load(f) if k.startswith("open-images-")]
    assert len(public) > 1000
    for name in public:
        parsed = parse_static_set_name(name)
        assert parsed.source == "open-images"
        assert static_set_name(parsed.source, parsed.rank, parsed.image_id) == name
    assert static_set_name("open-images", 1283, "0f0565064ea964f8") == "open-images-1283_0f0565064ea964f8"
    assert parse_static_set_name("open-images-5_a-3_b").image_id == "a-3_b"
    for bad in ("open-images_0f05", "MSR-VTT-videoX-shot1_0", "open-images-x_1"):
        with pytest.raises(ValueError):
            parse_static_set_name(bad)
    with pytest.raises(ValueError):
        static_set_name("open-images", -1, "x")


def test_splits_follow_the_ratios_and_the_seed():
    ratios = check_split_ratios(RATIOS)
    names = [static_set_name("open-images", n, f"{n:016x}") for n in range(20000)]
    counts = Counter(assign_split(SEED, n, ratios) for n in names)
    for split, ratio in RATIOS.items():
        assert abs(counts[split] / len(names) - ratio) < 0.01
    assert [assign_split(SEED, n, ratios) for n in names[:50]] == [assign_split(SEED, n, ratios) for n in names[:50]]
    assert [assign_split(SEED, n, ratios) for n in names[:50]] != [assign_split(SEED + 1, n, ratios) for n in names[:50]]
    assert check_split_ratios({"train": 2, "test": 2}) == {"train": 0.5, "test": 0.5}
    for bad in ({"dev": 1.0}, {"train": -1}, {"train": 0}):
        with pytest.raises(ValueError):
            check_split_ratios(bad)
