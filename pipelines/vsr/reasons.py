"""VSR's (Liu et al. 2023) own reason codes, beside the library's (re-exported here, so a stage of
this benchmark names every code as `reasons.X`)."""
from schemas.reasons import *  # noqa: F401,F403 - the library's codes are part of this vocabulary
from schemas.reasons import VOCABULARY as LIBRARY_VOCABULARY

# concept pairs (§3.1)
MULTIPLE_INSTANCES = "multiple_instances"    # (image, concept): more than one instance, or a crowd region
SMALL_INSTANCE = "small_instance"            # (image, concept): instance area below sampling.min_area
FEW_CONCEPTS = "too_few_concepts"            # an image with fewer than two eligible concepts: it enters no pool
POOL_EXHAUSTED = "pool_exhausted"            # a draw of a concept pair whose images were all used by earlier draws
UNCAPTIONED_PAIR = "uncaptioned_pair"        # a sampled pair that got no accepted writer answer

# writer and validator rounds (§3.2-§3.4); see README.md for the rule behind each
UNKNOWN_PAIR = "unknown_pair"                # writer output for a pair id this build did not sample
UNKNOWN_EXAMPLE = "unknown_example"          # a vote / extra label for an example id that was not ingested
RELATION_NOT_IN_LIST = "relation_not_in_list"  # a relation outside Table 1 (and captions.extra_relations)
CAPTION_UNPARSED = "caption_unparsed"        # no single "The <concept> (is) <relation> the <concept>." reading
RELATION_MISMATCH = "relation_mismatch"      # the caption's relation differs from the relation field
DUPLICATE_CAPTION = "duplicate_caption"      # a second writer answer for the same pair
DUPLICATE_EXAMPLE = "duplicate_example"      # the same (image, caption) twice in the annotations
DUPLICATE_VOTE = "duplicate_vote"            # the same validator twice in one vote list / vote file
CONFLICTING_VOTES = "conflicting_votes"      # a validator in both the True and the False list of an example
WRITER_VOTE = "writer_vote"                  # the caption's writer voting on it
NO_VOTES = "no_votes"                        # an example without any counted vote
LOW_AGREEMENT = "low_agreement"              # fewer than 2, or under 2/3, of the validators agree (§3.2, §4.1)
CONCEPTS_ACROSS_SPLITS = "concepts_across_splits"  # zero-shot: subject and object fell into different parts

# What a writer's, validator's or extra label's row can be rejected for beyond the
# library's readers (schemas.reasons.ANSWER_ROW): each has a sentence for the worker
# (pipelines/crowd/worker_reasons.py)
CROWD_ANSWERS = (UNKNOWN_PAIR, UNKNOWN_EXAMPLE, RELATION_NOT_IN_LIST, DUPLICATE_CAPTION)
VOCABULARY = LIBRARY_VOCABULARY + (MULTIPLE_INSTANCES, SMALL_INSTANCE, FEW_CONCEPTS,
                                   POOL_EXHAUSTED, UNCAPTIONED_PAIR, UNKNOWN_PAIR,
                                   UNKNOWN_EXAMPLE, RELATION_NOT_IN_LIST, CAPTION_UNPARSED,
                                   RELATION_MISMATCH, DUPLICATE_CAPTION, DUPLICATE_EXAMPLE,
                                   DUPLICATE_VOTE, CONFLICTING_VOTES, WRITER_VOTE, NO_VOTES,
                                   LOW_AGREEMENT, CONCEPTS_ACROSS_SPLITS)
