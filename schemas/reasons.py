"""Reason codes for rejects/: the whole vocabulary, so reports can list them all."""

# manifest lines
BAD_JSON = "bad_json"
BAD_ENCODING = "bad_encoding"      # a line whose bytes are not UTF-8 (never published with U+FFFD)
NOT_A_FILE = "not_a_file"          # a path that exists but is not a regular file (a folder, a device)
MISSING_FIELD = "missing_field"
BAD_FIELD = "bad_field"            # wrong type, unknown split, unsafe empty name
PATH_NOT_FOUND = "path_not_found"
DUPLICATE_VIDEO = "duplicate_video"  # same source + video_id (so the same set names) as an earlier line
DUPLICATE_VIDEO_CONTENT = "duplicate_video_content"  # same bytes (sha256) as an earlier line of the same split
SAME_CONTENT_OTHER_SPLIT = "same_content_other_split"  # same bytes as an earlier line of another split (leakage)

# videos
UNREADABLE_VIDEO = "unreadable_video"
NO_FRAMES = "no_frames"
TRUNCATED_VIDEO = "truncated_video"  # decoded fewer frames than the container promises (decode.truncation_tolerance)

# shots
SHOT_TOO_SHORT = "shot_too_short"  # fewer decoded frames than one set needs

# frames
TOO_SIMILAR = "too_similar"        # within the distance threshold of a selected frame
BLURRY = "blurry"                  # BRISQUE above threshold
TEXT = "text"                      # too much OCR text
UNFINISHED_SET = "unfinished_set"  # frame was in a set the shot ended before it filled
NOT_SAMPLED = "not_sampled"        # frame/set of a complete set that sampling left out

# still images (static sets)
DUPLICATE_IMAGE_ID = "duplicate_image_id"  # another file/line gives the same safe image id
DUPLICATE_IMAGE = "duplicate_image"        # same bytes (sha256) as a kept image
UNREADABLE_IMAGE = "unreadable_image"      # cannot be read or decoded
TOO_MANY_PIXELS = "too_many_pixels"        # width x height (from the header) over static.max_pixels
TOO_FEW_NEIGHBOURS = "too_few_neighbours"  # the database holds fewer than k other images

ALL = (BAD_JSON, BAD_ENCODING, NOT_A_FILE, MISSING_FIELD, BAD_FIELD, PATH_NOT_FOUND, DUPLICATE_VIDEO,
       DUPLICATE_VIDEO_CONTENT, SAME_CONTENT_OTHER_SPLIT, UNREADABLE_VIDEO, NO_FRAMES, TRUNCATED_VIDEO,
       SHOT_TOO_SHORT, TOO_SIMILAR, BLURRY, TEXT, UNFINISHED_SET, NOT_SAMPLED,
       DUPLICATE_IMAGE_ID, DUPLICATE_IMAGE, UNREADABLE_IMAGE, TOO_MANY_PIXELS, TOO_FEW_NEIGHBOURS)

# crowd rounds (describe / retrieve, ImageCoDe §3.2-3.3); see pipelines/imagecode/rounds_schema.py
WRONG_SET_SIZE = "wrong_set_size"            # a set without exactly SET_SIZE images cannot enter the rounds
MALFORMED_ROW = "malformed_row"              # a CSV row with the wrong number of fields, or not CSV
RUNAWAY_QUOTE = "runaway_quote"              # a CSV quote left open over later rows (those are read again)
UNKNOWN_SET = "unknown_set"                  # a row names a set that is not in the rounds
INDEX_OUT_OF_RANGE = "index_out_of_range"    # target / guessed index outside 0..SET_SIZE-1
UNKNOWN_DESCRIPTION = "unknown_description"  # a retrieval for a description id never ingested
DUPLICATE_DESCRIPTION = "duplicate_description"  # same set, target and worker as another row
DUPLICATE_RETRIEVAL = "duplicate_retrieval"  # the same worker retrieved the same description again
SELF_RETRIEVAL = "self_retrieval"            # the describer retrieved their own description
SET_MISMATCH = "set_mismatch"                # a retrieval names another set than its description
NO_RETRIEVAL = "no_retrieval"                # a description nobody retrieved
RETRIEVER_WRONG = "retriever_wrong"          # train: the retriever did not find the target
TOO_FEW_CORRECT = "too_few_correct"          # valid/test: fewer than 2 retrievers found the target

