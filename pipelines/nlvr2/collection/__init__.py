"""NLVR2's collection stages S1-S9 (§3.1-§3.4, App. B; ../shared/specs/nlvr2.md), the other
way to examples besides reading released files (pipelines/nlvr2/read_public.py):

    collect.py        the stages as one composite transform (CollectExamples), its tables,
                      links, preflight and model records
    config.py         the `collection:` section of the config
    reasons.py        the reject reasons of these stages
    synsets.py        S1: the ILSVRC synsets (tables in pipelines/nlvr2/data/)
    queries.py        S1: Table 1's queries; similar_words.py: its "similar words" stand-in
    search.py         S2-S3: search results, App. B's caps, automatic pruning
    local_search.py   S2: a local stand-in for the similar-images tool
    image_sets.py     the records of a search result's images as they shrink (S2-S6)
    rounds.py         S4-S8: the crowd rounds' tasks and answers
    worker_pages.py   the rounds' worker pages (pages/) and their batch inputs
    splits.py         S9: splits and the extra judgements
"""
