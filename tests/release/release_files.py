"""Reading a release's files as a stranger would: what of the building machine they hold."""
import json
import os

import pyarrow.parquet as pq


def machine_paths(release: str, paths) -> list:
    """(file, path) for each of `paths` that a file of the release holds: a Parquet file by
    its values (compression hides its bytes), MANIFEST.json but for `input_root` (where the
    input root is recorded, once), every other file by its bytes."""
    needles = [p.rstrip("/") for p in dict.fromkeys(paths) if p and p != "/"]
    found = []
    for folder, _, names in os.walk(release):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, release)
            if name.endswith(".parquet"):
                data = json.dumps(pq.read_table(path).to_pylist(), default=str).encode("utf-8")
            elif rel == "MANIFEST.json":
                manifest = json.load(open(path))
                manifest.pop("input_root", None)
                data = json.dumps(manifest).encode("utf-8")
            else:
                with open(path, "rb") as f:
                    data = f.read()
            found += [(rel, n) for n in needles if n.encode("utf-8") in data]
    return found


def on_building_machine(release: str, path: str) -> str:
    """A path the release holds relative to its input root (a reject's `file`, FG's
    `pool.path`), as the building machine named it: joined to MANIFEST.json's `input_root`."""
    assert not os.path.isabs(path), f"{path} is absolute in {release}"
    with open(os.path.join(release, "MANIFEST.json")) as f:
        return os.path.join(json.load(f)["input_root"], path)
