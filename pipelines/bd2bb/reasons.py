"""BD2BB's (Pezzelle et al. 2020) own reason codes, beside the library's (re-exported here, so a stage of
this benchmark names every code as `reasons.X`)."""
from schemas.reasons import *  # noqa: F401,F403 - the library's codes are part of this vocabulary
from schemas.reasons import VOCABULARY as LIBRARY_VOCABULARY

# §3-§4, A.1, A.3; see tuple_filters.py
DUPLICATE_TUPLE = "duplicate_tuple"          # §4.1: same COCO image, intention, action (normalised), or same id, as another line
NONSENSE = "nonsense"                        # §3.1: random character sequences
NOT_ENGLISH = "not_english"                  # §3.1: too few English words, or identified as another language
# TOO_LONG (the library's): also an intention or action longer than filters.max_*_chars (ours)
SHORT_INTENTION = "short_intention"          # A.1: intention of fewer than 5 tokens
NO_PARSE = "no_parse"                        # the CoNLL-U file holds no parse of the action
BAD_PARSE = "bad_parse"                      # a malformed CoNLL-U sentence (file:line), and the tuples of its action
NO_MAIN_VERB = "no_main_verb"                # §3.2: the parse gives no main verb (code1), so no codes
NO_NOUN_OR_PRONOUN = "no_noun_or_pronoun"    # §3.1: the action has neither a noun nor a pronoun
NO_CAPTIONS = "no_captions"                  # the image has no COCO captions to check against
MENTIONS_IMAGE_ENTITY = "mentions_image_entity"  # A.1: intention names a noun seen > 1 in the captions
CLUSTER_DROPPED = "cluster_dropped"          # §3.2 / A.3: reviewers dropped the action's topic cluster
ACTION_DROPPED = "action_dropped"            # §3.2: reviewers removed the action from its cluster
NO_DECOYS = "no_decoys"                      # §4 fn. 7: not all four decoys could be found

VOCABULARY = LIBRARY_VOCABULARY + (DUPLICATE_TUPLE, NONSENSE, NOT_ENGLISH,
                                   SHORT_INTENTION, NO_PARSE, BAD_PARSE, NO_MAIN_VERB,
                                   NO_NOUN_OR_PRONOUN, NO_CAPTIONS, MENTIONS_IMAGE_ENTITY,
                                   CLUSTER_DROPPED, ACTION_DROPPED, NO_DECOYS)
