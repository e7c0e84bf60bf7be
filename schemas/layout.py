"""The folders and files of a release version (every benchmark):

    <out>/<benchmark>/<version>/
      parquet/<table>/   tfrecord/<table>/   compat/   rejects/   stats/
      MANIFEST.json   DATACARD.md   RELEASE_NOTES.md
      BUILD.json         the build's record (when, from which code, what the cache held):
                         beside the release, outside its digest
    _work/ is scratch inside the staging folder, never released.
"""
from __future__ import annotations

MANIFEST = "MANIFEST.json"
BUILD_RECORD = "BUILD.json"
PARQUET_DIR, TFRECORD_DIR, REJECTS_DIR, COMPAT_DIR = "parquet", "tfrecord", "rejects", "compat"
WORK_DIR = "_work"  # scratch inside staging (e.g. JPEGs before publishing); never released
# "_" prefix: pyarrow/Spark skip it, so `pq.read_table("rejects/")` reads only the rows
REJECT_COUNTS = "rejects/_counts.json"


def work_dir(staging: str) -> str:
    """Scratch space inside staging for files that are moved into place by the pipeline."""
    # imported here: the names above are read by commands that import no Beam (verify)
    from apache_beam.io.filesystems import FileSystems
    return FileSystems.join(staging, WORK_DIR)
