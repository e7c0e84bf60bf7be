"""The FG build on its embedded sample, both configurations through the one runner, then
the release read back the ways its users read it: the public annotation file and image
list, the tables, the rejects, the review sheet, and a correction round applied."""
import json
import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipelines import build as build_command
from pipelines.fg import reasons
from pipelines.fg.sample import PHOTOS, target_ids
from pipelines.release.write.manifest import verify_manifest
from transforms.core.stage import reconcile


def build(out, config, version="1.0.0", *extra):
    return build_command.build("fg", ["--config", config, "--output", str(out), "--version", version, *extra])


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    out = tmp_path_factory.mktemp("fg")
    return out, {"mscoco": build(out, "sample"), "flickr30k": build(out, "flickr30k-sample")}


def table(release, name):
    return pq.read_table(os.path.join(release, "parquet", name)).to_pylist()


def rejects(release):
    return pq.read_table(os.path.join(release, "rejects")).to_pylist()


@pytest.mark.parametrize("configuration", ["mscoco", "flickr30k"])
def test_each_configuration_is_released_under_its_own_name_and_reconciles(releases, configuration):
    out, built = releases
    release = built[configuration]
    assert release == os.path.join(str(out), f"{configuration}-fg", "1.0.0")
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["reconciled"] and verify_manifest(release) == [] and reconcile(manifest["stages"]) == []
    stages = manifest["stages"]
    targets = stages["inputs"]["target.out"]
    assert targets == len(PHOTOS)
    assert stages["embed_text"]["caption.in"] == 5 * targets == len(table(release, "captions"))
    assert stages["pool"]["member.in"] == sum(len(s["members"]) for s in table(release, "similar_sets"))
    # the stand-ins are declared, never presented as CLIP
    assert manifest["models"]["image_text_encoder"]["kind"] == "thumbnail"
    assert "STAND-IN" in manifest["models"]["image_text_encoder"]["text_side"]
    assert manifest["models"]["details"]["stand_in"] and manifest["models"]["merge"]["stand_in"]
    card = open(os.path.join(release, "DATACARD.md")).read()
    for text in ("Stand-ins", "STAND-IN for CLIP ViT-B/32", "Table 2", "Table 3", "plots/lengths.png"):
        assert text in card


@pytest.mark.parametrize("configuration", ["mscoco", "flickr30k"])
def test_the_public_files_read_back(releases, configuration):
    release = releases[1][configuration]
    prefix = {"mscoco": "MSCOCO", "flickr30k": "Flickr30K"}[configuration]
    raw = open(os.path.join(release, "compat", "Annotations", f"{prefix}_FG_ann.json"), "rb").read()
    annotations = json.loads(raw)
    released = {r["image_id"] for r in table(release, "captions")}
    assert set(annotations) == released and all(len(v) == 5 for v in annotations.values())
    assert not raw.endswith(b"\n") and b"\n" not in raw
    source = json.load(open(f"samples/fg/{configuration}/captions.json"))
    assert list(annotations) == [i for i in source if i in released]   # the source's order
    assert set(annotations) == set(target_ids(configuration).values())
    names = np.load(os.path.join(release, "compat", "Images", f"{prefix}_FG_img_filenames.npy"))
    assert names.ndim == 1 and names.dtype.kind == "U"
    pool = sorted(table(release, "pool"), key=lambda r: r["position"])
    assert list(names) == [r["file_name"] for r in pool]
    originals = [r["original"] for r in pool]
    assert originals == sorted(originals, reverse=True)   # old test images first
    assert {n[:-4] for n in names[:sum(originals)]} == released


@pytest.mark.parametrize("configuration", ["mscoco", "flickr30k"])
def test_captions_change_only_when_a_candidate_beats_the_original(releases, configuration):
    release = releases[1][configuration]
    rows = table(release, "captions")
    for row in rows:
        if row["changed"]:
            assert row["coarse"] and row["clipscore_after"] > row["clipscore_before"]
            assert row["template"] in (1, 2, 3, 4, 5) and row["detail"]
        else:
            assert row["renovated"] == row["original"]
            assert row["clipscore_after"] == row["clipscore_before"] and row["template"] == 0
    stages = json.load(open(os.path.join(release, "MANIFEST.json")))["stages"]
    assert sum(r["changed"] for r in rows) == stages["pick"]["caption.out"] > 0
    assert stages["pick"]["caption.rejected.no_candidate"] > 0   # coarse, but kept unchanged
    assert sum(r["coarse"] for r in rows) == stages["coarse"]["caption.out"]


def test_every_drop_has_a_reason(releases):
    found = {c: {r["reason"] for r in rejects(releases[1][c])} for c in ("mscoco", "flickr30k")}
    for reasons_found in found.values():
        assert {reasons.NO_IMAGE, reasons.NO_CAPTIONS,
                reasons.TARGET_IN_POOL, reasons.UNREADABLE_IMAGE, reasons.ALREADY_IN_POOL,
                reasons.CLIPSCORE_NOT_HIGHER, reasons.NO_CANDIDATE} <= reasons_found
    assert reasons.NOT_COARSE in found["mscoco"]   # the old-pool coarse test finds fine captions


