"""NLVR2's (Suhr et al. 2019) own reason codes, beside the library's (re-exported here, so a
stage of this benchmark names every code as `reasons.X`)."""
from schemas.reasons import *  # noqa: F401,F403 - the library's codes are part of this vocabulary
from schemas.reasons import VOCABULARY as LIBRARY_VOCABULARY

from pipelines.nlvr2.collection.reasons import COLLECTION_REASONS, CROWD_ANSWERS  # noqa: F401 - the rounds' answer-row codes

# --- reading released files (PUBLIC=; stage `public`, level line) ----------------------
# The library's bad_json / bad_encoding / missing_field / bad_field cover lines that are not
# a JSON object with the public keys; these name what is wrong with one that is.
BAD_IDENTIFIER = "bad_identifier"          # not `split-set-pair-sentence` (records.IDENTIFIER)
BAD_LABEL = "bad_label"                    # label / a judgement not the string "True" or "False"
LABEL_NOT_VALIDATION = "label_not_validation"  # not one writer-time judgement, or label != it (§3.3)
BAD_WORKER = "bad_worker"                  # writer or a judging worker id not a non-empty string
BAD_DIRECTORY = "bad_directory"            # train without an integer `directory`, or another split with one
UNKNOWN_KEY = "unknown_key"                # a key outside compat.PUBLIC_KEYS (+ directory)
DUPLICATE_IDENTIFIER = "duplicate_identifier"  # the identifier of an earlier line (stage identifiers)
PAIR_URLS_DIFFER = "pair_urls_differ"      # a (split, set, pair) whose sentences show other URLs (stage pairs)

# --- the paper's rules on examples (stage paper_rules; rejects only with rules.enforce) --
EXTRA_VALIDATION_DISAGREES = "extra_validation_disagrees"  # >= 2 extra judgements disagree (§3.4)
EXTRA_JUDGEMENTS_COUNT = "extra_judgements_count"  # a dev/test example without exactly 4 extra (§3.4)
GROUP_LABELS = "group_labels"              # a (set, sentence) group with > 2 True or > 2 False (§3.2)

# --- the collection stages S1-S9 (pipelines/nlvr2/collection/collect.py) ------------------------
COLLECTION = COLLECTION_REASONS

PUBLIC = (BAD_IDENTIFIER, BAD_LABEL, LABEL_NOT_VALIDATION, BAD_WORKER, BAD_DIRECTORY, UNKNOWN_KEY,
          DUPLICATE_IDENTIFIER, PAIR_URLS_DIFFER)
PAPER_RULES = (EXTRA_VALIDATION_DISAGREES, EXTRA_JUDGEMENTS_COUNT, GROUP_LABELS)

VOCABULARY = LIBRARY_VOCABULARY + PUBLIC + PAPER_RULES + COLLECTION
