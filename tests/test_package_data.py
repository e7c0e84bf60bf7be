"""Every file the package needs besides its Python travels with it: a worker installed from
setup.py (Dataflow's `--setup_file`, a wheel on a Flink or portable worker) has every
benchmark's configs, README, data files, worker-page templates and the explorer's assets.
A module moved into a subpackage takes its files along, and a package_data pattern that
no longer reaches them would only show on a remote worker."""
import ast
import glob
import os
import subprocess

from tests.paths import ROOT


def package_data() -> dict:
    """setup.py's `package_data=`, read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "package_data":
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no package_data")


def test_every_file_of_the_packages_besides_python_is_package_data():
    tracked = subprocess.run(["git", "ls-files", "pipelines", "transforms", "schemas"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    needed = {path for path in tracked if not path.endswith(".py")}
    assert needed, "no data files found: the test would prove nothing"
    shipped = set()
    for package, patterns in package_data().items():
        folder = ROOT / package.replace(".", "/")
        for pattern in patterns:
            shipped |= {os.path.relpath(path, ROOT)
                        for path in glob.glob(str(folder / pattern), recursive=True)}
    assert sorted(needed - shipped) == []
