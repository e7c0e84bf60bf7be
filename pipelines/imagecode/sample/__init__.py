"""ImageCoDe's embedded sample, generated on first use, never downloaded.

The runner reaches it through the benchmark (benchmark.py `ensure_sample`), and scripts
and benches call `make_imagecode_sample(out_dir)`, re-exported here so that
`pipelines.imagecode.sample.make_imagecode_sample` is the one name to know:

    make.py            the inputs: videos, still images, their manifests, then the answers
    expected_sets.py   the sets a build of the sample will mine, worked out without a build
    crowd.py           simulated answers of both crowd rounds for those sets

    python -m pipelines.imagecode.sample imagecode samples/imagecode
"""
from pipelines.imagecode.sample.make import SAMPLE_CONFIG, make_imagecode_sample

__all__ = ["SAMPLE_CONFIG", "make_imagecode_sample"]
