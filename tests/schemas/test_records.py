"""The coder of ShotFrames (schemas/records.py): pickle both ways, and a size estimate
that is the pickle's size within a little, computed without encoding the pixels."""
import pickle

import apache_beam as beam
import numpy as np
from apache_beam.coders import registry

from schemas.records import ShotFrames, ShotFramesCoder, VideoRef
from transforms.core.stage import MAIN
from transforms.video.shots import SplitIntoShots


def _shot(n_frames=20, embedded=True):
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (240, 320, 3), dtype=np.uint8) for _ in range(n_frames)]
    video = VideoRef(path="v.mp4", source="test", video_id="v0", split="train", content_sha256="ab" * 32)
    return ShotFrames(video=video, shot_index=3, start_frame=40, end_frame=40 + n_frames, fps=25.0,
                      frame_indices=list(range(40, 40 + n_frames)), frames=frames,
                      embeddings=rng.random((n_frames, 512), dtype=np.float32) if embedded else None)


def test_the_coder_round_trips_and_estimates_without_encoding(monkeypatch):
    coder = ShotFramesCoder()
    for shot in (_shot(), _shot(embedded=False), _shot(0)):
        back = coder.decode(coder.encode(shot))
        assert back.key == shot.key and back.frame_indices == shot.frame_indices
        assert all(np.array_equal(a, b) for a, b in zip(back.frames, shot.frames, strict=True))
        assert (back.embeddings is None) == (shot.embeddings is None)
        size = len(pickle.dumps(shot, pickle.HIGHEST_PROTOCOL))
        assert abs(coder.estimate_size(shot) - size) <= max(0.02 * size, 1024)

    def no_pickling(*_args, **_kwargs):
        raise AssertionError("the size was estimated by encoding")
    monkeypatch.setattr(ShotFramesCoder, "encode", no_pickling)
    assert coder.get_impl().estimate_size(_shot()) > 20 * 240 * 320 * 3


def test_the_shot_stages_pixels_travel_with_it():
    """SplitIntoShots' shots are typed, so Beam picks the coder (and a list of shots,
    as RunInference batches them, a list of it)."""
    p = beam.Pipeline()
    shots = (p | beam.Create([]) | SplitIntoShots())[MAIN]
    assert shots.element_type is ShotFrames
    assert isinstance(registry.get_coder(shots.element_type), ShotFramesCoder)
    batches = shots | beam.BatchElements()
    assert "ShotFramesCoder" in repr(registry.get_coder(batches.element_type))
