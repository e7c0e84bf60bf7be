"""Installs pipelines/, transforms/ and schemas/; Dataflow workers get it via --setup_file.

Debian programs (ffmpeg, tesseract) and the BRISQUE model files cannot come from here:
the worker image in docker/ carries them (see docs/scale-out.md, "Running on Dataflow").

FAISS comes in two builds that install the same `faiss` module, so exactly one may be
installed, and an extra can only add requirements: the base install leaves FAISS out,
and you pick one build:
    pip install '.[cpu]'   # faiss-cpu, as requirements.txt (and the worker image by default)
    pip install '.[gpu]'   # faiss-gpu (CUDA 12 runtime from PyPI), instead of faiss-cpu
transforms/vectors/knn.py runs the static sets' exact kNN on a GPU when faiss finds one.
"""
from pathlib import Path

from setuptools import find_packages, setup

FAISS_CPU = "faiss-cpu"
# faiss-gpu 1.15.1 is one abi3 wheel for CPython >= 3.10 (manylinux_2_27 x86_64), built
# against CUDA 12 (nvidia-cuda-runtime-cu12, nvidia-cublas-cu12 come with it).
FAISS_GPU = "faiss-gpu==1.15.*"


def requirements():
    lines = Path(__file__).with_name("requirements.txt").read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]


def faiss_cpu(requirement: str) -> bool:
    return requirement.split("=")[0].split("<")[0].split(">")[0].strip() == FAISS_CPU


setup(
    name="vl-bench-pipelines",
    version="0.1.0",
    description="Beam pipelines that re-create the collection stages of vision-and-language benchmarks",
    packages=find_packages(include=["pipelines", "pipelines.*", "transforms", "transforms.*",
                                    "schemas", "schemas.*"]),
    package_data={"pipelines": ["*/configs/*.yaml", "*/README.md", "*/data/*.tsv",
                                "release/explorer_assets/*"]},
    python_requires=">=3.10",
    install_requires=[r for r in requirements() if not faiss_cpu(r)],
    extras_require={
        "cpu": [r for r in requirements() if faiss_cpu(r)],
        "gpu": [FAISS_GPU],
        # The machine that submits to Dataflow needs Beam's GCP extra (docs/scale-out.md).
        "dataflow": ["apache-beam[gcp]==2.77.*"],
    },
)
