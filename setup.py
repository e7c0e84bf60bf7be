"""Installs pipelines/, transforms/ and schemas/; Dataflow workers get it via --setup_file.

Debian programs (ffmpeg, tesseract) and the BRISQUE model files cannot come from here:
the worker image in docker/ carries them (see docs/scale-out.md, "Running on Dataflow").

One CUDA major version per install. torch from PyPI (requirements.txt) is its CUDA 13
build and carries its own CUDA runtime; PyPI's FAISS GPU build (faiss-gpu 1.15) needs
CUDA 12's, and no CUDA 13 FAISS build installs from PyPI (`pip install --dry-run`,
2026-11-28). So no install here holds FAISS's GPU build: on a GPU the exact kNN runs on
torch (knn.backend: torch, device auto|cuda; transforms/vectors/knn.py), which returns
the same lists as FAISS, and FAISS stays the CPU build:
    pip install '.[cpu]'   # faiss-cpu, as requirements.txt (and the worker image)
    pip install '.[gpu]'   # the same: CLIP, BRISQUE, TransNetV2 and the kNN on torch's CUDA
tests/test_one_cuda_major.py checks the installed packages and this file's extras.
"""
from pathlib import Path

from setuptools import find_packages, setup

FAISS_CPU = "faiss-cpu"


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
                                "release/explorer/assets/*", "**/pages/*.html"]},
    python_requires=">=3.10",
    install_requires=[r for r in requirements() if not faiss_cpu(r)],
    extras_require={
        "cpu": [r for r in requirements() if faiss_cpu(r)],
        # faiss-cpu too: faiss-gpu 1.15 would bring CUDA 12 beside torch's CUDA 13
        "gpu": [r for r in requirements() if faiss_cpu(r)],
        # The machine that submits to Dataflow needs Beam's GCP extra (docs/scale-out.md).
        "dataflow": ["apache-beam[gcp]==2.77.*"],
    },
)
