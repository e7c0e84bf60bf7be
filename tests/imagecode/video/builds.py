"""An ImageCoDe build of a videos manifest alone, for tests of the video stage."""
from pipelines import build

SAMPLE_CONFIG = "pipelines/imagecode/configs/sample.yaml"


def build_videos(inputs, out, version="1.0.0") -> str:
    """`inputs/videos.jsonl` built with the sample config: no static sets, no crowd
    rounds, no quality filters (the stage under test decides alone)."""
    return build.build("imagecode", [
        "--config", SAMPLE_CONFIG, "--output", str(out), "--version", version,
        "--set", f"inputs.videos={inputs / 'videos.jsonl'}", "--set", "static.images=null",
        "--set", "crowd.descriptions=null", "--set", "crowd.retrievals=null",
        "--set", "quality.brisque.enabled=false", "--set", "quality.ocr.enabled=false"])
