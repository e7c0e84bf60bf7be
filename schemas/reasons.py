"""Reason codes of the library's stages: what any benchmark's rejects/ can hold.

A benchmark adds the codes of its own rules in pipelines/<benchmark>/reasons.py, which
re-exports these, so the vocabulary of a release is closed: `VOCABULARY` there.
"""

# input files and lines (every reader: transforms/io/lines.py and the manifests; the JSON
# rules of transforms/io/strict_json.py)
BAD_JSON = "bad_json"              # not JSON, not an object, nested too deep, a key named twice
BAD_ENCODING = "bad_encoding"      # bytes that are not UTF-8 (never published with U+FFFD), or a lone UTF-16 surrogate
NOT_A_FILE = "not_a_file"          # a path that exists but is not a regular file (a folder, a device)
MISSING_FIELD = "missing_field"
BAD_FIELD = "bad_field"            # wrong type, unknown split, unsafe empty name, NaN, an integer beyond int64
PATH_NOT_FOUND = "path_not_found"

# videos (transforms/video/)
DUPLICATE_VIDEO = "duplicate_video"  # same source + video_id (so the same set names) as an earlier line
DUPLICATE_VIDEO_CONTENT = "duplicate_video_content"  # same content (bytes, or decoded frames) as an earlier line of the same split
SAME_CONTENT_OTHER_SPLIT = "same_content_other_split"  # same content (bytes, or decoded frames) as an earlier line of another split (leakage)
UNREADABLE_VIDEO = "unreadable_video"
NO_FRAMES = "no_frames"
TRUNCATED_VIDEO = "truncated_video"  # decoded fewer frames than the container promises (decode.truncation_tolerance)
SHOT_TOO_SHORT = "shot_too_short"  # fewer decoded frames than one set needs

# still images (transforms/image/)
DUPLICATE_IMAGE_ID = "duplicate_image_id"  # another file/line gives the same safe image id
DUPLICATE_IMAGE = "duplicate_image"        # same bytes (sha256) as a kept image
UNREADABLE_IMAGE = "unreadable_image"      # cannot be read or decoded
TOO_MANY_PIXELS = "too_many_pixels"        # width x height (from the header) over static.max_pixels

# sampling (transforms/core/sampling.py)
NOT_SAMPLED = "not_sampled"        # frame/set of a complete set that sampling left out

# free text (transforms/io/free_text.py: every JSON reader and crowd answer row)
CONTROL_CHARACTER = "control_character"      # NUL or another control character (not tab, line feed, carriage return) in a text
FORMULA_TEXT = "formula_text"                # text beginning with =, +, -, @, tab or CR where a CSV publishes it verbatim
TOO_LONG = "too_long"                        # a text over free_text.MAX_TEXT_CHARS, or over a benchmark's own bound

# crowd answer files (transforms/crowd/answer_files.py)
MALFORMED_ROW = "malformed_row"              # a CSV row with the wrong number of fields, or not CSV
RUNAWAY_QUOTE = "runaway_quote"              # a CSV quote left open over later rows (those are read again)
# an answer whose worker saw something else than this build shows for its task, or of
# which nothing shows what the worker saw (transforms/crowd/shown.py)
STALE_ANSWER = "stale_answer"
# an assignment its requester rejected on Mechanical Turk (AssignmentStatus Rejected in the
# batch results file: transforms/crowd/mturk.py); never used, whatever it says
REJECTED_ASSIGNMENT = "rejected_assignment"

# COCO instances files (transforms/coco/instances.py)
MALFORMED_COCO = "malformed_coco"            # an instances file that is not COCO JSON: the whole file is dropped
BAD_COCO_RECORD = "bad_coco_record"          # an image/annotation entry without the fields or types it needs
DUPLICATE_COCO_IMAGE = "duplicate_coco_image"  # an image id listed twice (in one file or across files)
UNKNOWN_IMAGE = "unknown_image"              # an annotation / caption line naming an image id the COCO input lacks
UNKNOWN_CATEGORY = "unknown_category"        # an annotation whose category id is not one of the 80

# What a row of a crowd answer file (any benchmark's) can be rejected for by the library's
# readers (transforms/crowd/): each has a sentence for the worker who gave it
# (pipelines/crowd/worker_reasons.py), since a requester's approvals pass it on.
ANSWER_ROW = (BAD_JSON, BAD_ENCODING, MISSING_FIELD, BAD_FIELD, MALFORMED_ROW, RUNAWAY_QUOTE,
              CONTROL_CHARACTER, STALE_ANSWER, REJECTED_ASSIGNMENT)

VOCABULARY = (BAD_JSON, BAD_ENCODING, NOT_A_FILE, MISSING_FIELD, BAD_FIELD, PATH_NOT_FOUND,
              DUPLICATE_VIDEO, DUPLICATE_VIDEO_CONTENT, SAME_CONTENT_OTHER_SPLIT,
              UNREADABLE_VIDEO, NO_FRAMES, TRUNCATED_VIDEO, SHOT_TOO_SHORT, DUPLICATE_IMAGE_ID,
              DUPLICATE_IMAGE, UNREADABLE_IMAGE, TOO_MANY_PIXELS, NOT_SAMPLED, MALFORMED_ROW,
              RUNAWAY_QUOTE, STALE_ANSWER, REJECTED_ASSIGNMENT, MALFORMED_COCO, BAD_COCO_RECORD, DUPLICATE_COCO_IMAGE,
              UNKNOWN_IMAGE, UNKNOWN_CATEGORY, CONTROL_CHARACTER, FORMULA_TEXT, TOO_LONG)
