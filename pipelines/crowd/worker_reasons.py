"""What a crowd worker is told about an answer a build did not use, and what that means for
their pay: one verdict and one plain sentence per reason code, in one table.

The reason codes are the build's own (schemas/reasons.py and each benchmark's reasons.py):
precise for the person rebuilding, meaningless to a worker. `approvals`
(pipelines/crowd/approvals.py) turns the rejects of a results file's rows into the
file a requester uploads to Mechanical Turk, and there the worker reads the sentence:

    APPROVE   the work was done as asked; what kept it out of the release is the build's
              or the requester's doing (the task changed, the same task was posted twice)
    PENDING   not judged yet (a description no retriever has tried), or not judgeable
              from this build (a task it does not have, a row the file garbled):
              neither approved nor rejected, the requester decides later
    REJECT    the answer broke the task's rules or is not one the page could give

A worker is never rejected for something the page offered (tests/crowd/test_rounds.py)
nor for what the build or requester did. tests/crowd/test_approvals.py checks that every
code an answer row can be rejected for (schemas.reasons.ANSWER_ROW and the crowd
benchmarks' CROWD_ANSWERS) has its line here.
"""
from __future__ import annotations

from typing import Dict, NamedTuple

APPROVE, PENDING, REJECT = "approve", "pending", "reject"


class ForTheWorker(NamedTuple):
    verdict: str    # APPROVE, PENDING or REJECT
    sentence: str   # what the worker (or, pending, the requester) reads


FOR_THE_WORKER: Dict[str, ForTheWorker] = {
    # the library's readers of any answer file (schemas.reasons.ANSWER_ROW)
    "bad_json": ForTheWorker(PENDING, "The results file garbled this answer; it is checked by hand."),
    "bad_encoding": ForTheWorker(PENDING, "The results file garbled this answer; it is checked by hand."),
    "malformed_row": ForTheWorker(PENDING, "The results file garbled this answer; it is checked by hand."),
    "runaway_quote": ForTheWorker(PENDING, "The results file garbled this answer; it is checked by hand."),
    "missing_field": ForTheWorker(REJECT, "The answer left a question of the task empty."),
    "bad_field": ForTheWorker(REJECT, "The answer held a value the task's page cannot give, "
                                      "or named another worker or task than the one posted."),
    "control_character": ForTheWorker(REJECT, "The answer held invisible control characters "
                                              "that no one types."),
    "stale_answer": ForTheWorker(APPROVE, "The task was changed after you saw it, so your answer "
                                          "is not used; that was our doing, not yours."),
    "rejected_assignment": ForTheWorker(REJECT, "This assignment was already rejected."),
    # ImageCoDe (pipelines/imagecode/reasons.py CROWD_ANSWERS)
    "unknown_set": ForTheWorker(PENDING, "This answer names an image set the current build does not "
                                         "have; it is judged with the build that posted it."),
    "index_out_of_range": ForTheWorker(REJECT, "The answer names an image the set does not have."),
    "unknown_description": ForTheWorker(PENDING, "This answer is about a description the current build "
                                                 "does not have; it is judged with the build that posted it."),
    "duplicate_description": ForTheWorker(APPROVE, "You described this image twice because we posted it "
                                                   "to you twice; the first description is used."),
    "duplicate_retrieval": ForTheWorker(APPROVE, "You were shown this description twice; the first "
                                                 "answer is used."),
    "self_retrieval": ForTheWorker(APPROVE, "You were shown your own description, which a retriever's "
                                            "answer cannot judge; that was our doing."),
    "set_mismatch": ForTheWorker(REJECT, "The answer names another image set than the description "
                                         "it was posted with."),
    "no_retrieval": ForTheWorker(PENDING, "No one has yet tried to find the image from your "
                                          "description; it is judged after they have."),
    "retriever_wrong": ForTheWorker(REJECT, "The person who read your description could not find the "
                                            "image it was written for, so it does not tell that image "
                                            "apart from the others."),
    "too_few_correct": ForTheWorker(REJECT, "Fewer than two of the three people who read your "
                                            "description found the image it was written for, so it "
                                            "does not tell that image apart from the others."),
    # NLVR2 (pipelines/nlvr2/collection/reasons.py CROWD_ANSWERS)
    "unknown_item": ForTheWorker(PENDING, "This answer is about a task the current build does not have; "
                                          "it is judged with the build that posted it."),
    "bad_answer": ForTheWorker(REJECT, "The answer is none of the choices the task offered."),
    "duplicate_answer": ForTheWorker(APPROVE, "This task was answered more than once, as we asked; "
                                              "the first answer is used."),
    "bad_selection": ForTheWorker(REJECT, "The answer does not select exactly two of the four pairs."),
    # VSR (pipelines/vsr/reasons.py CROWD_ANSWERS)
    "unknown_pair": ForTheWorker(PENDING, "This answer is about an image pair the current build does not "
                                          "have; it is judged with the build that posted it."),
    "unknown_example": ForTheWorker(PENDING, "This answer is about a caption the current build does not "
                                             "have; it is judged with the build that posted it."),
    "relation_not_in_list": ForTheWorker(REJECT, "The relation is not one of those the task offered."),
    "duplicate_caption": ForTheWorker(APPROVE, "This image pair was captioned more than once, as we "
                                               "posted it; the first caption is used."),
}

# A code without a line (a new reason no test has met yet) is held for the requester,
# never guessed into a rejection.
UNKNOWN = ForTheWorker(PENDING, "This answer needs a person to judge it.")


def for_the_worker(reason: str) -> ForTheWorker:
    return FOR_THE_WORKER.get(reason, UNKNOWN)
