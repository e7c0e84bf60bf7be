"""Models in MANIFEST.json (issue 36, item 5): a user's model folder or checkpoint is
recorded relative to the input root, never as the building machine's path; NLVR2's and
BD2BB's models and language resources are named and pinned. The samples' manifests are
checked in tests/test_conformance.py."""
import dataclasses
import os

import pytest

from pipelines.release.write import assemble as release
from tests.release.cards.model_records import model_problems
from tests.release.release_files import run_record


@dataclasses.dataclass
class DemoConfig:
    seed: int = 0


class _NoCounters:
    def metrics(self):
        return self

    def query(self):
        return {"counters": []}


def _publish(tmp_path, models, inputs):
    final = release.build_release(
        benchmark="demo", out=str(tmp_path / "out"), version="1.0.0", config=DemoConfig(),
        execute=lambda staging: _NoCounters(), models=models, inputs=inputs, tables={},
        describe=lambda facts: {}, explorer=None)
    return run_record(final)   # the manifest, with the input root its build record holds


@pytest.mark.parametrize("models_dir", ["inputs/models", "elsewhere/models"])
def test_a_users_checkpoint_and_model_folder_are_relative_to_the_input_root(tmp_path, models_dir):
    data = tmp_path / "inputs" / "data.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text('{"x": 1}\n')
    folder = tmp_path / models_dir
    folder.mkdir(parents=True)
    (folder / "ViT-B-16.pt").write_bytes(b"weights")
    models = {"image_encoder": {"model_name": "ViT-B-16", "checkpoint": str(folder / "ViT-B-16.pt"),
                                "weights_sha256": "ab" * 32},
              "sentence_encoder": {"model": str(folder), "weights_sha256": "cd" * 32,
                                   "mirror": "gs://bucket/models/minilm"}}
    manifest = _publish(tmp_path, models, {"data": str(data)})
    root = manifest["input_root"]
    assert model_problems(manifest["models"]) == []
    encoder = manifest["models"]["image_encoder"]
    assert os.path.join(root, encoder["checkpoint"]) == str(folder / "ViT-B-16.pt")
    assert os.path.join(root, manifest["models"]["sentence_encoder"]["model"]) == str(folder)
    assert manifest["models"]["sentence_encoder"]["mirror"] == "gs://bucket/models/minilm"
    assert os.path.join(root, manifest["inputs"]["data"]["path"]) == str(data)


def test_model_problems_names_an_absolute_path_and_an_unpinned_model():
    assert model_problems({"encoder": {"name": "x", "checkpoint": "/models/x.pt", "version": "1"},
                           "parser": {"name": "y"}, "devices": {}}) == [
        "models.encoder.checkpoint: an absolute path: /models/x.pt",
        "models.parser: pins neither its weights nor its version"]


def test_nlvr2_records_its_similar_words_model_and_wordnet_tables(tmp_path):
    """NLVR2's collection with similar words on: the sentence encoder (the bundled MiniLM,
    or a folder of the user's) by name and weights checksum, the stand-in it is, the
    threshold; the WordNet tables by checksum."""
    from pipelines.nlvr2.collection.collect import model_identities
    from pipelines.nlvr2.collection.config import CollectionConfig
    from transforms.text.sentence_embed import resolve_model
    config = CollectionConfig()
    bundled = model_identities(config)
    words = bundled["similar_words"]
    assert words["name"] == "all-MiniLM-L6-v2" and len(words["weights_sha256"]) == 64
    assert "word2vec" in words["stand_in"] and words["threshold"] == config.queries.similar_words.threshold
    assert len(bundled["hypernyms"]["sha256"]) == len(bundled["synsets"]["sha256"]) == 64
    assert model_problems(bundled) == []
    own = tmp_path / "models" / "minilm"
    own.parent.mkdir()
    os.symlink(resolve_model(None), own)
    config.queries.similar_words.model = str(own)
    mine = model_identities(config)["similar_words"]
    assert mine["model"] == str(own) and mine["weights_sha256"] == words["weights_sha256"]
    config.queries.similar_words.enabled = False
    assert "similar_words" not in model_identities(config)


def test_bd2bb_records_its_english_filter_model():
    from pipelines.bd2bb.tuple_filters import language_identifier_identity
    identity = language_identifier_identity(("en", "es"))
    assert identity["package"] == "py3langid" and identity["version"]
    assert len(identity["weights_sha256"]) == 64 and identity["languages"] == ["en", "es"]
    assert model_problems({"language_identifier": identity}) == []
