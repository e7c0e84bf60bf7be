"""Reason codes for rejects/: the whole vocabulary, so reports can list them all."""

# manifest lines
BAD_JSON = "bad_json"
MISSING_FIELD = "missing_field"
BAD_FIELD = "bad_field"            # wrong type, unknown split, unsafe empty name
PATH_NOT_FOUND = "path_not_found"
DUPLICATE_VIDEO = "duplicate_video"  # same source + video_id as an earlier line

# videos
UNREADABLE_VIDEO = "unreadable_video"
NO_FRAMES = "no_frames"

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
TOO_FEW_NEIGHBOURS = "too_few_neighbours"  # the database holds fewer than k other images

ALL = (BAD_JSON, MISSING_FIELD, BAD_FIELD, PATH_NOT_FOUND, DUPLICATE_VIDEO, UNREADABLE_VIDEO, NO_FRAMES,
       SHOT_TOO_SHORT, TOO_SIMILAR, BLURRY, TEXT, UNFINISHED_SET, NOT_SAMPLED,
       DUPLICATE_IMAGE_ID, DUPLICATE_IMAGE, UNREADABLE_IMAGE, TOO_FEW_NEIGHBOURS)

# crowd rounds (describe / retrieve, ImageCoDe §3.2-3.3); see schemas/crowd.py
WRONG_SET_SIZE = "wrong_set_size"            # a set without exactly SET_SIZE images cannot enter the rounds
MALFORMED_ROW = "malformed_row"              # a CSV row with the wrong number of fields
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

ALL = ALL + (WRONG_SET_SIZE, MALFORMED_ROW, UNKNOWN_SET, INDEX_OUT_OF_RANGE, UNKNOWN_DESCRIPTION,
             DUPLICATE_DESCRIPTION, DUPLICATE_RETRIEVAL, SELF_RETRIEVAL, SET_MISMATCH, NO_RETRIEVAL,
             RETRIEVER_WRONG, TOO_FEW_CORRECT)
