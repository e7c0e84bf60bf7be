"""Config mistakes that only the models find (a Tesseract binary or CLIP weights that are
not where the config says) end as one line naming the config key and exit code 2, not as
a traceback."""
import pytest

from pipelines.__main__ import main as pipelines_main

SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "videos.jsonl"
    path.write_text('{"path": "v.mp4", "source": "s", "video_id": "v", "split": "train"}\n')
    return str(path)


def build(tmp_path, manifest, *overrides):
    sets = [f"inputs.videos={manifest}", "static.images=null", "crowd.descriptions=null",
            "crowd.retrievals=null", *overrides]
    return pipelines_main(["imagecode", "build", "--config", SAMPLE_CONFIG,
                           "--output", str(tmp_path / "out"), "--version", "1.0.0",
                           *[arg for s in sets for arg in ("--set", s)]])


def test_a_tesseract_command_that_is_not_there_names_its_key(tmp_path, manifest, capsys):
    assert build(tmp_path, manifest, "quality.ocr.backend=pytesseract",
                 "quality.ocr.tesseract_cmd=/nonexistent/tesseract") == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("progress: ")]   # the build's own, before its preflight failed
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "/nonexistent/tesseract" in err[0] and "quality.ocr.tesseract_cmd" in err[0]


def test_a_tessdata_folder_without_language_data_names_its_key(tmp_path, manifest, capsys):
    assert build(tmp_path, manifest, f"quality.ocr.tessdata={tmp_path}") == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("progress: ")]   # the build's own, before its preflight failed
    assert len(err) == 1 and err[0].startswith("error: ")
    assert "quality.ocr.tessdata" in err[0] and "eng" in err[0]


def test_a_checkpoint_folder_without_weights_names_its_key(tmp_path, manifest, capsys):
    empty = tmp_path / "weights"
    empty.mkdir()
    assert build(tmp_path, manifest, "embed.kind=open_clip", "embed.model_name=ViT-B-16", f"embed.checkpoint={empty}",
                 "quality.ocr.enabled=false") == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("progress: ")]   # the build's own, before its preflight failed
    assert len(err) == 1 and err[0].startswith("error: embed.checkpoint: ")


def test_an_unknown_pretrained_tag_names_its_key(tmp_path, manifest, capsys):
    weights = tmp_path / "ViT-B-16.pt"
    weights.write_bytes(b"not read: the tag is checked first")
    assert build(tmp_path, manifest, "embed.kind=open_clip", "embed.model_name=ViT-B-16", f"embed.checkpoint={weights}",
                 "embed.pretrained=no-such-tag", "quality.ocr.enabled=false") == 2
    err = [line for line in capsys.readouterr().err.strip().splitlines()
           if not line.startswith("progress: ")]   # the build's own, before its preflight failed
    assert len(err) == 1 and err[0].startswith("error: embed.pretrained: ")
