"""MineFrameSets over video plans: known scores are used and never computed again,
score_all_frames changes what is scored but not what is selected, and calibration's
count from known scores equals what the miner makes."""
import collections
import glob
import threading

import apache_beam as beam
import numpy as np
import pyarrow.parquet as pq

from pipelines.imagecode.calibrate import sets_from_known_scores
from pipelines.imagecode.video.scoring import NEW_SCORES, MineFrameSets
from pipelines.imagecode.video.quality_gate import QualityGate
from pipelines.imagecode.records import VideoPlan
from pipelines.imagecode.video.plans import StoreNewScores, VideoCacheSpec, decode_scores
from schemas.records import ShotFrames, VideoRef
from tests.beam_testing import local_test_pipeline

N_FRAMES = 40


class MeanBrightness:
    """A stand-in BRISQUE: frames darker than mid-grey 'blurry' (score = 1 - mean/255)."""
    def score_normalised(self, frames):
        return np.array([1.0 - f.mean() / 255.0 for f in frames])


class MarkedText:
    """A stand-in OCR: the red channel of pixel (0, 0) is the number of characters."""
    def text_chars(self, frame):
        return int(frame[0, 0, 0])


def gate():
    return QualityGate(MeanBrightness(), 0.65, MarkedText(), 10)


def frame(brightness, chars=0):
    f = np.full((8, 8, 3), brightness, np.uint8)
    f[0, 0, 0] = chars
    return f


