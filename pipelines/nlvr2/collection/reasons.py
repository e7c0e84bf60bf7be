"""Reject reasons of NLVR2's collection stages (S1-S9), to be joined into the benchmark's
vocabulary (pipelines/nlvr2/reasons.py). The library's codes (schemas.reasons: bad_json,
missing_field, bad_field, unreadable_image, ...) are used as they are."""

# S2 search results
UNKNOWN_QUERY = "unknown_query"                # a search result for a query S1 did not generate
DUPLICATE_RESULT = "duplicate_result"          # the same (query, rank) twice in the results
NO_SIMILAR_IMAGES = "no_similar_images"        # a result without similar images: no set (App. B)
BEYOND_SEARCH_CAP = "beyond_search_cap"        # after 60 results / 30 sets / 5 misses in a row (App. B)
# S3 automatic pruning (App. B)
SEEN_IN_EARLIER_SET = "seen_in_earlier_set"    # an image (URL or file) of an earlier set of the query
TOO_SMALL = "too_small"                        # smaller than 200x200
DUPLICATE_IN_SET = "duplicate_in_set"          # the same bytes as an earlier image of the set
TOO_FEW_IMAGES = "too_few_images"              # a set left with fewer than 8 images (S3, S4, S5)
# crowd rounds: bad answer rows (any round)
UNKNOWN_ITEM = "unknown_item"                  # an answer for a set, image, task or example not in the round
BAD_ANSWER = "bad_answer"                      # a value outside the round's choices
DUPLICATE_ANSWER = "duplicate_answer"          # a second answer for the same item (and worker)
UNANSWERED = "unanswered"                      # an item of a round without an answer
# S4 crowd pruning round 1 (§3.1)
UNLOADABLE = "unloadable"
INAPPROPRIATE = "inappropriate"
ARTWORK_OR_COLLAGE = "artwork_or_collage"
NO_SYNSET_INSTANCE = "no_synset_instance"
# S5 crowd pruning round 2 (§3.1, Table 2)
CROWD_DUPLICATE = "crowd_duplicate"            # marked a duplicate of another image of the set
TOO_FEW_INTERESTING = "too_few_interesting"    # a set with fewer than 3 interesting images
BEYOND_TOP_IMAGES = "beyond_top_images"        # not among the top 8 by interestingness, similarity
# S7 writing, S8 validation (§3.2, §3.3)
BAD_SELECTION = "bad_selection"                # a writer selection that is not 2 distinct pairs of the 4
REPORTED = "reported"                          # the validator reported the sentence
VALIDATION_DISAGREES = "validation_disagrees"  # the judgement differs from the writer's selection
# S9 extra validation (§3.4); the removal at >= 2 disagreeing is the paper's rules' stage
# (reasons.EXTRA_VALIDATION_DISAGREES), for collected and released examples alike
SURPLUS_JUDGEMENT = "surplus_judgement"        # an extra judgement beyond the 4 of an example

# What a crowd round's answer row can be rejected for beyond the library's readers
# (schemas.reasons.ANSWER_ROW): each has a sentence for the worker (pipelines/crowd/worker_reasons.py)
CROWD_ANSWERS = (UNKNOWN_ITEM, BAD_ANSWER, DUPLICATE_ANSWER, BAD_SELECTION)
COLLECTION_REASONS = (UNKNOWN_QUERY, DUPLICATE_RESULT, NO_SIMILAR_IMAGES, BEYOND_SEARCH_CAP,
                      SEEN_IN_EARLIER_SET, TOO_SMALL, DUPLICATE_IN_SET, TOO_FEW_IMAGES,
                      UNKNOWN_ITEM, BAD_ANSWER, DUPLICATE_ANSWER, UNANSWERED, UNLOADABLE,
                      INAPPROPRIATE, ARTWORK_OR_COLLAGE, NO_SYNSET_INSTANCE, CROWD_DUPLICATE,
                      TOO_FEW_INTERESTING, BEYOND_TOP_IMAGES, BAD_SELECTION, REPORTED,
                      VALIDATION_DISAGREES, SURPLUS_JUDGEMENT)
