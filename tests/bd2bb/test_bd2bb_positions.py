"""Target positions balanced per split by construction (pipelines/bd2bb/positions.py)."""
import collections

from pipelines.bd2bb.decoys import shuffle
from pipelines.bd2bb.positions import balance, balanced_positions, position_report
from pipelines.bd2bb.records import BD2BBTuple, Datapoint, Sample, TARGET


def _sample(i: int, split: str, hard: bool = False) -> Sample:
    sid = f"s{i:04d}"
    endings, types, label = shuffle(0, sid, "T", ["L1", "L2"], ["V1", "V2"])
    d = Datapoint(BD2BBTuple(sid, "1.jpg", "be happy", "smile"))
    return Sample(sid, d, tuple(endings), tuple(types), label, split, hard)


def _counts(labels):
    c = collections.Counter(labels)
    return [c[k] for k in range(5)]


def test_every_split_the_hard_subset_and_the_whole_are_balanced():
    samples = ([_sample(i, "train") for i in range(21)] + [_sample(i, "val") for i in range(21, 63)]
               + [_sample(i, "test", hard=i % 3 == 0) for i in range(63, 107)])
    placed = balance(7, samples)
    groups = collections.defaultdict(list)
    for s in placed:
        groups[s.split].append(s.label)
        if s.hard_test:
            groups["hard"].append(s.label)
        assert s.endings[s.label] == "T" and s.ending_types[s.label] == TARGET
    for name, labels in list(groups.items()) + [("all", [s.label for s in placed])]:
        counts = _counts(labels)
        assert max(counts) - min(counts) <= 1, (name, counts)
    report = position_report((s.split, s.hard_test, s.label) for s in placed)
    assert report["per_split"]["hard_test"] == _counts(groups["hard"]) and report["n"] == 107


def test_the_decoys_keep_their_shuffled_order_and_the_input_order_does_not_matter():
    samples = [_sample(i, "train") for i in range(12)]
    placed = {s.sample_id: s for s in balance(3, samples)}
    for s in samples:
        decoys = [e for e in s.endings if e != "T"]
        assert [e for e in placed[s.sample_id].endings if e != "T"] == decoys
    assert balanced_positions(3, samples[::-1]) == balanced_positions(3, samples)
    assert balanced_positions(4, samples) != balanced_positions(3, samples)
