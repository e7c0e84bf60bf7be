"""What a release's MANIFEST.json must say of each model it loaded (issue 36, item 5)."""
import os

# What pins a model's weights or its code: a checksum, a version, or a stand-in of this
# repository (its code is the identity).
PINS = ("weights_sha256", "sha256", "svm_sha256", "traineddata_sha256", "version",
        "library_version", "spacy_version", "open_clip_version", "code", "stand_in", "fingerprint")
NAMES = ("name", "model_name", "model", "backend", "kind", "file", "code")


def absolute_paths(value, where=""):
    """(where, path) of every absolute local path among the strings of a JSON value."""
    if isinstance(value, str):
        return [(where, value)] if os.path.isabs(value) else []
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in absolute_paths(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in absolute_paths(v, f"{where}[{i}]")]
    return []


def model_problems(models: dict) -> list:
    """Lines naming what is wrong with a manifest's `models` ([] when every model is named
    and pinned and no path of the building machine is in it). `devices` says where the
    model stages ran, not what they loaded."""
    problems = [f"models{where}: an absolute path: {path}" for where, path in absolute_paths(models)]
    for name, entry in models.items():
        if name == "devices":
            continue
        if not isinstance(entry, dict) or not any(entry.get(k) for k in NAMES):
            problems.append(f"models.{name}: names no model")
        elif entry.get("kind") != "file" and not any(entry.get(k) for k in PINS):
            problems.append(f"models.{name}: pins neither its weights nor its version")
    return problems
