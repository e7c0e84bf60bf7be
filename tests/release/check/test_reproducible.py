"""Byte-reproducible releases: the same config, inputs and seed give the same files, byte
for byte, whatever the number of workers and whatever kernels the CPU's instructions
select (pipelines/release/write/order.py, transforms/core/precision.py, docs/rebuilding.md).

The driver's rewrite is checked on small tables written as different runners would shard
them; every registered sample is then built again in another process, with two workers
and every kernel held to AVX2, and its MANIFEST.json must list the checksums and the
whole-release digest of the one-worker build with the machine's own kernels that
tests/test_conformance.py reads (the session's `sample_release`, tests/conftest.py).
"""
import json
import os
import platform
import random
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import build, registry
from pipelines.release.check.verify import (RELEASE_SHA256, VALUES_SHA256, release_problems,
                                            release_sha256, values_sha256)
from pipelines.release.write.order import rewrite_rejects, shard_of
from pipelines.release.write.split_files import MAIN, partition_table
from pipelines.scaleout.compare import checksum_differences
from schemas.rejects import REJECT_SCHEMA, Reject, reject_to_row
from tests.paths import ROOT
from transforms.core.kernels import avx2_kernels

# The tests that read the session's sample releases (tests/conftest.py) run on one test
# worker (make test: pytest-xdist, --dist loadgroup), so each sample is built once.
pytestmark = pytest.mark.xdist_group("sample_releases")

SCHEMA = pa.schema([pa.field("id", pa.string()), pa.field("split", pa.string()),
                    pa.field("n", pa.int64())])
ROWS = [{"id": f"row{i:03d}", "split": ("train", "dev", "test")[i % 3], "n": i}
        for i in range(60)]


def write_as_run(folder, rows, shards, seed):
    """`rows` as a runner might write them: shuffled, in `shards` Beam-named files."""
    rows = list(rows)
    random.Random(seed).shuffle(rows)
    os.makedirs(folder)
    name = os.path.basename(folder)
    for i in range(shards):
        pq.write_table(pa.Table.from_pylist(rows[i::shards], schema=SCHEMA),
                       os.path.join(folder, f"{name}-{i:05d}-of-{shards:05d}.parquet"))


def file_bytes(root):
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                out[os.path.relpath(os.path.join(folder, name), root)] = f.read()
    return out


def test_a_tables_files_follow_its_rows_and_key_not_the_runners_shards(tmp_path):
    built = []
    for shards, seed in ((1, 0), (3, 1), (2, 2)):
        staging = tmp_path / f"run{shards}"
        write_as_run(str(staging / "parquet" / "rows"), ROWS, shards, seed)
        parts = partition_table(str(staging), "rows", MAIN, key=("id",), rows_per_shard=8)
        built.append(file_bytes(staging))
    assert built[0] == built[1] == built[2]
    # a split of 20 rows in ceil(20 / 8) = 3 files, each row in the file of its key's hash
    assert parts.files[("train",)] == [f"train-{j:05d}-of-00003.parquet" for j in range(3)]
    for j, name in enumerate(parts.files[("train",)]):
        ids = pq.read_table(staging / "parquet" / "rows" / name).column("id").to_pylist()
        assert ids == sorted(ids) and all(shard_of((i,), 3) == j for i in ids)
    assert sum(parts.rows.values()) == len(ROWS)


def test_rejects_are_ordered_and_sharded_by_their_rows(tmp_path):
    rejects = [reject_to_row(Reject("read", "line", "bad_json", f"f.jsonl:{i}", file="f.jsonl"))
               for i in range(30)]
    written = []
    for shards, seed in ((1, 0), (3, 1)):
        folder = tmp_path / f"run{shards}" / "rejects"
        os.makedirs(folder)
        shuffled = list(rejects)
        random.Random(seed).shuffle(shuffled)
        for i in range(shards):
            pq.write_table(pa.Table.from_pylist(shuffled[i::shards], schema=REJECT_SCHEMA),
                           folder / f"rejects-{i:05d}-of-{shards:05d}.parquet")
        assert rewrite_rejects(str(tmp_path / f"run{shards}"), rows_per_shard=20) == [
            "rejects-00000-of-00002.parquet", "rejects-00001-of-00002.parquet"]
        written.append(file_bytes(folder))
    assert written[0] == written[1]
    items = pq.read_table(folder / "rejects-00000-of-00002.parquet").column("item_id").to_pylist()
    assert items == sorted(items)