ALL = ALL + (WRONG_SET_SIZE, MALFORMED_ROW, RUNAWAY_QUOTE, UNKNOWN_SET, INDEX_OUT_OF_RANGE, UNKNOWN_DESCRIPTION,
             DUPLICATE_DESCRIPTION, DUPLICATE_RETRIEVAL, SELF_RETRIEVAL, SET_MISMATCH, NO_RETRIEVAL,
             RETRIEVER_WRONG, TOO_FEW_CORRECT)

# VSR (Liu et al. 2023, §3.1-§3.4); see pipelines/vsr/README.md for the rule behind each
MALFORMED_COCO = "malformed_coco"            # an instances file that is not COCO JSON: the whole file is dropped
BAD_COCO_RECORD = "bad_coco_record"          # an image/annotation entry without the fields or types it needs
DUPLICATE_COCO_IMAGE = "duplicate_coco_image"  # an image id listed twice (in one file or across files)
UNKNOWN_IMAGE = "unknown_image"              # an annotation / caption line naming an image id the COCO input lacks
UNKNOWN_CATEGORY = "unknown_category"        # an annotation whose category id is not one of the 80
MULTIPLE_INSTANCES = "multiple_instances"    # (image, concept): more than one instance, or a crowd region
SMALL_INSTANCE = "small_instance"            # (image, concept): instance area below sampling.min_area
POOL_EXHAUSTED = "pool_exhausted"            # a draw of a concept pair whose images were all used by earlier draws
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
FEW_CONCEPTS = "too_few_concepts"            # an image with fewer than two eligible concepts: it enters no pool
UNCAPTIONED_PAIR = "uncaptioned_pair"        # a sampled pair that got no accepted writer answer

ALL = ALL + (MALFORMED_COCO, BAD_COCO_RECORD, DUPLICATE_COCO_IMAGE, UNKNOWN_IMAGE, UNKNOWN_CATEGORY,
             MULTIPLE_INSTANCES, SMALL_INSTANCE, POOL_EXHAUSTED, UNKNOWN_PAIR, UNKNOWN_EXAMPLE,
             RELATION_NOT_IN_LIST, CAPTION_UNPARSED, RELATION_MISMATCH, DUPLICATE_CAPTION,
             DUPLICATE_EXAMPLE, DUPLICATE_VOTE, CONFLICTING_VOTES, WRITER_VOTE, NO_VOTES,
             LOW_AGREEMENT, CONCEPTS_ACROSS_SPLITS, FEW_CONCEPTS, UNCAPTIONED_PAIR)

# BD2BB (Pezzelle et al. 2020, §3-§4, A.1, A.3); see pipelines/bd2bb/tuple_filters.py
DUPLICATE_TUPLE = "duplicate_tuple"          # §4.1: same COCO image, intention, action (normalised), or same id, as another line
NONSENSE = "nonsense"                        # §3.1: random character sequences
NOT_ENGLISH = "not_english"                  # §3.1: too few English words, or identified as another language
TOO_LONG = "too_long"                        # an intention or action longer than filters.max_*_chars (ours)
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

ALL = ALL + (DUPLICATE_TUPLE, TOO_LONG, NONSENSE, NOT_ENGLISH, SHORT_INTENTION, NO_PARSE, BAD_PARSE,
             NO_MAIN_VERB, NO_NOUN_OR_PRONOUN, NO_CAPTIONS, MENTIONS_IMAGE_ENTITY, CLUSTER_DROPPED, ACTION_DROPPED, NO_DECOYS)
