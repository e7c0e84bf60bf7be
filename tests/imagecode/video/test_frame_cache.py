"""Rebuilds decode only what is new (issue 34): the cache keeps the JPEG of every frame a
build scored or published (transforms/video/frame_images.py), so a rebuild publishes
from it and decodes a video only for frames never scored or published before.

Builds of two small generated videos with both filters on (a blurred and a captioned
shot), the sample config otherwise; every rebuild's release is compared with one built
cold at the same settings."""
import glob
import hashlib
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from pipelines.cache import prune
from tests.release.release_files import run_record
from transforms.cache.store import checksum
from transforms.video import synthetic
from transforms.video.frame_images import decode_bundle

SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"
FRAME_IMAGE = "frame_image"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("videos")
    lines = []
    for i, segments in enumerate(([("astronaut", 40, "pan"), ("coffee", 24, "pan+text"),
                                   ("chelsea", 40, "zoom")],
                                  [("rocket", 24, "zoom+blur"), ("motorcycle_left", 40, "pan")])):
        synthetic.make_video(str(d / f"v{i}.mp4"), segments)
        lines.append(json.dumps({"path": f"v{i}.mp4", "source": "test", "video_id": f"v{i}",
                                 "split": "train"}))
    (d / "videos.jsonl").write_text("\n".join(lines) + "\n")
    return d


def build(inputs, out, version, *overrides, cache=None):
    sets = [arg for o in overrides for arg in ("--set", o)]
    if cache:
        sets += ["--set", f"cache.dir={cache}"]
    return build_command.build("imagecode", [
        "--config", SAMPLE_CONFIG, "--output", str(out), "--version", version,
        "--set", f"inputs.videos={inputs / 'videos.jsonl'}", "--set", "static.images=null",
        "--set", "crowd.descriptions=null", "--set", "crowd.retrievals=null", *sets])


def manifest(release):
    """The release's manifest with its build's record: the run's counters, its cache files."""
    return run_record(release)


def published(release) -> dict:
    """What a release publishes of the video stage: its sets, its rejects (details with
    the scores and distances) and the bytes of every compat image."""
    def rows(folder):
        table = pq.read_table(os.path.join(release, folder)).to_pylist()
        return sorted(json.dumps(row, sort_keys=True, default=lambda b: hashlib.sha256(b).hexdigest())
                      for row in table)
    images = {}
    for path in glob.glob(os.path.join(release, "compat", "**", "*.jpg"), recursive=True):
        with open(path, "rb") as f:
            images[os.path.relpath(path, release)] = hashlib.sha256(f.read()).hexdigest()
    return {"sets": rows("parquet/video_sets"), "rejects": rows("rejects"), "images": images}


def bundled_frames(cache_root, paths) -> dict:
    """{cache key: frame numbers} of the frame image bundles in the shards `paths`."""
    out = {}
    for path in paths:
        if path.startswith(FRAME_IMAGE + "/"):
            for row in pq.read_table(os.path.join(cache_root, path)).to_pylist():
                out.setdefault(row["key"], set()).update(decode_bundle(row["value"]))
    return out