def test_similar_sets_start_with_their_target(releases):
    for release in releases[1].values():
        for s in table(release, "similar_sets"):
            assert s["members"][0] == s["target"] and s["sources"][0] == "target"
            assert 1 < len(s["members"]) <= 10 and len(set(s["members"])) == len(s["members"])
            assert set(s["sources"][1:]) <= {"image", "text"}


def test_a_correction_round_applies_the_edited_review_sheet(releases, tmp_path):
    out, built = releases
    sheet = [json.loads(line) for line in open(os.path.join(built["mscoco"], "review", "review_sheet.jsonl"))]
    assert sheet and all(s["human_text"] == s["model_text"] for s in sheet)
    edited = dict(sheet[0], human_text="a fixed caption")
    stale = dict(sheet[1], model_text="not what the model wrote") if len(sheet) > 1 else None
    unknown = {"image_id": "nowhere", "caption_index": 0, "model_text": "x", "human_text": "y"}
    path = tmp_path / "corrections.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [edited, stale, unknown] if x))
    release = build(out, "sample", "1.0.1", "--set", f"inputs.corrections={path}")
    rows = {(r["image_id"], r["caption_index"]): r for r in table(release, "captions")}
    fixed = rows[(edited["image_id"], edited["caption_index"])]
    assert fixed["renovated"] == "a fixed caption" and fixed["corrected"] == 1
    assert sum(r["corrected"] for r in rows.values()) == 1
    got = {r["reason"] for r in rejects(release) if r["stage"] == "corrections"}
    assert got == {reasons.UNKNOWN_CAPTION} | ({reasons.STALE_ANSWER} if stale else set())
    ann = json.load(open(os.path.join(release, "compat", "Annotations", "MSCOCO_FG_ann.json")))
    assert ann[edited["image_id"]][edited["caption_index"]] == "a fixed caption"


def _clip_retrieval_folder(folder, images, kind="img", column="image_path"):
    """Write vectors in clip-retrieval's layout, two parts."""
    import pyarrow as pa
    (folder / f"{kind}_emb").mkdir(parents=True)
    (folder / "metadata").mkdir()
    half = len(images) // 2
    for part, chunk in enumerate((images[:half], images[half:])):
        np.save(folder / f"{kind}_emb" / f"{kind}_emb_{part}.npy", np.stack([v for _, v in chunk]))
        pq.write_table(pa.table({column: [k for k, _ in chunk]}), folder / "metadata" / f"metadata_{part}.parquet")


def test_precomputed_image_embeddings_give_the_same_release(releases, tmp_path):
    from transforms.image.decode import read_image
    from transforms.image.encoders import ThumbnailEncoder
    out, built = releases
    paths = sorted(glob_images("samples/fg/mscoco/images") + glob_images("samples/fg/unlabeled2017"))
    encoder, rows = ThumbnailEncoder(16), []
    for path in paths:
        try:
            rows.append((path, encoder.encode([read_image(path)[0]])[0]))
        except Exception:   # the sample's broken file: no vector, as clip-retrieval would skip it
            continue
    missing = rows.pop()    # one pool image without a vector: no_embedding
    _clip_retrieval_folder(tmp_path / "emb", rows)
    release = build(out, "sample", "1.0.2", "--set", f"inputs.image_embeddings={tmp_path / 'emb'}")
    got = {r["reason"] for r in rejects(release) if r["stage"] == "embed"}
    assert got == {reasons.NO_EMBEDDING}
    # the file that does not decode has no vector either
    assert sorted(r["item_id"] for r in rejects(release) if r["reason"] == reasons.NO_EMBEDDING) == sorted(
        [os.path.basename(missing[0])[:-4], "999999999999"])
    before = {r["caption_id"]: (r["own_rank"], r["renovated"]) for r in table(built["mscoco"], "captions")}
    after = {r["caption_id"]: (r["own_rank"], r["renovated"]) for r in table(release, "captions")}
    assert before.keys() == after.keys()
    # the coarse test (old pool: the targets) sees the same vectors: the same ranks
    assert {k: v[0] for k, v in before.items()} == {k: v[0] for k, v in after.items()}


def glob_images(folder):
    return [os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".jpg")]


def test_a_clip_retrieval_folder_with_a_lonely_part_is_refused(tmp_path):
    from transforms.core.errors import InputError
    from transforms.vectors.embedding_folders import list_parts
    _clip_retrieval_folder(tmp_path, [("a.jpg", np.ones(4, np.float32)), ("b.jpg", np.ones(4, np.float32))])
    (tmp_path / "metadata" / "metadata_1.parquet").unlink()
    with pytest.raises(InputError, match="parts \\[1\\]"):
        list_parts(str(tmp_path), "img")
