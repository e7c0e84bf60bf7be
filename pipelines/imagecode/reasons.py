"""ImageCoDe's (Krojer et al. 2022) own reason codes, beside the library's (re-exported here, so a stage of
this benchmark names every code as `reasons.X`)."""
from schemas.reasons import *  # noqa: F401,F403 - the library's codes are part of this vocabulary
from schemas.reasons import VOCABULARY as LIBRARY_VOCABULARY

# frames and sets (§3.1)
TOO_SIMILAR = "too_similar"        # within the distance threshold of a selected frame
BLURRY = "blurry"                  # BRISQUE above threshold
TEXT = "text"                      # too much OCR text
UNFINISHED_SET = "unfinished_set"  # frame was in a set the shot ended before it filled
TOO_FEW_NEIGHBOURS = "too_few_neighbours"  # the database holds fewer than k other images

# the crowd rounds (§3.2-3.3); see crowd/records.py
WRONG_SET_SIZE = "wrong_set_size"            # a set without exactly SET_SIZE images cannot enter the rounds
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

# What a describer's or retriever's row can be rejected for beyond the library's readers
# (schemas.reasons.ANSWER_ROW): each has a sentence for the worker (pipelines/crowd/worker_reasons.py)
CROWD_ANSWERS = (UNKNOWN_SET, INDEX_OUT_OF_RANGE, UNKNOWN_DESCRIPTION, DUPLICATE_DESCRIPTION,
                 DUPLICATE_RETRIEVAL, SELF_RETRIEVAL, SET_MISMATCH, NO_RETRIEVAL, RETRIEVER_WRONG,
                 TOO_FEW_CORRECT)
VOCABULARY = LIBRARY_VOCABULARY + (TOO_SIMILAR, BLURRY, TEXT, UNFINISHED_SET,
                                   TOO_FEW_NEIGHBOURS, WRONG_SET_SIZE, UNKNOWN_SET,
                                   INDEX_OUT_OF_RANGE, UNKNOWN_DESCRIPTION,
                                   DUPLICATE_DESCRIPTION, DUPLICATE_RETRIEVAL, SELF_RETRIEVAL,
                                   SET_MISMATCH, NO_RETRIEVAL, RETRIEVER_WRONG,
                                   TOO_FEW_CORRECT)
