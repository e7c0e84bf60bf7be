"""Deterministic sample videos for tests and demos, made offline from the real photos
bundled with scikit-image (no download).

A video is a list of segments ``(photo, n_frames, effect)``; each segment is one shot,
so the true cuts are exactly at the segment boundaries. Effects:

- motion, one of ``pan`` (default), ``zoom``, ``still``: a slow sub-pixel camera move,
  so consecutive frames differ a little and distances grow over the shot;
- modifiers, added with ``+`` (e.g. ``"zoom+blur"``): ``blur`` (heavy Gaussian blur, for
  the BRISQUE filter) and ``text`` (large caption lines drawn by ffmpeg's drawtext, for
  the OCR filter).

Frames are rendered with numpy/OpenCV and encoded in one ffmpeg process (libx264 with
fixed settings, one thread) so the same call gives the same file.

Usage: ``python -m transforms.video.synthetic OUT_DIR`` writes the sample video(s).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import cv2
import ffmpeg
import numpy as np

Segment = Tuple[str, int, str]  # (photo name, number of frames, effect)

# skimage.data files that ship inside the wheel (others would be fetched from the web).
PHOTOS = {
    "astronaut": "astronaut.png", "chelsea": "chelsea.png", "coffee": "coffee.png",
    "rocket": "rocket.jpg", "motorcycle_left": "motorcycle_left.png",
    "motorcycle_right": "motorcycle_right.png", "hubble": "hubble_deep_field.jpg",
    "ihc": "ihc.png", "retina": "retina.jpg", "camera": "camera.png", "coins": "coins.png",
    "moon": "moon.png", "page": "page.png", "brick": "brick.png", "grass": "grass.png",
}
MOTIONS = ("pan", "zoom", "still")
MODIFIERS = ("blur", "text")
FONT_FILE = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"  # Debian fonts-dejavu-core
CAPTIONS = ("BREAKING NEWS", "LIVE FROM THE CITY", "WEATHER UPDATE TODAY")

# A small video exercising every stage: four usable shots (one blurred, one captioned)
# and one shot too short to give a set of 10 frames.
SAMPLE_SEGMENTS: List[Segment] = [
    ("astronaut", 48, "pan"),
    ("chelsea", 48, "zoom"),
    ("coffee", 36, "pan+text"),
    ("rocket", 36, "zoom+blur"),
    ("motorcycle_left", 6, "pan"),
    ("hubble", 40, "zoom"),
]

_X264 = dict(vcodec="libx264", preset="veryfast", crf=20, pix_fmt="yuv420p",
             threads=1, g=250, bf=0, movflags="+faststart")


def make_video(path: str, segments: Sequence[Segment], fps: float = 25.0,
               size: Tuple[int, int] = (256, 192)) -> List[int]:
    """Write an H.264 mp4 of `segments` and return the true cut frame numbers (the first
    frame of every segment after the first)."""
    width, height = size
    if width % 2 or height % 2:
        raise ValueError("size must be even for yuv420p")
    segments = [_check(s) for s in segments]
    starts = np.cumsum([0] + [n for _, n, _ in segments]).tolist()

    stream = ffmpeg.input("pipe:", format="rawvideo", pix_fmt="rgb24",
                          s=f"{width}x{height}", framerate=fps)
    for (_, n, effect), start in zip(segments, starts):
        if "text" in effect.split("+"):
            stream = _captions(stream, start, start + n - 1, width, height)
    args = (stream.output(path, **_X264)
            .global_args("-nostdin", "-hide_banner", "-loglevel", "error", "-y")
            .compile())
    with tempfile.TemporaryFile() as err:  # a file, not a pipe: it cannot fill up
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                stderr=err)
        try:
            for photo, n, effect in segments:
                for t in range(n):
                    proc.stdin.write(_render(photo, effect, t, n, width, height).tobytes())
        except BrokenPipeError:
            pass  # ffmpeg died; its message is read below
        finally:
            proc.stdin.close()
            rc = proc.wait()
        if rc != 0:
            err.seek(0)
            raise RuntimeError(f"ffmpeg failed ({rc}): {err.read().decode()[-500:]}")
    return starts[1:-1]


def make_sample_video(path: str) -> List[int]:
    return make_video(path, SAMPLE_SEGMENTS)


def make_corrupt_video(path: str) -> None:
    """An mp4 cut in half before its index (moov atom): no tool can open it."""
    with tempfile.TemporaryDirectory() as tmp:
        whole = os.path.join(tmp, "whole.mp4")
        _encode_plain(whole, movflags="")  # moov at the end, so truncation loses it
        _truncate_copy(whole, path, 0.5)


def make_truncated_video(path: str, keep: float = 0.5,
                         segments: Optional[Sequence[Segment]] = None) -> int:
    """An mp4 whose index is intact but whose data stops early (an interrupted download):
    the first frames decode, then the decoder runs out, and ffmpeg still exits 0. Only
    the first `keep` of the bytes are written. Returns the frame count of the complete
    video (what the index promises)."""
    with tempfile.TemporaryDirectory() as tmp:
        whole = os.path.join(tmp, "whole.mp4")
        n = _encode_plain(whole, movflags="+faststart", segments=segments)  # moov first
        _truncate_copy(whole, path, keep)
    return n


def make_empty_video(path: str) -> None:
    """A zero-byte file with a video name."""
    Path(path).write_bytes(b"")


def make_frameless_video(path: str) -> None:
    """A readable video stream with no frames: a YUV4MPEG2 (.y4m) header alone."""
    Path(path).write_bytes(b"YUV4MPEG2 W64 H48 F25:1 Ip A1:1 C420jpeg\n")


def make_audio_only(path: str) -> None:
    """A valid mp4 with an audio stream and no video stream."""
    (ffmpeg.input("sine=frequency=440:duration=1", f="lavfi")
     .output(path, acodec="aac")
     .global_args("-nostdin", "-hide_banner", "-loglevel", "error", "-y")
     .run())


# --- internals -----------------------------------------------------------------------

def _check(seg: Segment) -> Segment:
    photo, n, effect = seg
    if photo not in PHOTOS:
        raise ValueError(f"unknown photo {photo!r}; choose from {sorted(PHOTOS)}")
    if n < 1:
        raise ValueError("a segment needs at least one frame")
    parts = effect.split("+")
    if sum(p in MOTIONS for p in parts) > 1 or any(p not in MOTIONS + MODIFIERS for p in parts):
        raise ValueError(f"bad effect {effect!r}: one of {MOTIONS} plus any of {MODIFIERS}")
    return seg


@lru_cache(maxsize=None)
def photo(name: str) -> np.ndarray:
    """One of the bundled scikit-image photos as RGB uint8."""
    return _photo(name)


def photo_variants(name: str, n: int, size: Tuple[int, int] = (256, 192)) -> List[np.ndarray]:
    """`n` distinct views of one photo (shifted crops, zoom, mirror, light): near
    neighbours of each other, as the images of an Open Images kNN set are."""
    img = _photo(name)
    h, w = img.shape[:2]
    views = []
    for i in range(n):
        scale = 0.6 + 0.05 * (i % 5)
        ch, cw = int(h * scale), int(w * scale)
        y = (h - ch) * ((i * 3) % 7) // 6
        x = (w - cw) * ((i * 5) % 7) // 6
        view = cv2.resize(img[y:y + ch, x:x + cw], size, interpolation=cv2.INTER_AREA)
        if i % 2:
            view = view[:, ::-1]
        gain = 0.85 + 0.06 * (i % 4)
        views.append(np.clip(view.astype(np.float32) * gain, 0, 255).astype(np.uint8))
    return views


def _photo(name: str) -> np.ndarray:
    import skimage.data
    img = cv2.imread(str(Path(skimage.data.__file__).parent / PHOTOS[name]),
                     cv2.IMREAD_COLOR)  # grey and RGBA files come back as 3 channels
    if img is None:
        raise FileNotFoundError(f"skimage.data photo {name!r} is missing")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


def _render(name: str, effect: str, t: int, n: int, width: int, height: int) -> np.ndarray:
    """Frame t of n: a window on the photo that moves smoothly with t."""
    img = photo(name)   # decoded once per process (lru_cache), not once per frame
    h0, w0 = img.shape[:2]
    parts = effect.split("+")
    motion = next((p for p in parts if p in MOTIONS), "pan")
    u = t / max(1, n - 1)  # 0 -> 1 over the segment
    full = min(w0 / width, h0 / height)  # source pixels per output pixel, widest window
    if motion == "zoom":
        scale, cx = full * (0.9 - 0.3 * u), w0 / 2  # zoom in to 60% of the width
    elif motion == "pan":
        scale = full * 0.75
        cx = w0 / 2 + (u - 0.5) * (w0 - width * scale) * 0.8  # left to right
    else:
        scale, cx = full * 0.8, w0 / 2
    cy = h0 / 2
    # Output pixel (x, y) samples source (x0 + x*scale, y0 + y*scale): sub-pixel smooth.
    m = np.float32([[scale, 0, cx - width * scale / 2], [0, scale, cy - height * scale / 2]])
    src = img
    if scale > 1.5:  # pre-shrink so bilinear sampling does not alias
        k = scale / 1.5
        src = cv2.resize(img, (round(w0 / k), round(h0 / k)), interpolation=cv2.INTER_AREA)
        m = m / k  # source coordinates shrink with the image
    frame = cv2.warpAffine(src, m, (width, height), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                           borderMode=cv2.BORDER_REFLECT)
    if "blur" in parts:
        frame = cv2.GaussianBlur(frame, (0, 0), sigmaX=max(width, height) / 40)
    return frame


def _captions(stream, first: int, last: int, width: int, height: int):
    """Big boxed caption lines on frames first..last (drawtext, enabled by frame number)."""
    if not os.path.exists(FONT_FILE):
        raise RuntimeError(f"font {FONT_FILE} missing: apt-get install fonts-dejavu-core")
    size = max(10, min(height // 9, width // 15))  # the longest line fits the width
    for i, line in enumerate(CAPTIONS):
        stream = stream.drawtext(text=line, fontfile=FONT_FILE, fontsize=size,
                                 fontcolor="white", box=1, boxcolor="black@0.7",
                                 boxborderw=4, x="(w-text_w)/2",
                                 y=height // 6 + i * int(size * 1.8),
                                 enable=f"between(n,{first},{last})")
    return stream


def _encode_plain(path: str, movflags: str, segments: Optional[Sequence[Segment]] = None) -> int:
    segs = segments or [("astronaut", 25, "pan"), ("chelsea", 25, "zoom")]
    make_video(path, segs)
    if not movflags:  # make_video writes faststart; rewrite with the index at the end
        tmp = path + ".tail.mp4"
        (ffmpeg.input(path).output(tmp, c="copy")
         .global_args("-nostdin", "-hide_banner", "-loglevel", "error", "-y").run())
        shutil.move(tmp, path)
    return sum(n for _, n, _ in segs)


def _truncate_copy(src: str, dst: str, keep: float) -> None:
    data = Path(src).read_bytes()
    Path(dst).write_bytes(data[: int(len(data) * keep)])


def main(argv=None) -> int:
    out = Path((argv or sys.argv[1:] or ["samples"])[0])
    out.mkdir(parents=True, exist_ok=True)
    cuts = make_sample_video(str(out / "sample.mp4"))
    print(f"{out / 'sample.mp4'}: cuts at {cuts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
