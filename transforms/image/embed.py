"""Embedding frames and images in Beam with an encoder of transforms/image/encoders.py.

Beam: `EmbedShots` is RunInference over ShotFrames. The model is loaded once per worker
process (RunInference's shared-model mechanism), each RunInference batch holds a few
shots, and their frames go through the model in sub-batches of `batch_size` frames.
No shuffle is involved (BatchElements without a duration limit is a plain DoFn), so the
stage fuses between the shot decoder and the miner and pixels never leave the worker.
Shots leave the model without their pixels: every step a record passes costs Beam a
size estimate of it, and no step after the encoder needs them.

`ShotEmbedder` is the same encoder, batches and counters inside another DoFn: for a stage
that decodes a video and embeds its shots in one call, so that neither the pixels nor
the embeddings of a video ever become elements of their own (ImageCoDe's video plans,
whose videos must not meet in a grouping step: pipelines/imagecode/video/plans.py).

`EmbedImages` is the same for still images (static sets): RunInference over ImageRefs;
the worker reads and decodes each file itself (transforms/image/decode.py), so only
paths and embeddings cross between stages. A file that does not decode leaves as a
Reject (unreadable_image), one over the pixel limit as too_many_pixels.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.ml.inference.base import ModelHandler, PredictionResult, RunInference
from apache_beam.utils import shared

from schemas.records import ImageEmbedding, ImageRef, ShotFrames
from transforms.core.hashing import pixels_sha256
from transforms.core.stage import StageCounts, StageFn, stage_pardo
from transforms.image.decode import ImageProblem, Unreadable, read_image
from transforms.image.encoders import EncoderSpec, build_encoder, encoder_identity
from transforms.image.formats import DEFAULT_MAX_PIXELS

STAGE = "embed"


_LOADS_IN_THIS_PROCESS = 0  # encoders built here (tests check "once per worker")


def loads_in_this_process() -> int:
    return _LOADS_IN_THIS_PROCESS


class _LazyEncoder:
    """The encoder, built on the first frames it is given. RunInference loads its model
    in setup(); a worker whose items all came from the cache then never reads weights."""

    def __init__(self, spec: EncoderSpec):
        self._spec = spec
        self._encoder = None
        self.counts = StageCounts(STAGE)  # made in load_model, on the worker

    def encode(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        global _LOADS_IN_THIS_PROCESS
        if len(frames) == 0 and self._encoder is None:  # the width without loading
            return np.zeros((0, encoder_identity(self._spec)["embedding_dim"]), np.float32)
        if self._encoder is None:
            self._encoder = build_encoder(self._spec)
            _LOADS_IN_THIS_PROCESS += 1
            self.counts.work("model.loaded")  # live: we are in process()
        return self._encoder.encode(frames)


class _EncoderHandler(ModelHandler):
    """What both handlers share: one encoder per worker, loaded on first use."""

    def __init__(self, spec: EncoderSpec):
        super().__init__()
        self.spec = spec

    def load_model(self):
        return _LazyEncoder(self.spec)


class ShotEncoderHandler(_EncoderHandler):
    """RunInference handler: ShotFrames in, PredictionResult(shot without its pixels,
    (n, d) embeddings) out."""

    def run_inference(self, batch: Sequence[ShotFrames], model,
                      inference_args: Optional[Dict[str, Any]] = None) -> Iterable[PredictionResult]:
        return [PredictionResult(shot, embeddings)
                for shot, embeddings in _encode_shots(model, batch)]

    def get_num_bytes(self, batch: Sequence[ShotFrames]) -> int:
        # The default pickles the whole batch just to measure it; frames know their size.
        return sum(frame.nbytes for shot in batch for frame in shot.frames)

    def batch_elements_kwargs(self) -> Dict[str, Any]:
        # Few shots per batch (each holds many frames). No max_batch_duration_secs: that
        # would turn batching into a keyed stateful step, i.e. a shuffle of pixels.
        return {"min_batch_size": 1, "max_batch_size": self.spec.shots_per_batch}


def _encode_shots(model, shots: Sequence[ShotFrames]):
    """[(shot without its pixels, (n, d) embeddings)] of a batch of shots. All their
    frames go to the model in one stream: its sub-batches fill across shots."""
    sizes = [len(shot.frames) for shot in shots]
    embeddings = model.encode([frame for shot in shots for frame in shot.frames])
    parts = np.split(embeddings, np.cumsum(sizes)[:-1])
    return [(dataclasses.replace(shot, frames=[]), part) for shot, part in zip(shots, parts)]


class ShotEmbedder:
    """EmbedShots inside the DoFn that decodes the shots, for a stage whose pixels must
    never leave the call that decoded them (one video at a time: nothing of it is
    grouped, pixels or embeddings). The same encoder, batches and counters as EmbedShots:
    one encoder per worker process, shared by every DoFn instance there (Beam's Shared,
    as RunInference keeps its model) and built on the first frames; up to
    `spec.shots_per_batch` shots per batch, their frames in `spec.batch_size` sub-batches.

        embedder = ShotEmbedder(spec)          # in the DoFn's __init__ (it pickles)
        embedder.setup()                       # in the DoFn's setup, on the worker
        for shot in embedder.embed(shots): ... # each shot with embeddings, no pixels

    A batch never spans two calls of `embed`, so one video's shots never wait for the next
    video's. Counters (stage "embed"): shot.in, shot.out; as the run's work,
    frame.embedded and model.loaded."""

    def __init__(self, spec: EncoderSpec):
        self.spec = spec
        self._handle = shared.Shared()
        self._model = None

    def __getstate__(self):
        return {"spec": self.spec, "_handle": self._handle, "_model": None}

    def setup(self) -> None:
        spec = self.spec
        self._model = self._handle.acquire(lambda: _LazyEncoder(spec))
        self._counts = StageCounts(STAGE)

    def embed(self, shots: Iterable[ShotFrames]) -> Iterator[ShotFrames]:
        """The shots (taken with their pixels) with `embeddings` and without pixels, in
        order, each batch as soon as it is full."""
        batch: List[ShotFrames] = []
        for shot in shots:
            self._counts.seen(level="shot")
            batch.append(shot)
            if len(batch) >= self.spec.shots_per_batch:
                yield from self._encode(batch)
                batch = []
        yield from self._encode(batch)

    def _encode(self, batch: List[ShotFrames]) -> Iterator[ShotFrames]:
        if not batch:
            return
        for shot, embeddings in _encode_shots(self._model, batch):
            self._counts.work("frame.embedded", len(embeddings))
            self._counts.count_out(level="shot")
            yield dataclasses.replace(shot, embeddings=embeddings)


class _AttachEmbeddings(StageFn):
    """Every shot RunInference was given comes back with its embeddings (shot.in, shot.out,
    frame.embedded)."""
    stage, level = STAGE, "shot"

    def judge(self, result: PredictionResult):
        self.counts.work("frame.embedded", len(result.inference))
        # A copy with embeddings set: Beam elements must not be mutated in place.
        yield dataclasses.replace(result.example, embeddings=result.inference)


class EmbedShots(beam.PTransform):
    """ShotFrames -> the same shots with `embeddings` ((n, d) float32, unit rows, one per
    frame) and without their pixels (`frames` empty; `frame_indices` says which frames).

    Counters (stage "embed"): shot.in, shot.out; as the run's work (StageCounts.work),
    frame.embedded and model.loaded (once per worker process that embedded anything).
    """

    def __init__(self, spec: EncoderSpec):
        super().__init__()
        self.spec = spec

    def expand(self, shots):
        return (shots
                | "Encode frames" >> RunInference(ShotEncoderHandler(self.spec))
                | "Attach embeddings" >> beam.ParDo(_AttachEmbeddings()))


# ---------------------------------------------------------------------------- still images


class ImageEncoderHandler(_EncoderHandler):
    """RunInference handler: ImageRef in, PredictionResult(ref, ((d,) embedding, sha256 of
    the bytes, PixelDigest of the pixels) or Unreadable) out. Images of one batch are
    decoded, then encoded together; the pixels are digested while they are at hand, so
    judging duplicates by content costs no second decode."""

    def __init__(self, spec: EncoderSpec, max_pixels: int = DEFAULT_MAX_PIXELS):
        super().__init__(spec)
        self.max_pixels = max_pixels

    def run_inference(self, batch: Sequence[ImageRef], model,
                      inference_args: Optional[Dict[str, Any]] = None) -> Iterable[PredictionResult]:
        outcomes: List[Any] = []
        pixels = []
        for ref in batch:
            try:
                image, sha = read_image(ref.path, ref.content_sha256, self.max_pixels)
            except ImageProblem as e:
                outcomes.append(Unreadable(e.reason, e.detail))
                continue
            outcomes.append((sha, pixels_sha256(image)))
            pixels.append(image)
        embeddings = iter(model.encode(pixels)) if pixels else iter(())
        results = []
        for ref, outcome in zip(batch, outcomes):
            if isinstance(outcome, tuple):
                outcome = (next(embeddings), *outcome)
            results.append(PredictionResult(ref, outcome))
        return results

    def batch_elements_kwargs(self) -> Dict[str, Any]:
        # Images are decoded inside the batch: `batch_size` of them at a time in memory.
        return {"min_batch_size": 1, "max_batch_size": self.spec.batch_size}


class _SplitImageResults(StageFn):
    stage, level = STAGE, "image"

    def judge(self, result: PredictionResult):
        ref = result.example
        if isinstance(result.inference, Unreadable):
            yield self.reject(result.inference.reason, ref.image_id, detail=result.inference.detail)
            return
        embedding, sha, pixels = result.inference
        yield ImageEmbedding(image_id=ref.image_id, path=ref.path, content_sha256=sha,
                             embedding=np.asarray(embedding, dtype=np.float32), pixels_sha256=pixels)


class EmbedImages(beam.PTransform):
    """ImageRef -> ImageEmbedding ((d,) float32, unit norm, with its pixels' digest; main)
    and Rejects (unreadable_image, too_many_pixels: width x height over `max_pixels`).

    Counters (stage "embed"): image.in, image.out, image.rejected.<reason>; model.loaded
    as the run's work. Behind a cache (EmbedImagesCached) the cached images are counted
    in and out too, so the counts follow the data, not the cache.
    """

    def __init__(self, spec: EncoderSpec, max_pixels: int = DEFAULT_MAX_PIXELS):
        super().__init__()
        self.spec = spec
        self.max_pixels = max_pixels

    def expand(self, refs):
        return (refs
                | "Encode images" >> RunInference(ImageEncoderHandler(self.spec, self.max_pixels))
                | "Split unreadable" >> stage_pardo(_SplitImageResults()))