def plan(known=None):
    rng = np.random.default_rng(0)
    emb = rng.normal(size=(N_FRAMES, 6)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    frames = [frame(40 if i % 7 == 3 else 200, 30 if i % 11 == 5 else 0) for i in range(N_FRAMES)]
    video = VideoRef(path="/nonexistent.mp4", source="src", video_id="v1", split="train")
    shot = ShotFrames(video=video, shot_index=0, start_frame=0, end_frame=N_FRAMES, fps=25.0,
                      frame_indices=list(range(N_FRAMES)), frames=frames, embeddings=emb)
    return VideoPlan(video=video, shots=[shot], known_scores=known or {},
                     score_keys={"brisque": "kb", "ocr": "ko"})


def mine(tmp_path, the_plan, score_all=False):
    """(sorted (set name, frame numbers), {filter: frames scored}) from one plan."""
    dofn = MineFrameSets(threshold=1.0, set_size=3, gate_factory=gate, staging_dir=str(tmp_path),
                         score_all_frames=score_all)._dofn
    dofn.setup()
    sets, scored = [], {}
    for out in dofn.process(the_plan):
        if isinstance(out, beam.pvalue.TaggedOutput):
            if out.tag == NEW_SCORES:
                name, key, values = out.value
                assert key == the_plan.score_keys[name]
                scored[name] = set(values)
        else:
            sets.append((out.set_name, tuple(out.frame_indices)))
    expected = sets_from_known_scores(_all_known(the_plan), 1.0, 3, {"brisque": 0.65, "ocr": 10})
    assert len(sets) == expected["sets"] and expected["unscored"] == 0
    return sorted(sets), scored


def _all_known(the_plan):
    g = gate()
    shot = the_plan.shots[0]
    known = {"brisque": {i: float(g.brisque.score_normalised([f])[0]) for i, f in enumerate(shot.frames)},
             "ocr": {i: g.text.text_chars(f) for i, f in enumerate(shot.frames)}}
    return VideoPlan(the_plan.video, the_plan.shots, known, {})


def test_known_scores_are_used_and_only_the_others_computed(tmp_path):
    lazy_sets, lazy_scored = mine(tmp_path / "a", plan())
    assert lazy_sets and lazy_scored["brisque"] and len(lazy_scored["brisque"]) < N_FRAMES
    half = {name: {i: v for i, v in values.items() if i % 2 == 0}
            for name, values in _all_known(plan()).known_scores.items()}
    sets, scored = mine(tmp_path / "b", plan(half))
    assert sets == lazy_sets
    for name in ("brisque", "ocr"):
        assert not scored.get(name, set()) & set(half[name]), "a known score was computed again"
        assert scored.get(name, set()) == lazy_scored[name] - set(half[name])


def test_scoring_every_frame_selects_the_same_sets(tmp_path):
    lazy_sets, _ = mine(tmp_path / "a", plan())
    sets, scored = mine(tmp_path / "b", plan(), score_all=True)
    assert sets == lazy_sets
    assert scored["brisque"] == scored["ocr"] == set(range(N_FRAMES))


def test_new_scores_are_stored_only_for_the_filters_that_are_on(tmp_path):
    root = str(tmp_path / "cache")
    for run_id, filters in (("run-on", {"ocr": "f1"}), ("run-off", {})):
        spec = VideoCacheSpec(root=root, run_id=run_id, encoder_fingerprint="e",
                              filter_fingerprints=filters)
        p = local_test_pipeline()
        scores = [("ocr", "key-1", {3: 2, 5: 0})] if filters else []
        _ = p | beam.Create(scores) | StoreNewScores(spec)
        p.run().wait_until_finish()
    shards = sorted(glob.glob(f"{root}/*/*.parquet"))
    assert [s[len(root) + 1:] for s in shards] == ["ocr/run-on-00000-of-00001.parquet"]
    rows = pq.read_table(shards[0]).to_pylist()
    assert [(r["key"], decode_scores(r["value"])) for r in rows] == [("key-1", {3: 2, 5: 0})]


COMPUTED = collections.Counter()   # values the counting stand-ins computed, any thread
COMPUTED_LOCK = threading.Lock()


def computed(name):
    with COMPUTED_LOCK:
        COMPUTED[name] += 1
        if threading.current_thread() is not threading.main_thread():
            COMPUTED[f"{name} ahead"] += 1


class CountingBrightness(MeanBrightness):
    def score_normalised(self, frames):
        computed("brisque")
        return super().score_normalised(frames)


class CountingText(MarkedText):   # module-level: the lookahead's threads get pickled copies
    def text_chars(self, frame):
        computed("ocr")
        return super().text_chars(frame)


def runs_plan():
    """A shot with runs the gate rejects frame after frame (a blurred stretch, a captioned
    one) among clean frames: what the lookahead is for."""
    the_plan = plan()
    frames = [frame(40 if 4 <= i < 17 else 200, 30 if 24 <= i < 33 else 0)
              for i in range(N_FRAMES)]
    shot = the_plan.shots[0]
    embeddings = np.eye(N_FRAMES, dtype=np.float32)   # all frames far apart, but:
    embeddings[18] = embeddings[17]   # the first clean frame after the blur passes; the next
    shot = ShotFrames(video=shot.video, shot_index=0, start_frame=0, end_frame=N_FRAMES,
                      fps=25.0, frame_indices=list(range(N_FRAMES)), frames=frames,
                      embeddings=embeddings)   # is too close to it: scored ahead in vain
    return VideoPlan(the_plan.video, [shot], {}, the_plan.score_keys)


def mine_counted(tmp_path, the_plan, lookahead_threads):
    """Every output (sets, rejects with their details, new scores) and the counters."""
    COMPUTED.clear()
    gate = QualityGate(CountingBrightness(), 0.65, CountingText(), 10)
    dofn = MineFrameSets(threshold=1.0, set_size=3, gate_factory=lambda: gate,
                         staging_dir=str(tmp_path), lookahead_threads=lookahead_threads)._dofn
    dofn.setup()
    counters = collections.Counter()
    dofn.counts._inc = lambda name, n=1, **_: counters.update({name: n})   # the data's and the work's
    outputs = []
    for out in dofn.process(the_plan):
        if isinstance(out, beam.pvalue.TaggedOutput):
            outputs.append((out.tag, repr(out.value)))
        else:
            outputs.append(("set", out.set_name, tuple(out.frame_indices),
                            tuple(out.brisque_scores), tuple(out.text_chars)))
    dofn.teardown()
    return outputs, counters, dict(COMPUTED)


def test_scoring_ahead_decides_and_counts_as_one_frame_at_a_time(tmp_path):
    """The lookahead changes no output and no evaluation counter; what it scored in vain
    is counted as frame.<filter>_unused, so computed = evaluations + unused."""
    alone, alone_counts, alone_computed = mine_counted(tmp_path / "a", runs_plan(), 0)
    ahead, ahead_counts, ahead_computed = mine_counted(tmp_path / "b", runs_plan(), 2)
    assert ahead == alone
    rejects = [out[1] for out in ahead if out[0] == "rejects"]
    assert any("'blurry'" in r for r in rejects) and any("'text'" in r for r in rejects)
    assert {k: v for k, v in ahead_counts.items() if not k.endswith("_unused")} == alone_counts
    for name in ("brisque", "ocr"):
        assert alone_computed[name] == alone_counts[f"frame.{name}_evaluations"]
        assert ahead_computed[name] == (ahead_counts[f"frame.{name}_evaluations"]
                                        + ahead_counts[f"frame.{name}_unused"])
    assert alone_computed.get("brisque ahead", 0) == 0
    assert ahead_computed["brisque ahead"] >= 10
    # every text read off the caller's thread: ahead in a run of rejections, else alongside
    # the frame's BRISQUE
    assert ahead_computed["ocr ahead"] == ahead_computed["ocr"]
    # in vain: frame 18, scored ahead when the guess "rejected again" failed (both
    # filters), and frame 4, the first blurred one, whose text was read alongside its
    # BRISQUE while the gate was still accepting
    assert ahead_counts["frame.brisque_unused"] == 1 and ahead_counts["frame.ocr_unused"] == 2


class CallCountingBrightness(MeanBrightness):
    """Counts the calls and the frames of each: what a GPU pays per call."""
    def __init__(self):
        self.calls = []

    def score_normalised(self, frames):
        self.calls.append(len(frames))
        return super().score_normalised(frames)


def test_brisque_in_calls_of_many_frames_decides_as_one_frame_at_a_time(tmp_path):
    """Issue 43: where a BRISQUE call costs its launches (a GPU), the miner scores the
    frame the rule asks about and the next unknown frames of the shot in one call of
    `brisque_frames_per_call`. The same sets, rejects and scores as one frame at a time;
    the calls are counted; what was scored ahead and never asked is frame.brisque_unused,
    and it is kept for the cache (scored is scored)."""
    def run(folder, per_call, the_plan=None):
        scorer = CallCountingBrightness()
        gate = QualityGate(scorer, 0.65, MarkedText(), 10, brisque_frames_per_call=per_call)
        dofn = MineFrameSets(threshold=1.0, set_size=3, gate_factory=lambda: gate,
                             staging_dir=str(tmp_path / folder), lookahead_threads=2)._dofn
        dofn.setup()
        counters = collections.Counter()
        dofn.counts._inc = lambda name, n=1, **_: counters.update({name: n})   # the data's and the work's
        outputs, stored = [], {}
        for out in dofn.process(the_plan or runs_plan()):
            if isinstance(out, beam.pvalue.TaggedOutput):
                if out.tag == NEW_SCORES:
                    stored[out.value[0]] = out.value[2]
                else:
                    outputs.append((out.tag, repr(out.value)))
            else:
                outputs.append(("set", out.set_name, tuple(out.frame_indices), tuple(out.brisque_scores)))
        dofn.teardown()
        return outputs, counters, scorer.calls, stored

    one, one_counts, one_calls, one_stored = run("one", 1)
    many, many_counts, many_calls, many_stored = run("many", 256)
    assert many == one
    assert set(one_calls) == {1} and len(one_calls) == (one_counts["frame.brisque_evaluations"]
                                                       + one_counts["frame.brisque_unused"])
    assert many_calls == [N_FRAMES]          # the first question scores the whole shot at once
    assert many_counts["frame.brisque_evaluations"] == one_counts["frame.brisque_evaluations"]
    assert many_counts["frame.brisque_unused"] == N_FRAMES - one_counts["frame.brisque_evaluations"]
    assert set(many_stored["brisque"]) == set(range(N_FRAMES))
    assert all(many_stored["brisque"][n] == v for n, v in one_stored["brisque"].items())
    # calls of 16: the frames the rule reaches, in calls of at most 16, none twice
    _, _, calls16, stored16 = run("sixteen", 16)
    assert max(calls16) <= 16 and sum(calls16) == len(stored16["brisque"]) and len(calls16) > 1
    # frames whose scores are known are not scored again, and not counted as calls' frames
    known = {"brisque": {n: v for n, v in one_stored["brisque"].items() if n % 2 == 0}}
    warm = runs_plan()
    warm = VideoPlan(warm.video, warm.shots, known, warm.score_keys)
    again, _, calls_warm, stored_warm = run("warm", 256, warm)
    assert again == one and not set(stored_warm["brisque"]) & set(known["brisque"])
    assert sum(calls_warm) == N_FRAMES - len(known["brisque"])
