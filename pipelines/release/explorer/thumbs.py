"""Thumbnails for the release explorer: one small JPEG per distinct image, made once.

A thumbnail is named by a cache key (transforms/cache/store.py's recipe) over the
image's bytes, the Pillow version and the thumbnail settings:

    explorer/thumbs/<k[:2]>/<k>.jpg

so an image shared by several sets (a static set's query, a description's ten frames)
is one file, and a rebuild copies the previous version's thumbnail of the same image
instead of decoding it again. The previous version of the same output folder is the
cache here: it is where the last build left them, and a version deleted takes its
thumbnails with it (no separate store to prune).
"""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, Iterable, Optional

import PIL
from PIL import Image

from transforms.cache.store import cache_key

SIZE = 128          # longest side, pixels
QUALITY = 70        # JPEG quality: 128px thumbnails of photos are 2-5 KB
STAGE = "explorer_thumbnail"
FOLDER = "thumbs"
# Pillow decodes and scales without the GIL: a release's 100,000 images go several at once
WORKERS = min(8, os.cpu_count() or 1)


class Thumbnails:
    """Makes (or reuses) thumbnails under `<explorer>/thumbs/`; counts what it did."""

    def __init__(self, explorer_dir: str, previous_explorer: Optional[str] = None):
        self._root = explorer_dir
        self._previous = previous_explorer
        self._by_path: Dict[str, Optional[str]] = {}
        self._lock = threading.Lock()
        self._by_key: Dict[str, "_Claim"] = {}
        self.made = self.reused = self.unreadable = 0

    def prefetch(self, paths: Iterable[str]) -> None:
        """Make the thumbnails of `paths` in parallel, ahead of `of` asking one by one."""
        todo = [p for p in dict.fromkeys(paths) if p not in self._by_path]
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            for path, rel in zip(todo, pool.map(self._thumbnail_of_file, todo)):
                self._by_path[path] = rel

    def _count(self, what: str) -> None:
        with self._lock:
            setattr(self, what, getattr(self, what) + 1)

    def of(self, path: str) -> Optional[str]:
        """The thumbnail of a local image file, relative to the explorer folder; None when
        the file cannot be read as an image."""
        if path not in self._by_path:
            self._by_path[path] = self._thumbnail_of_file(path)
        return self._by_path[path]

    def of_pixels(self, pixels) -> Optional[str]:
        """The thumbnail of an RGB uint8 array (a frame decoded from a video)."""
        digest = hashlib.sha256(f"{pixels.shape}".encode() + pixels.tobytes()).hexdigest()
        return self._thumbnail(digest, lambda: Image.fromarray(pixels))

    def _thumbnail_of_file(self, path: str) -> Optional[str]:
        try:
            digest = _sha256(path)
        except OSError:
            self._count("unreadable")
            return None
        return self._thumbnail(digest, lambda: Image.open(path))

    def _thumbnail(self, content_sha256: str, open_image) -> Optional[str]:
        """One image's thumbnail, made once per content: a second file with the same
        bytes (a set's image copied for another set) waits for the first one's result."""
        key = cache_key(STAGE, content_sha256, f"pillow-{PIL.__version__}",
                        {"size": SIZE, "quality": QUALITY})
        with self._lock:
            claim = self._by_key.get(key)
            first = claim is None
            if first:
                claim = self._by_key[key] = _Claim()
        if not first:
            claim.done.wait()
            return claim.rel
        try:
            claim.rel = self._make(key, open_image)
        finally:   # also when it raised (a full disk): nobody waits forever
            claim.done.set()
        return claim.rel

    def _make(self, key: str, open_image) -> Optional[str]:
        rel = f"{FOLDER}/{key[:2]}/{key}.jpg"
        target = os.path.join(self._root, rel)
        if os.path.exists(target):
            return rel
        os.makedirs(os.path.dirname(target), exist_ok=True)
        earlier = os.path.join(self._previous, rel) if self._previous else None
        if earlier and os.path.isfile(earlier):
            shutil.copyfile(earlier, target)
            self._count("reused")
            return rel
        data = _small_jpeg(open_image)
        if data is None:
            self._count("unreadable")
            return None
        with open(target, "wb") as f:
            f.write(data)
        self._count("made")
        return rel


class _Claim:
    def __init__(self):
        self.done, self.rel = threading.Event(), None


def _small_jpeg(open_image) -> Optional[bytes]:
    """The image shrunk to SIZE on its longest side, as JPEG bytes; None if unreadable."""
    try:
        with open_image() as image:
            image.draft("RGB", (SIZE, SIZE))   # JPEG: decode at a reduced scale, much faster
            small = image.convert("RGB")
            small.thumbnail((SIZE, SIZE))
    except (OSError, ValueError, Image.DecompressionBombError):
        return None
    out = io.BytesIO()
    small.save(out, format="JPEG", quality=QUALITY, optimize=True)
    return out.getvalue()


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
