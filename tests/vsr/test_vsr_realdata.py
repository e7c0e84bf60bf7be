"""The public VSR data (../shared/realdata/vsr): the keep rule on the raw file gives exactly
the public validated file, item for item, and the release built from the raw file alone
carries it in compat/. Fails (does not skip) when the data is missing."""
import json
import os

import pyarrow.parquet as pq
import pytest

from pipelines import build
from pipelines.release.write.manifest import verify_manifest
from pipelines.vsr.annotations import parse_public_line
from pipelines.vsr.captions import CaptionParser
from pipelines.vsr.relations import RELATIONS
from pipelines.vsr.validation import AgreementRule, apply_vote_rules
from tests.paths import REALDATA as ALL_REALDATA

REALDATA = ALL_REALDATA / "vsr"
RAW, VALIDATED = REALDATA / "all_vsr_raw_data.jsonl", REALDATA / "all_vsr_validated_data.jsonl"
RELATIONS_USED = frozenset(RELATIONS) | {"congruent"}
PAPER_RULE = AgreementRule()   # at least 2 and at least 2/3 of the validators agree


def _lines(path):
    assert path.exists(), f"public VSR data not found at {path} (../shared/realdata)"
    return [line for line in path.read_text().splitlines() if line.strip()]


def _key(record):
    """An item as compared: every public field, worker ids as strings (the public files
    give integers; a release writes every id as a string, in compat/ as in Parquet),
    vote lists as lists."""
    votes = {k: [str(x) for x in (json.loads(v) if isinstance(v, str) else v)]
             for k, v in record.items() if k.startswith("vote_")}
    fields = {k: record[k] for k in ("image", "image_link", "caption", "label", "relation")}
    return json.dumps({**fields, "annotator_id": str(record["annotator_id"]), **votes},
                      sort_keys=True)


def test_keep_rule_on_the_raw_file_gives_the_validated_file():
    parser = CaptionParser(RELATIONS_USED)
    kept, unparsed = [], []
    for line in _lines(RAW):
        parsed = parse_public_line(line, parser, RELATIONS_USED)
        if not hasattr(parsed[0], "example_id"):
            unparsed.append(parsed)
            continue
        example, vote_true, vote_false = parsed
        true, false, _, _ = apply_vote_rules(example.annotator_id, vote_true, vote_false)
        agreeing = len(true if example.label == 1 else false)
        if PAPER_RULE.keeps(agreeing, len(true) + len(false)):
            kept.append(json.loads(line))
    assert unparsed == [], "every public caption names COCO categories and a listed relation"
    public = [json.loads(line) for line in _lines(VALIDATED)]
    assert len(kept) == len(public) == 10972
    assert sorted(map(_key, kept)) == sorted(map(_key, public))


def test_dropping_rule_breaking_votes_changes_the_kept_set():
    """Why the paper config counts writer votes as listed (pipelines/vsr/README.md)."""
    parser = CaptionParser(RELATIONS_USED)
    kept = 0
    for line in _lines(RAW):
        example, vote_true, vote_false = parse_public_line(line, parser, RELATIONS_USED)
        true, false, _, _ = apply_vote_rules(example.annotator_id, vote_true, vote_false,
                                             writer_votes="drop")
        agreeing = len(true if example.label == 1 else false)
        kept += PAPER_RULE.keeps(agreeing, len(true) + len(false))
    assert kept == 10742          # 230 fewer than the public 10,972 (pipelines/vsr/README.md)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    _lines(RAW)
    return build.build("vsr", ["--config", "pipelines/vsr/configs/paper.yaml", "--set", f"inputs.annotations=[{RAW}]",
                   "--output", str(tmp_path_factory.mktemp("out")), "--version", "1.0.0"])


def test_release_from_the_raw_file_alone(release):
    public = sorted(map(_key, (json.loads(x) for x in _lines(VALIDATED))))
    ours = [json.loads(x) for x in open(os.path.join(release, "compat", "all_vsr_validated_data.jsonl"))]
    assert sorted(map(_key, ours)) == public
    assert all(isinstance(x["vote_true_validator_id"], list) for x in ours)
    assert all(isinstance(i, str) for x in ours   # one type for ids across the release
               for i in [x["annotator_id"], *x["vote_true_validator_id"], *x["vote_false_validator_id"]])
    manifest = json.load(open(os.path.join(release, "MANIFEST.json")))
    assert manifest["counts"]["tables"]["examples"]["by_split"] == {"train": 7680, "dev": 1097,
                                                                     "test": 2195}
    assert manifest["leakage_check"]["passed"] is True
    assert manifest["counts"]["rejects"]["by_reason"]["low_agreement"] == 12809 - 10972
    agreement = manifest["figures"]["agreement"]
    assert round(agreement["all_agree_share"], 3) == 0.691            # §4.1: 69.1%
    assert agreement["all_agree_share"] == pytest.approx(8848 / 12809, abs=1e-12)
    assert agreement["kept"] == 10972 and agreement["examples"] == 12809
    assert agreement["kept_share"] == pytest.approx(10972 / 12809, abs=1e-12)   # 85.66% (§4.1: 85.6%)
    above = agreement["disagreement_by_relation"]["above"]                    # Figure 7
    assert above["examples"] == 435 and above["probability"] == pytest.approx(0.216015, abs=1e-6)
    assert manifest["stages"]["examples"]["example.in_from_annotations"] == 12809
    assert manifest["stages"]["validation"]["example.in"] == 12809
    assert agreement["vote_anomalies"] == {"conflicting_votes": 25, "duplicate_vote": 354,
                                           "writer_vote": 1700}
    assert verify_manifest(release) == []


def test_zero_shot_split_uses_parsed_concepts_and_never_shares_one(release):
    rows = pq.read_table(os.path.join(release, "parquet", "examples")).to_pylist()
    parts = {}
    for r in rows:
        assert r["caption"].startswith(f"The {r['subj']} ") and r["caption"].endswith(f" the {r['obj']}.")
        if r["zeroshot_split"]:
            for concept in (r["subj"], r["obj"]):
                parts.setdefault(concept, set()).add(r["zeroshot_split"])
    assert all(len(p) == 1 for p in parts.values())
    assert "ot dog" not in parts and "hot dog" in {r["subj"] for r in rows}
    for split in ("train", "dev", "test"):
        lines = [json.loads(x) for x in open(os.path.join(release, "compat", "splits", "zeroshot",
                                                          f"{split}.jsonl"))]
        assert {x["subj"] for x in lines} | {x["obj"] for x in lines} <= {
            c for c, p in parts.items() if p == {split}}


def test_compat_round_trip(release):
    """The compat file, ingested again as annotations (a second version beside the first),
    rebuilds the same release files, and the release notes see no row change."""
    compat = os.path.join(release, "compat")
    again = build.build("vsr", ["--config", "pipelines/vsr/configs/paper.yaml",
                    "--set", f"inputs.annotations=[{compat}/all_vsr_validated_data.jsonl]",
                    "--output", os.path.dirname(os.path.dirname(release)), "--version", "1.0.1"])
    notes = open(os.path.join(again, "RELEASE_NOTES.md")).read()
    assert "changes since 1.0.0" in notes
    assert notes.count("0 moved between splits, 0 added, 0 removed.") == notes.count("\n## ") - 1
    for rel in ["all_vsr_validated_data.jsonl"] + [f"splits/{s}/{p}.jsonl" for s in ("random", "zeroshot")
                                                   for p in ("train", "dev", "test")]:
        assert open(os.path.join(again, "compat", rel)).read() == open(os.path.join(compat, rel)).read(), rel
