"""Rejected frames pictured in the release explorer (pipelines/imagecode/video/explorer_frames.py):
decoded again from the video the manifest lists, by frame number."""
import json

import numpy as np

from pipelines.imagecode.video.explorer_frames import rejected_frames
from transforms.video.decode import iter_frames
from transforms.video.synthetic import make_video


def _reject(item_id, video_id="v1", level="frame", reason="blurry", detail=""):
    return {"item_id": item_id, "level": level, "source": "msr-vtt", "video_id": video_id,
            "reason": reason, "stage": "mining", "detail": detail}


def test_frames_named_by_rejects_come_from_their_video(tmp_path):
    make_video(str(tmp_path / "v1.mp4"), [("astronaut", 6, "still"), ("coffee", 6, "still+blur")])
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text("\n".join([
        json.dumps({"path": "v1.mp4", "source": "msr-vtt", "video_id": "v1", "split": "train"}),
        "not json",
        json.dumps({"path": "gone.mp4", "source": "msr-vtt", "video_id": "v2", "split": "train"})]) + "\n")
    rejects = [_reject("msr-vtt/v1/shot1/frame9"), _reject("msr-vtt/v1/shot0/frame2"),
               _reject("msr-vtt/v1/shot0", level="shot"),          # not a frame
               _reject("msr-vtt/v2/shot0/frame1", video_id="v2"),  # its video is gone
               _reject("msr-vtt/v1/shot9/frame99")]                # past the end: no pictures
    pictures = rejected_frames(str(manifest))(rejects[:2] + rejects[2:4])
    assert set(pictures) == {"msr-vtt/v1/shot1/frame9", "msr-vtt/v1/shot0/frame2"}
    decoded = dict(iter_frames(str(tmp_path / "v1.mp4"), 256))
    for item_id, number in (("msr-vtt/v1/shot1/frame9", 9), ("msr-vtt/v1/shot0/frame2", 2)):
        [(name, frame)] = pictures[item_id]
        assert name == f"frame{number}" and np.array_equal(frame, decoded[number])
    assert rejected_frames(str(manifest))(rejects[4:]) == {}
    # a too_similar frame comes first, then the frame it was too close to (named in detail)
    similar = _reject("msr-vtt/v1/shot1/frame8", reason="too_similar",
                      detail="distance=0.1000 nearest=frame7")
    [(first, a), (second, b)] = rejected_frames(str(manifest))([similar])["msr-vtt/v1/shot1/frame8"]
    assert (first, second) == ("frame8", "nearest: frame7")
    assert np.array_equal(a, decoded[8]) and np.array_equal(b, decoded[7])


def test_pictures_of_a_larger_video_are_shrunk_whichever_decoder(tmp_path, monkeypatch):
    """320x240: decoded whole in process and shrunk to 256x192 by area averaging; where
    PyAV cannot be used, the ffmpeg pipe scales it to that size itself."""
    import cv2

    from pipelines.imagecode.video import explorer_frames
    video = str(tmp_path / "big.mp4")
    make_video(video, [("astronaut", 8, "pan")], size=(320, 240))
    manifest = tmp_path / "videos.jsonl"
    manifest.write_text(json.dumps({"path": "big.mp4", "source": "msr-vtt", "video_id": "v1",
                                    "split": "train"}) + "\n")
    rejects = [_reject("msr-vtt/v1/shot0/frame5")]
    full = dict(iter_frames(video))[5]
    [(_, picture)] = rejected_frames(str(manifest))(rejects)["msr-vtt/v1/shot0/frame5"]
    assert picture.shape == (192, 256, 3)
    assert np.array_equal(picture, cv2.resize(full, (256, 192), interpolation=cv2.INTER_AREA))

    monkeypatch.setattr(explorer_frames, "decodes_in_process", lambda path: False)
    [(_, piped)] = rejected_frames(str(manifest))(rejects)["msr-vtt/v1/shot0/frame5"]
    assert np.array_equal(piped, dict(iter_frames(video, 256))[5])
