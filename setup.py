"""Installs pipelines/, transforms/ and schemas/; Dataflow workers get it via --setup_file.

Debian programs (ffmpeg, tesseract) and the BRISQUE model files cannot come from here:
the worker image in docker/ carries them (see README, "Dataflow").
"""
from pathlib import Path

from setuptools import find_packages, setup


def requirements():
    lines = Path(__file__).with_name("requirements.txt").read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


setup(
    name="vl-bench-pipelines",
    version="0.1.0",
    description="Beam pipelines that re-create the collection stages of vision-and-language benchmarks",
    packages=find_packages(include=["pipelines", "pipelines.*", "transforms", "transforms.*",
                                    "schemas", "schemas.*"]),
    package_data={"pipelines": ["*/configs/*.yaml", "*/README.md", "*/data/*.tsv",
                                "release/explorer_assets/*"]},
    python_requires=">=3.10",
    install_requires=requirements(),
    # The machine that submits to Dataflow needs Beam's GCP extra (docs/scale-out.md).
    extras_require={"dataflow": ["apache-beam[gcp]==2.77.*"]},
)
