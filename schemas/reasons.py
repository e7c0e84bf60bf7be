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

ALL = (BAD_JSON, MISSING_FIELD, BAD_FIELD, PATH_NOT_FOUND, DUPLICATE_VIDEO, UNREADABLE_VIDEO, NO_FRAMES,
       SHOT_TOO_SHORT, TOO_SIMILAR, BLURRY, TEXT, UNFINISHED_SET, NOT_SAMPLED)
