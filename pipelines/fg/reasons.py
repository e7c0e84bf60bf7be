"""FG's (Chen et al., SIGIR '23) own reason codes, beside the library's (re-exported here,
so a stage of this benchmark names every code as `reasons.X`)."""
from schemas.reasons import *  # noqa: F401,F403 - the library's codes are part of this vocabulary
from schemas.reasons import VOCABULARY as LIBRARY_VOCABULARY

# inputs (F0)
NO_IMAGE = "no_image"                        # a captioned target whose image is not among inputs.images (or did not embed)
NO_CAPTIONS = "no_captions"                  # a target image without captions in inputs.captions
NO_EMBEDDING = "no_embedding"                # inputs.image_embeddings has no vector for an image
TARGET_IN_POOL = "target_in_pool"            # a pool entry with a target's id: the target itself is in the pool (§3.1.1)
SAME_AS_TARGET = "same_as_target"            # a pool image whose decoded pixels are a target's: the target under another id

# new pool (F6)
ALREADY_IN_POOL = "already_in_pool"          # a membership of an image already in the new pool through another S_t

# renovation (F7-F14)
NOT_COARSE = "not_coarse"                    # F7: CLIP ranks the caption's own image first: fine-grained, kept as is
NO_PROMPT = "no_prompt"                      # F9: no Table 1 template applies (no noun for 3-5, templates 1-2 off)
NO_DETAIL = "no_detail"                      # F10: no detail for a prompt (the details file has none, or it is empty)
UNKNOWN_PROMPT = "unknown_prompt"            # F10/F13: a details/merged line for a prompt this build did not make
DUPLICATE_LINE = "duplicate_line"            # F10/F13/F15: a second line for the same prompt or caption
CLIPSCORE_NOT_HIGHER = "clipscore_not_higher"  # F11/F14: CLIPScore not above the original caption's
MERGE_FAILED = "merge_failed"                # F13: the merger gave no sentence (or the merged file has none)
NO_SPLIT = "no_split"                        # F12: a fine-grained caption the rules cannot split into <d'_c, d'_g>
NOT_BEST = "not_best"                        # F14: a surviving candidate with a lower CLIPScore than the picked one
NO_CANDIDATE = "no_candidate"                # F14: a coarse caption with no surviving candidate: it stays unchanged

# manual correction (F15)
UNKNOWN_CAPTION = "unknown_caption"          # a correction for a caption this build did not renovate
STALE_CORRECTION = "stale_correction"        # a correction whose model_text is not the renovated text of this build

VOCABULARY = LIBRARY_VOCABULARY + (NO_IMAGE, NO_CAPTIONS, NO_EMBEDDING, TARGET_IN_POOL, SAME_AS_TARGET,
                                   ALREADY_IN_POOL, NOT_COARSE, NO_PROMPT, NO_DETAIL,
                                   UNKNOWN_PROMPT, DUPLICATE_LINE, CLIPSCORE_NOT_HIGHER,
                                   MERGE_FAILED, NO_SPLIT, NOT_BEST, NO_CANDIDATE,
                                   UNKNOWN_CAPTION, STALE_CORRECTION)