@pytest.fixture(scope="module")
def first(inputs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    return build(inputs, out, "1.0.0")


def test_a_cold_build_keeps_the_frames_it_scored_and_published(first):
    m = manifest(first)
    stages = m["stages"]
    assert stages["mining"]["frame.decoded"] > 0
    assert "frame.served_from_cache" not in stages["mining"]
    assert "cache.frame_image" not in stages   # the miner counts what it serves
    cache_root = os.path.join(os.path.dirname(os.path.dirname(first)), ".cache")
    kept = bundled_frames(cache_root, m["cache_files"])
    assert len(kept) == 2   # one bundle per video
    frames = sum(map(len, kept.values()))
    # every frame the gate scored, plus any it published without scoring
    assert frames >= stages["mining"]["frame.brisque_evaluations"] >= stages["mining"]["frame.out"] > 0


def test_a_same_config_rebuild_decodes_nothing_and_publishes_the_same(first, inputs):
    out = os.path.dirname(os.path.dirname(first))
    again = build(inputs, out, "1.0.1")
    stages = manifest(again)["stages"]
    assert stages["mining"].get("frame.decoded", 0) == 0
    assert stages["mining"]["frame.served_from_cache"] == stages["mining"]["frame.out"] > 0
    assert stages["mining"].get("frame.brisque_evaluations", 0) == 0
    assert published(again) == published(first)
    # nothing new to keep (Beam's sink may still write an empty shard)
    cache_root = os.path.join(out, ".cache")
    assert bundled_frames(cache_root, set(manifest(again)["cache_files"])
                          - set(manifest(first)["cache_files"])) == {}


def test_a_distance_change_decodes_only_for_frames_never_scored_or_published(first, inputs, tmp_path):
    out = os.path.dirname(os.path.dirname(first))
    cache_root = os.path.join(out, ".cache")
    before = bundled_frames(cache_root, manifest(first)["cache_files"])
    changed = build(inputs, out, "1.1.0", "mining.distance_threshold=0.30")
    m = manifest(changed)
    mining = m["stages"]["mining"]
    new_files = set(m["cache_files"]) - set(manifest(first)["cache_files"])
    now = bundled_frames(cache_root, new_files)
    # the frames decoded for their pixels now are frames no earlier build had
    for key, frames in now.items():
        assert frames and not frames & before.get(key, set())
    made = sum(map(len, now.values()))
    assert made >= mining.get("frame.brisque_evaluations", 0)
    # a selected frame is served from the cache, or decoded now (and kept)
    assert 0 < mining.get("frame.served_from_cache", 0) <= mining["frame.out"]
    assert mining["frame.served_from_cache"] + made >= mining["frame.out"]
    if not made:
        assert mining.get("frame.decoded", 0) == 0
    # and the release is the one a cold build at 0.30 makes
    cold = build(inputs, tmp_path / "cold", "1.1.0", "mining.distance_threshold=0.30")
    assert published(changed) == published(cold)


def test_a_corrupt_frame_image_entry_is_decoded_again_not_published(inputs, tmp_path):
    out = tmp_path / "out"
    first = build(inputs, out, "1.0.0")
    cache_root = os.path.join(out, ".cache")
    (shard,) = glob.glob(os.path.join(cache_root, FRAME_IMAGE, "*.parquet"))
    table = pq.read_table(shard).to_pylist()
    for row in table:   # one byte of every image flipped, the stored checksum kept
        value = bytearray(row["value"])
        value[-3] ^= 0xFF
        assert checksum(bytes(value)) != row["checksum"]
        row["value"] = bytes(value)
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(shard)), shard,
                   row_group_size=1)
    again = build(inputs, out, "1.0.1")
    stages = manifest(again)["stages"]
    assert stages["cache.frame_image"]["corrupt"] == len(table)
    assert "frame.served_from_cache" not in stages["mining"]
    # decoded again for the selected frames (the scores are cached: shots without a
    # selected frame are not decoded)
    assert 0 < stages["mining"]["frame.decoded"] <= manifest(first)["stages"]["mining"]["frame.decoded"]
    assert published(again) == published(first)
    # recomputed and kept again: a third build serves every selected frame
    third = build(inputs, out, "1.0.2")
    assert manifest(third)["stages"]["mining"].get("frame.decoded", 0) == 0


def test_prune_keeps_the_frame_images_a_release_names_and_removes_the_others(inputs, tmp_path):
    out = tmp_path / "out"
    release = build(inputs, out, "1.0.0")
    cache_root = os.path.join(out, ".cache")
    shards = sorted(glob.glob(os.path.join(cache_root, FRAME_IMAGE, "*.parquet")))
    assert shards and all(os.path.relpath(s, cache_root) in manifest(release)["cache_files"]
                          for s in shards)
    orphan = os.path.join(cache_root, FRAME_IMAGE, "gone-run-00000-of-00001.parquet")
    with open(shards[0], "rb") as src, open(orphan, "wb") as dst:
        dst.write(src.read())
    removed, _ = prune(cache_root, str(out))
    assert removed == [orphan]
    assert sorted(glob.glob(os.path.join(cache_root, FRAME_IMAGE, "*.parquet"))) == shards
    # once no release names them, they go too (its build record names them: BUILD.json)
    for record in ("MANIFEST.json", "BUILD.json"):
        os.rename(os.path.join(release, record), os.path.join(tmp_path, record))
    removed, _ = prune(cache_root, str(out))
    assert set(shards) <= set(removed)
