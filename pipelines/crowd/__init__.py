"""Commands for a crowd round on MTurk, over a built release: `approvals` (the approve/
reject file, in the sentences of worker_reasons.py) and `htmlquestions` (each HIT's
HTMLQuestion)."""
