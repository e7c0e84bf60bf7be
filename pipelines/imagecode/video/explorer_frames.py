"""Rejected frames as pictures in the release explorer (pipelines/release/explorer/write.py).

A frame the mining filters dropped (blurry, text, too_similar, unfinished_set, ...) is
not in the release: its reject names it as `<source>/<video_id>/shot<k>/frame<n>`, and
the explorer asks for the frames on each reason's first page. They are decoded again
from the videos the build's manifest lists, one forward pass per video up to the last
frame asked (as the miner reads them: no seeking, exact frame numbers), and shrunk to
MAX_SIDE: decoded at full size in process where PyAV can (only the pictured frames are
converted, then shrunk), else by the ffmpeg pipe at that size (it converts every frame it
passes, so small is cheaper). A video whose frames PyAV turns out unable to give as the
pipe would (a rare pixel format) goes on through the pipe at full size, then shrunk.
A `too_similar` frame comes with the frame it was too close to (its reject's detail names
it: `nearest=frame<n>`), the two side by side. A video that cannot be read now simply has
no pictures. These decodes are the only ones a same-config rebuild still makes (the
miner's come from the frame cache); they are logged, not counted in `mining/frame.decoded`.
"""
from __future__ import annotations

import glob
import logging
import os
import re
from collections import defaultdict
from typing import Dict, List

import cv2

from schemas.records import VideoRef
from transforms.video.decode import ForwardFrameReader, VideoError, decodes_in_process
from transforms.video.manifest import parse_manifest_line

log = logging.getLogger(__name__)

FRAME = re.compile(r"/frame(\d+)$")
NEAREST = re.compile(r"\bnearest=frame(\d+)\b")
MAX_SIDE = 256   # pictures at most this large: the explorer shows 128px thumbnails


def rejected_frames(videos_manifest: str):
    """reject rows -> {item id: [(name, RGB frame)]} for the frame-level rejects among them."""
    def pictures(rejects: List[dict]) -> Dict[str, list]:
        # video -> frame number -> [(item id, name of the picture)]
        wanted = defaultdict(lambda: defaultdict(list))
        for reject in rejects:
            found = FRAME.search(reject["item_id"])
            if reject["level"] == "frame" and found and reject.get("video_id"):
                frames = wanted[(reject["source"], reject["video_id"])]
                item = reject["item_id"]
                frames[int(found[1])].append((item, f"frame{found[1]}"))
                nearest = NEAREST.search(reject.get("detail") or "")
                if nearest:
                    frames[int(nearest[1])].append((item, f"nearest: frame{nearest[1]}"))
        if not wanted:
            return {}
        paths = _video_paths(videos_manifest)
        out, decoded = {}, 0
        for video, by_frame in sorted(wanted.items()):
            if video not in paths:
                continue
            numbers = sorted(by_frame)
            path = paths[video]
            reader = ForwardFrameReader(path, max_side=None if decodes_in_process(path) else MAX_SIDE)
            try:
                frames = reader.frames_of(0, numbers[-1] + 1, numbers)
            except (VideoError, OSError) as e:
                log.warning("explorer: no pictures of rejected frames of %s: %s", path, e)
                continue
            finally:
                reader.close()
                decoded += reader.frames_decoded
            for number in numbers:   # the rejected frame first, then its nearest
                if number in frames:
                    picture = shrunk(frames[number])
                    for item_id, name in by_frame[number]:
                        out.setdefault(item_id, []).append((name, picture))
        # Not in the manifest's counters (they are the pipeline's, and this runs after
        # it): said here, since a rebuild that decoded nothing in the miner decodes this.
        log.info("explorer: %d frames decoded from %d videos to picture %d rejected frames",
                 decoded, len(wanted), len(out))
        return {item: sorted(shown, key=lambda named: named[0].startswith("nearest"))
                for item, shown in out.items()}
    return pictures


def shrunk(frame):
    """The frame scaled (area averaging) so that its longer side is at most MAX_SIDE."""
    height, width = frame.shape[:2]
    scale = MAX_SIDE / max(height, width)
    if scale >= 1:
        return frame
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)


def _video_paths(videos_manifest: str) -> Dict[tuple, str]:
    """(source, video_id) -> video file, from the manifest's lines that name a video
    (the first line of a video wins, as in the build; bad lines were rejected there)."""
    paths = {}
    for manifest in sorted(glob.glob(videos_manifest)) or [videos_manifest]:
        if not os.path.isfile(manifest):
            continue
        with open(manifest, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    continue
                video = parse_manifest_line(line, os.path.dirname(manifest))
                if isinstance(video, VideoRef):
                    paths.setdefault((video.source, video.video_id), video.path)
    return paths
