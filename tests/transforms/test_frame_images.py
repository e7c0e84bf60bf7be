"""The frame image bundles the cache keeps (transforms/video/frame_images.py)."""
import numpy as np
import pytest

from transforms.video.frame_images import (CachedFrameImages, decode_bundle, encode_bundle,
                                           jpeg_bytes)


def frame(value):
    return np.full((24, 32, 3), value, np.uint8)


def test_a_bundle_round_trips_and_a_damaged_one_is_refused():
    images = {7: jpeg_bytes(frame(10), 95), 3: jpeg_bytes(frame(200), 95)}
    value = encode_bundle(images)
    assert decode_bundle(value) == images
    with pytest.raises(ValueError):
        decode_bundle(value[:-1])            # the last JPEG cut short
    with pytest.raises(ValueError):
        decode_bundle(value + b"\0")         # bytes after the last frame
    with pytest.raises(ValueError):
        decode_bundle(b"x" + value)          # not a bundle


def test_cached_images_are_served_and_only_the_others_made():
    cached = {1: jpeg_bytes(frame(50), 95)}
    reads = []

    def read(entry):
        reads.append(entry)
        return encode_bundle(cached)

    images = CachedFrameImages(["entry"], read, quality=95)
    assert images.jpeg(1, lambda: pytest.fail("a cached frame is never decoded")) == cached[1]
    assert images.jpeg(2, lambda: frame(90)) == jpeg_bytes(frame(90), 95)
    images.keep(1, lambda: pytest.fail("a cached frame is never decoded"))
    images.keep(5, lambda: frame(5))
    assert images.served == 1 and sorted(images.made) == [2, 5]
    assert reads == ["entry"]                # the bundles are read once
