"""ImageCoDe's crowd rounds (Krojer et al. 2022, §3.2 describe, §3.3 retrieve, §4.1):

    records.py       the rounds' records, ids, indices and file columns
    rounds.py        tasks, reading answers, the keep rule (Beam stages)
    worker_pages.py  the workers' pages, from the templates in pages/
    agreement.py     human accuracy, Krippendorff's alpha, worker pools
"""
