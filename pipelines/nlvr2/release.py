"""What an NLVR2 release writes from its examples besides its tables (pipelines/nlvr2/tables.py):
the public layout (compat/, its format in pipelines/nlvr2/compat.py) and the aHash files.

A compat file is one file, written by one worker, its lines in source order: the file and
line each example was read from (the order of inputs.public, then line), so the lines
of a released file come back in their order; collected examples in identifier order.
"""
from __future__ import annotations

import json
from typing import Dict, Sequence

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.nlvr2 import reasons
from pipelines.nlvr2.compat import image_file, public_line, subset_keys
from pipelines.nlvr2.records import Example
from transforms.core.stage import MAIN, StageFn, stage_pardo


# --- compat/ --------------------------------------------------------------------------------

def compat_order(files: Sequence[str]):
    """Sort key of an example in its compat file: its input file's place in
    inputs.public, then its line; collected examples (no origin) by identifier parts."""
    rank = {path: i for i, path in enumerate(files)}

    def key(x: Example):
        path, line = x.origin or ("", 0)
        return (rank.get(path, len(rank)), path, line, x.set_id, x.sentence_id, x.pair)
    return key


class WriteCompat(beam.PTransform):
    """Examples -> compat/<split>.json and the balanced / unbalanced subset files; returns
    one report {"subsets": {file: examples}}."""

    def __init__(self, staging_dir: str, files: Sequence[str]):
        super().__init__()
        self._folder = FileSystems.join(staging_dir, "compat")
        self._order = compat_order(files)

    def expand(self, examples):
        folder, order = self._folder, self._order
        by_split = examples | "Split files" >> beam.Map(lambda x: (f"{x.split}.json", x))
        subsets = (examples
                   | "By image pair" >> beam.Map(lambda x: ((x.split, x.left_url, x.right_url), x))
                   | "Group image pairs" >> beam.GroupByKey()
                   | "Subsets" >> beam.FlatMap(subset_keys))

        def write(path, items):
            lines = [public_line(x) for x in sorted(items, key=order)]
            with FileSystems.create(FileSystems.join(folder, *path.split("/")),
                                    mime_type="application/jsonl") as f:
                f.write("".join(line + "\n" for line in lines).encode("utf-8"))
            return path, len(lines)

        written = ((by_split, subsets) | "Compat files" >> beam.Flatten()
                   | "Group by file" >> beam.GroupByKey() | "Write" >> beam.MapTuple(write))
        return (written | "Sizes" >> beam.combiners.ToList()
                | "Report" >> beam.Map(lambda sizes: {"files": dict(sorted(sizes))}))


# --- aHash files ----------------------------------------------------------------------------

def image_sides(x: Example):
    """(split, public file name, local path) of each side whose image the build has."""
    for side, path in enumerate((x.left_image, x.right_image)):
        if path:
            yield x.split, image_file(x.split, x.set_id, x.pair, side), path, x.set_id


class _HashImage(StageFn):
    """(split, file name, local path, set) -> (split, file name, 16-hex aHash, set); an
    image that cannot be read is a reject (its example stays: it has a URL)."""
    stage, level = "image_hashes", "image"

    def judge(self, item):
        split, name, path, set_id = item
        import imagehash   # only builds that have images need it
        from PIL import Image
        try:
            with FileSystems.open(path, compression_type="uncompressed") as f, Image.open(f) as image:
                digest = str(imagehash.average_hash(image))
        except Exception as e:   # any decoder error: the file is not an image we can read
            yield self.reject(reasons.UNREADABLE_IMAGE, name, detail=f"{path}: {e}"[:300],
                              split=split, file=path)
            return
        yield split, name, digest, set_id


class HashImages(beam.PTransform):
    """Examples -> {MAIN: (split, file, aHash, set), REJECTS} and compat/hashes/<split>_hashes.json."""

    def __init__(self, staging_dir: str):
        super().__init__()
        self._folder = FileSystems.join(staging_dir, "compat", "hashes")

    def expand(self, examples):
        folder = self._folder
        hashed = (examples | "Image sides" >> beam.FlatMap(image_sides)
                  | "Distinct images" >> beam.Distinct()
                  | "aHash" >> stage_pardo(_HashImage()))

        def write(split, rows):
            table: Dict[str, str] = dict(sorted((name, digest) for name, digest in rows))
            with FileSystems.create(FileSystems.join(folder, f"{split}_hashes.json"),
                                    mime_type="application/json") as f:
                f.write(json.dumps(table).encode("utf-8"))
            return split

        _ = (hashed[MAIN]
             | "By split" >> beam.Map(lambda r: (r[0], (r[1], r[2])))
             | "Group" >> beam.GroupByKey()
             | "Write" >> beam.MapTuple(write))
        return hashed

