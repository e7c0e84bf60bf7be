"""One CUDA major version per install (issue 37): every installed package built for a
CUDA major (the `-cuNN` NVIDIA runtime packages, and those a FAISS GPU build pulls in)
matches torch's; and setup.py's `gpu` extra adds no FAISS GPU build, whose PyPI wheel
needs CUDA 12 beside torch's CUDA 13 (setup.py says why)."""
import re
import subprocess
import sys
from importlib import metadata

import pytest

from tests.paths import ROOT

_CU = re.compile(r"-cu(\d+)$")


def cuda_majors_of_installed_packages():
    """{major: [package, ...]} of what is installed: a `-cuNN` suffix in a package's name,
    or in a requirement of an installed FAISS GPU build."""
    majors = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        found = _CU.search(name)
        if found:
            majors.setdefault(int(found.group(1)), []).append(name)
        if name.startswith("faiss-gpu"):
            for requirement in dist.requires or []:
                package = re.split(r"[<>=!~; \[]", requirement, maxsplit=1)[0].lower()
                found = _CU.search(package)
                if found:
                    majors.setdefault(int(found.group(1)), []).append(f"{name} (needs {package})")
    return majors


def test_installed_packages_share_torchs_cuda_major():
    import torch
    if torch.version.cuda is None:
        pytest.skip("a CPU-only torch build: no CUDA runtime in this install")
    torch_major = int(torch.version.cuda.split(".")[0])
    others = {major: names for major, names in cuda_majors_of_installed_packages().items() if major != torch_major}
    assert not others, f"torch is built for CUDA {torch_major}, these for another major: {others}"


def test_the_gpu_extra_installs_no_faiss_gpu_build(tmp_path):
    subprocess.run([sys.executable, "setup.py", "-q", "egg_info", "--egg-base", str(tmp_path)],
                   cwd=ROOT, check=True, capture_output=True)
    requires = next(tmp_path.glob("*.egg-info")).joinpath("requires.txt").read_text()
    sections, current = {}, ""
    for line in requires.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
        elif line.strip():
            sections.setdefault(current, []).append(line.strip())
    assert sections["gpu"] and all(r.startswith("faiss-cpu") for r in sections["gpu"]), sections["gpu"]
    assert not any("faiss-gpu" in r for rs in sections.values() for r in rs)
