"""ImageCoDe's video-frame sets (Krojer et al. 2022, §3.1 "Video Frames"), in the order a
video goes through them:

    plans.py          videos -> shots and frame embeddings (from the cache when it has them)
    content.py        one video per decoded content (a video muxed two ways is one video)
    mining.py         the greedy rule: a set of frames far enough apart, per shot
    quality_gate.py   the rule's "acceptable": BRISQUE (blur) and OCR (text) thresholds
    scoring.py        the miner as a Beam stage: the rule asked lazily, frames decoded and
                      scored on demand, the cache of scores and frame images
    sampling.py       sets per source, seeded
    explorer_frames.py  rejected frames decoded again as pictures for the release explorer
"""
