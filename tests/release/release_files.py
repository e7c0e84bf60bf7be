"""Reading a release's files as a stranger would: what of the building machine they hold."""
import json
import os

import pyarrow.parquet as pq


def machine_paths(release: str, paths) -> list:
    """(file, path) for each of `paths` that a file of the release holds: a Parquet file by
    its values (compression hides its bytes), BUILD.json but for `input_root` (where the
    input root is recorded, once), every other file by its bytes."""
    needles = [p.rstrip("/") for p in dict.fromkeys(paths) if p and p != "/"]
    found = []
    for folder, _, names in os.walk(release):
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, release)
            if name.endswith(".parquet"):
                data = json.dumps(pq.read_table(path).to_pylist(), default=str).encode("utf-8")
            elif rel == "BUILD.json":   # where the input root is recorded, once
                record = json.load(open(path))
                record.pop("input_root", None)
                data = json.dumps(record).encode("utf-8")
            else:
                with open(path, "rb") as f:
                    data = f.read()
            found += [(rel, n) for n in needles if n.encode("utf-8") in data]
    return found


def on_building_machine(release: str, path: str) -> str:
    """A path the release holds relative to its input root (a reject's `file`, FG's
    `pool.path`), as the building machine named it: joined to BUILD.json's `input_root`."""
    assert not os.path.isabs(path), f"{path} is absolute in {release}"
    return os.path.join(build_record(release)["input_root"], path)


def build_record(release: str) -> dict:
    """The release's BUILD.json: its build's record, outside the release's digest."""
    with open(os.path.join(release, "BUILD.json")) as f:
        return json.load(f)


def run_record(release: str) -> dict:
    """What a release and its build say together: MANIFEST.json with BUILD.json's keys
    (cache, cache_files, input_root, ...), and `stages` holding every counter of the run,
    its work's (cache hits and misses, models run) included."""
    from pipelines.release.write.manifest import run_counters

    with open(os.path.join(release, "MANIFEST.json")) as f:
        manifest = json.load(f)
    return {**manifest, **build_record(release), "stages": run_counters(release)}


def seal(release: str) -> str:
    """Complete a hand-made version folder's MANIFEST.json as a build publishes it: the
    rows per split of each table it counts, the rejects per reason, and the sha256 of
    every other file (write_manifest's `files`) and their digest, so that `verify`, and with it `diff`,
    takes it as published. Call it after the last file is written."""
    from pipelines.release.check.verify import DIGEST_KEYS, RELEASE_SHA256, VALUES_SHA256, release_sha256, values_sha256
    from pipelines.release.write.manifest import file_checksums, write_json

    path = os.path.join(release, "MANIFEST.json")
    manifest = json.load(open(path))
    for table in manifest.get("counts", {}).get("tables", {}):
        folder = os.path.join(release, "parquet", table)
        table_rows = pq.read_table(folder) if os.path.isdir(folder) else None
        splits = table_rows.column("split").to_pylist() if table_rows and table_rows.num_rows else []
        manifest["counts"]["tables"][table] = {
            "total": len(splits), "by_split": {s: splits.count(s) for s in sorted(set(splits))}}
    if os.path.isdir(os.path.join(release, "rejects")):
        reasons = pq.read_table(os.path.join(release, "rejects"), columns=["reason"]) \
            .column("reason").to_pylist()
        manifest.setdefault("counts", {})["rejects"] = {
            "total": len(reasons), "by_reason": {r: reasons.count(r) for r in sorted(set(reasons))}}
    for key in DIGEST_KEYS:
        manifest.pop(key, None)
    manifest[VALUES_SHA256] = values_sha256(manifest)
    manifest["files"] = file_checksums(release)
    manifest[RELEASE_SHA256] = release_sha256(manifest["files"], manifest[VALUES_SHA256])
    write_json(path, manifest)
    return release


def writable_copy(release: str, dest: str) -> str:
    """A copy of a published (read-only) release that a test may damage: its files and
    folders get their owner's write bit back. The release itself is never written to."""
    import shutil
    import stat

    shutil.copytree(release, dest)
    for folder, folders, names in os.walk(dest):
        for name in folders + names:
            path = os.path.join(folder, name)
            os.chmod(path, os.stat(path).st_mode | stat.S_IWUSR)
    os.chmod(dest, os.stat(dest).st_mode | stat.S_IWUSR)
    return dest