def test_verify_checks_the_whole_release_digest(tmp_path):
    release = tmp_path / "1.0.0"
    release.mkdir()
    (release / "a.txt").write_text("a\n")
    files = {"a.txt": "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7"}
    manifest = {"format": 3, "version": "1.0.0"}
    values = values_sha256(manifest)
    manifest.update({VALUES_SHA256: values, "files": files, RELEASE_SHA256: release_sha256(files, values)})
    (release / "MANIFEST.json").write_text(json.dumps(manifest))
    assert release_problems(str(release)) == []
    (release / "MANIFEST.json").write_text(json.dumps(dict(manifest, **{RELEASE_SHA256: "0" * 64})))
    assert release_problems(str(release)) == [
        "digest differs: MANIFEST.json `release_sha256` is not the digest of the files and values it lists"]
    # a value and its digest edited alike: the release digest no longer holds
    edited = dict(manifest, version="1.0.1", **{VALUES_SHA256: values_sha256({"format": 3, "version": "1.0.1"})})
    (release / "MANIFEST.json").write_text(json.dumps(edited))
    assert release_problems(str(release)) == [
        "digest differs: MANIFEST.json `release_sha256` is not the digest of the files and values it lists"]
    del manifest[RELEASE_SHA256]
    (release / "MANIFEST.json").write_text(json.dumps(manifest))
    assert release_problems(str(release)) == [
        "no digest: MANIFEST.json (format 3) has no release_sha256"]
    # a release of format 2 (its values outside the digest) still verifies
    old = {"format": 2, "files": files, RELEASE_SHA256: release_sha256(files)}
    (release / "MANIFEST.json").write_text(json.dumps(old))
    assert release_problems(str(release)) == []


def test_the_runner_checks_compare_the_release_but_not_the_builds_record(tmp_path):
    def release(name, files, record, **values):
        folder = tmp_path / name
        folder.mkdir()
        digests = values_sha256(values)
        manifest = {**values, VALUES_SHA256: digests, "files": files,
                    RELEASE_SHA256: release_sha256(files, digests)}
        (folder / "MANIFEST.json").write_text(json.dumps(manifest))
        (folder / "BUILD.json").write_text(json.dumps(record))
        return str(folder)
    a = release("a", {"x": "1" * 64, "y": "2" * 64}, {"build": {"created_at": "then"}, "input_root": "/a",
                "work": {"embed": {"model.loaded": 2}}}, stages={"embed": {"shot.in": 3}})
    b = release("b", {"x": "1" * 64, "y": "2" * 64}, {"build": {"created_at": "now"}, "input_root": "/b",
                "work": {"embed": {"model.loaded": 4}}}, stages={"embed": {"shot.in": 3}})
    assert checksum_differences(a, b) == []   # two builds of one release: their records aside
    c = release("c", {"x": "1" * 64, "y": "3" * 64}, {}, stages={"embed": {"shot.in": 4}})
    digest = lambda r: json.load(open(f"{r}/MANIFEST.json"))[RELEASE_SHA256][:12]  # noqa: E731
    assert checksum_differences(a, c, label="s ") == [
        "s file bytes y: 222222222222 -> 333333333333",
        f"s release_sha256: {digest(a)} -> {digest(c)}", "s MANIFEST.json stages differs"]


SAMPLES = [(name, config) for name in registry.names()
           for config in registry.load(name).sample_configs()]
# Two worker threads: Beam then writes each table as two shards, rows in the order the
# bundles ran (as with two worker processes or on Flink), for a fraction of the CPU that
# starting worker processes costs; the portable runner's check covers other processes.
TWO_WORKERS = ["--direct_running_mode=multi_threading", "--direct_num_workers=2"]


