"""What DATACARD.md says about an ImageCoDe video-frame release, beyond the generic card."""
from __future__ import annotations

from pipelines.imagecode_config import ImageCodeConfig

PAPER = "Krojer et al. 2022, ImageCoDe"


def describe(cfg: ImageCodeConfig, facts: dict) -> dict:
    encoder = facts["models"]["image_encoder"]
    summary = (
        f"Sets of {cfg.mining.set_size} similar video frames mined per shot as in {PAPER} "
        "§3.1 (Video Frames): a frame joins the open set when its Euclidean distance to "
        f"every frame already in it is above {cfg.mining.distance_threshold}; blurry frames "
        "(BRISQUE) and frames with too much text (Tesseract OCR) never enter a set; a set "
        "still open when its shot ends is discarded. Each set keeps its video's split.\n\n"
        f"Frames were embedded with **{_encoder_name(encoder)}**.")
    if cfg.embed.kind == "thumbnail":
        summary += ("\n\n**This release used the offline stand-in encoder (a 16x16 "
                    "thumbnail), not CLIP.** It exists to exercise the pipeline without "
                    "weights; do not use it as an ImageCoDe release.")
    brisque, ocr = cfg.quality.brisque, cfg.quality.ocr
    thresholds = {
        "mining.distance_threshold": {"value": cfg.mining.distance_threshold,
                                      "source": "§3.1 fn. 4 (0.35)"},
        "mining.set_size": {"value": cfg.mining.set_size, "source": "§3.1 (10)"},
        "quality.brisque.max_score": {
            "value": f"{brisque.max_score} (BRISQUE/100)" if brisque.enabled else "off",
            "source": "§3.1 (0.65)"},
        "quality.ocr.max_text_chars": {
            "value": ocr.max_text_chars if ocr.enabled else "off",
            "source": f"ours (§3.1 names Tesseract, no amount); min confidence {ocr.min_confidence}"},
        "shots.backend": {"value": cfg.shots.backend,
                          "source": "issue default; the paper used ffmpeg's scene detection"},
        "decode.stride": {"value": cfg.decode.stride, "source": "§3.1 (every frame)"},
        "sampling": {"value": _sampling(cfg), "source": "§3.1 / Table 1"},
        "seed": {"value": cfg.seed, "source": "ours"},
    }
    return {"summary": summary, "thresholds": thresholds}


def _encoder_name(identity: dict) -> str:
    name = f"{identity.get('kind')} {identity.get('model_name', '')}".strip()
    sha = identity.get("weights_sha256")
    return f"{name} (weights sha256 {sha[:12]}…)" if sha else name


def _sampling(cfg: ImageCodeConfig) -> str:
    per_source = ", ".join(f"{k}: {v}" for k, v in sorted(cfg.sampling.sets_per_source.items()))
    default = "all" if cfg.sampling.default is None else cfg.sampling.default
    return f"{per_source + '; ' if per_source else ''}other sources: {default}"