def _kernels_in_use(env: dict) -> dict:
    """ATen's capability, and whether numpy would dispatch to any of its AVX-512 groups,
    in a process started with `env`."""
    probe = ("import json, numpy, torch\n"
             "try:\n    from numpy._core import _multiarray_umath as m\n"
             "except ImportError:\n    from numpy.core import _multiarray_umath as m\n"
             "wide = [f for f in m.__cpu_dispatch__ if f.startswith('AVX512') or f == 'X86_V4']\n"
             "print(json.dumps({'aten': torch.backends.cpu.get_cpu_capability(),"
             " 'numpy_avx512': any(m.__cpu_features__.get(f) for f in wide)}))")
    run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="AVX2 is an x86-64 instruction set")
@pytest.mark.parametrize("name,config", SAMPLES, ids=[f"{n}-{c}" for n, c in SAMPLES])
def test_a_sample_has_the_same_bytes_with_two_workers_and_avx2_kernels(name, config, tmp_path,
                                                                      sample_release):
    """The one-worker build with the machine's own kernels (AVX-512 where it has them) and a
    build in another process with two workers and every kernel held to AVX2 publish the
    same bytes: the same release_sha256 (issue 42: BRISQUE's MKL product and BD2BB's
    sentence embeddings followed the CPU before values were rounded where they are made,
    transforms/core/precision.py)."""
    one = sample_release(name, config)   # in process, one worker: shared with conformance
    env = {**os.environ, **avx2_kernels(), "PYTHONPATH": str(ROOT)}
    used = _kernels_in_use(env)
    assert used["aten"] in ("AVX2", "DEFAULT") and not used["numpy_avx512"], used   # really held
    subprocess.run([sys.executable, "-m", "pipelines", name, "build", "--config", config,
                    "--output", str(tmp_path), "--version", "1.0.0", "--quiet", *TWO_WORKERS],
                   cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    two = os.path.join(tmp_path, os.path.relpath(one, os.path.dirname(os.path.dirname(one))))
    assert checksum_differences(one, two) == []
    manifests = []
    for release in (one, two):
        with open(os.path.join(release, "MANIFEST.json")) as f:
            manifests.append(json.load(f))
    assert manifests[0][RELEASE_SHA256] == manifests[1][RELEASE_SHA256]
    # every value of the manifest is the release's (the build's own record is BUILD.json)
    assert manifests[0] == manifests[1]


@pytest.mark.parametrize("name,config", SAMPLES, ids=[f"{n}-{c}" for n, c in SAMPLES])
def test_a_warm_cache_gives_the_cold_builds_release(name, config, tmp_path, sample_release):
    """One digest per config and inputs, whatever the cache held (issue 45: DATACARD.md and
    README.md showed the cache's hits and misses, so a warm rebuild had another
    release_sha256). The session's build (a cold cache) and a build with a copy of its
    cache publish the same MANIFEST.json, values and digest; what the cache held is the
    build records' (BUILD.json), which show that one computed what the other reused."""
    cold = sample_release(name, config)
    cache = os.path.join(os.path.dirname(os.path.dirname(cold)), ".cache")
    if os.path.isdir(cache):
        shutil.copytree(cache, tmp_path / ".cache")
    warm = build.build(registry.load(name), ["--config", config, "--output", str(tmp_path),
                                             "--version", "1.0.0", "--quiet"])
    assert release_problems(warm) == []
    manifests = [json.load(open(os.path.join(r, "MANIFEST.json"))) for r in (cold, warm)]
    assert manifests[0][RELEASE_SHA256] == manifests[1][RELEASE_SHA256]
    assert manifests[0] == manifests[1]
    records = [json.load(open(os.path.join(r, "BUILD.json"))) for r in (cold, warm)]
    if records[0].get("cache"):   # a sample whose config caches: the second build was warm
        assert sum(u["cached"] for u in records[0]["cache"].values()) == 0, records[0]["cache"]
        assert sum(u["cached"] for u in records[1]["cache"].values()) > 0, records[1]["cache"]
        assert records[0]["work"] != records[1]["work"]
