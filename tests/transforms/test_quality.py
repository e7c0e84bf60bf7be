"""The quality gate: offline BRISQUE (agrees with the `brisque` package), OCR text, gate.

Photos come from skimage.data (bundled, no download); text is drawn with matplotlib's
bundled DejaVuSans."""
import os
import pickle
import shutil

import cv2
import matplotlib
import numpy as np
import pytest
import scipy.ndimage as ndi
import skimage.data
import torch
from PIL import Image, ImageDraw, ImageFont

from pipelines.imagecode import reasons
from pipelines.imagecode.video.quality_gate import QualityGate, build_quality_gate
from transforms.image.brisque import (MODEL_DIR_KEY, BrisqueScorer, ModelNotFoundError,
                                      _aggd_moments, _convolve_same, _gaussian_window, _grey,
                                      _half_size, _local_means, _log_phi, default_model_dir, load_svr_model, parse_libsvm_model)
from transforms.core.errors import UserError
from transforms.image.ocr import (TESSDATA_KEY, TesseractNotFoundError, TextDetector,
                                  ocr_identity, parse_tsv)

PHOTOS = ["astronaut", "chelsea", "coffee", "rocket"]
FONT = os.path.join(matplotlib.get_data_path(), "fonts", "ttf", "DejaVuSans.ttf")
needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None,
                                     reason="tesseract binary not installed")
BACKENDS = ("tesserocr", pytest.param("pytesseract", marks=needs_tesseract))


@pytest.fixture(scope="module")
def scorer():
    return BrisqueScorer(device="cpu")


def photo(name, size=(320, 240)):
    """A skimage photo as an RGB uint8 video-sized frame."""
    image = getattr(skimage.data, name)()[..., :3]
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA) if size else image


def blur(frame, sigma):
    out = ndi.gaussian_filter(frame.astype(float), (sigma, sigma, 0))
    return np.clip(out, 0, 255).round().astype(np.uint8)


def with_caption(frame, text, size=30, xy=(10, 175), fill=(255, 255, 255)):
    """Overlay text as a video would: light letters with a dark outline."""
    image = Image.fromarray(frame.copy())
    ImageDraw.Draw(image).text(xy, text, font=ImageFont.truetype(FONT, size), fill=fill,
                               stroke_width=2, stroke_fill=(0, 0, 0))
    return np.asarray(image)


# --- BRISQUE ---------------------------------------------------------------------------

# brisque 0.2.0's own BRISQUE().score on these images (its code run with libsvm-official
# 3.37 and two numpy-2 fixes, scipy 1.17): the values ours must reproduce.
def _blocky():
    # 8x8 flat blocks: x - local mean is rounding noise there, so only the package's exact
    # convolution order reproduces its score (torch's conv2d gives 83.71).
    return skimage.data.astronaut()[::8, ::8].repeat(8, 0).repeat(8, 1)


REFERENCE = [
    (lambda: photo("astronaut", None), 10.794862939087324),
    (lambda: photo("chelsea", None), 2.870766629424878),
    (lambda: photo("coffee", None), 3.0479264284917633),
    (lambda: photo("rocket", None), 4.23315409325491),
    (lambda: blur(photo("coffee", None), 3), 78.59871212599941),
    (_blocky, 84.06724211245543),
]


@pytest.mark.parametrize("make, expected", REFERENCE)
def test_scores_agree_with_the_brisque_package(scorer, make, expected):
    assert scorer.score([make()])[0] == pytest.approx(expected, abs=1e-6)


def test_batched_scores_equal_single_frame_scores(scorer):
    frames = [photo(n) for n in PHOTOS] + [photo("chelsea", None)]   # two sizes in one call
    batched = scorer.score(frames)
    single = [scorer.score([f])[0] for f in frames]
    np.testing.assert_allclose(batched, single, rtol=0, atol=1e-9)


def test_clean_photos_score_low_and_blur_scores_high(scorer):
    for name in PHOTOS:
        frame = photo(name)
        clean, b2, b4, b8 = scorer.score_normalised([frame, blur(frame, 2), blur(frame, 4),
                                                     blur(frame, 8)])
        assert clean < b2 < b4 < b8, name
        assert clean < 0.65 < b4, name         # the paper's threshold on the BRISQUE/100 scale
        assert clean < 0.3, name


def test_normalised_score_is_native_over_100(scorer):
    frame = photo("coffee")
    # rounded to the published precision (transforms/core/precision.py): 1e-4 points
    assert scorer.score_normalised([frame])[0] == round(scorer.score([frame])[0] / 100, 6)


def test_featureless_frame_scores_worst(scorer):
    black = np.zeros((240, 320, 3), np.uint8)
    assert scorer.score([black])[0] == np.inf


def test_svr_matches_a_direct_per_sv_loop(scorer):
    model = scorer.model
    rng = np.random.default_rng(0)
    real = scorer.features([photo("chelsea"), blur(photo("rocket"), 4)])
    random = model.feat_min + rng.random((3, 36)) * (model.feat_max - model.feat_min)
    features = np.vstack([real, random])
    vectorised = scorer.predict(torch.from_numpy(features)).numpy()
    for x, got in zip(features, vectorised):
        scaled = -1 + 2.0 / (model.feat_max - model.feat_min) * (x - model.feat_min)
        expected = -model.rho
        for coef, sv in zip(model.coef, model.sv):
            expected += coef * np.exp(-model.gamma * np.sum((scaled - sv) ** 2))
        assert got == pytest.approx(expected, abs=1e-9)


def test_shipped_model_parses():
    model = load_svr_model()
    assert model.sv.shape == (770, 36) and model.coef.shape == (770,)
    assert (model.gamma, model.rho) == (0.05, -155.845)
    assert model.feat_min.shape == model.feat_max.shape == (36,)


def test_parse_rejects_other_svm_types():
    with pytest.raises(ValueError, match="epsilon_svr"):
        parse_libsvm_model("svm_type c_svc\nkernel_type rbf\ngamma 1\nrho 0\nSV\n1 1:0.5\n")


def test_half_size_matches_cv2_bicubic():
    rng = np.random.default_rng(0)
    for shape in [(240, 320), (241, 321), (243, 323)]:
        grey = rng.random(shape)
        expected = cv2.resize(grey, None, fx=0.5, fy=0.5, interpolation=cv2.INTER_CUBIC)
        got = _half_size(torch.from_numpy(grey)[None])[0].numpy()
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def test_missing_model_dir_names_the_config_key(tmp_path):
    lazy = BrisqueScorer(model_dir=str(tmp_path))          # nothing loads at construction
    with pytest.raises(ModelNotFoundError, match=MODEL_DIR_KEY.replace(".", r"\.")):
        lazy.score([photo("coffee")])


def test_model_dir_with_the_model_files_works(tmp_path, scorer):
    for name in ("svm.txt", "normalize.pickle"):
        shutil.copy(default_model_dir() / name, tmp_path / name)
    frame = photo("chelsea")
    assert BrisqueScorer(str(tmp_path)).score([frame])[0] == scorer.score([frame])[0]


def test_scorer_pickles_without_its_model(scorer):
    frame = photo("rocket")
    expected = scorer.score([frame])[0]                    # loads model + tensors
    clone = pickle.loads(pickle.dumps(scorer))
    assert clone._model is None and clone._tensors is None
    assert clone.score([frame])[0] == expected


@pytest.mark.slow
def test_the_local_mean_is_scipys_convolution_bit_for_bit():
    """BRISQUE's 7x7 Gaussian mean, computed in place in torch (issue 14), gives exactly
    scipy.signal.convolve2d's values: the operations and their order are scipy's."""
    import scipy.signal
    for name in ("coffee", "astronaut"):
        grey = _grey(photo(name))
        for x in (grey, grey ** 2):
            ours = _convolve_same(torch.from_numpy(x)[None])[0].numpy()
            assert np.array_equal(ours, scipy.signal.convolve2d(x, _gaussian_window(), "same"))



def test_the_compiled_local_means_are_the_torch_operations_bit_for_bit():
    """On CPU the local means come from one compiled loop (issue 14): the same values as
    the tensor operations (and so as scipy), on photos, a blocky frame whose flat areas
    make x - mean rounding noise, half-size frames, and several frames in one call."""
    frames = [_grey(photo("coffee")), _grey(photo("astronaut")), _grey(_blocky()[:240, :320]),
              _grey(blur(photo("rocket"), 4))]
    grey = torch.from_numpy(np.stack(frames))
    for x in (grey, _half_size(grey), grey[2:3]):
        reference = _convolve_same(torch.cat([x, x ** 2]))
        assert torch.equal(_local_means(x), reference)


def test_the_moments_and_phi_are_the_original_expressions_bit_for_bit():
    """_aggd_moments (clamped squares, one comparison) and _log_phi (one lgamma call)
    were rewritten for speed (issue 14); they give what the plain formulas give."""
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((3, 5000)))
    x[0, :100] = 0.0                                   # zeros count on the right
    left, right = x < 0, x >= 0
    sl2 = (x ** 2 * left).sum(1) / left.sum(1)
    sr2 = (x ** 2 * right).sum(1) / right.sum(1)
    r_hat, l2, r2 = _aggd_moments(x)
    assert torch.equal(l2, sl2) and torch.equal(r2, sr2)
    g = sl2.sqrt() / sr2.sqrt()
    expected = (x.abs().mean(1) ** 2 / (x ** 2).mean(1)) * (g ** 3 + 1) * (g + 1) / (g ** 2 + 1) ** 2
    assert torch.equal(r_hat, expected)
    alpha = torch.exp(torch.linspace(np.log(0.01), np.log(100.0), 999, dtype=torch.float64))
    alpha = alpha.reshape(333, 3)
    plain = 2 * torch.lgamma(2 / alpha) - torch.lgamma(1 / alpha) - torch.lgamma(3 / alpha)
    assert torch.equal(_log_phi(alpha), plain)

# --- OCR -------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_captions_are_read_and_clean_photos_are_not(backend):
    detector = TextDetector(backend=backend)
    for name in ["chelsea", "coffee", "rocket"]:
        frame = photo(name)
        assert detector.text_chars(frame) == 0, name
        assert detector.text_chars(with_caption(frame, "BREAKING NEWS")) > 10, name
        if (backend, name) == ("tesserocr", "coffee"):
            continue  # the one caption here the library misses: see the test below
        assert detector.text_chars(yellow_caption(frame)) > 10, name


def yellow_caption(frame):
    return with_caption(frame, "Stir the sauce gently", size=20, xy=(10, 205), fill=(255, 255, 0))


@needs_tesseract
def test_the_known_difference_of_the_backends_a_yellow_caption_over_coffee():
    """Tesseract 5.5.4 (the library) reads 5 characters of this caption, Debian's 5.3.0
    (the program) 18: the verdict differs. docs/quality.md counts such differences (4 of
    50 generated caption frames, each a caption the program catches and the library
    misses; none on the bench and sample videos). If this starts failing, an engine
    changed: measure again and update docs/quality.md."""
    frame = yellow_caption(photo("coffee"))
    assert TextDetector(backend="tesserocr").text_chars(frame) <= 10
    assert TextDetector(backend="pytesseract").text_chars(frame) > 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_dark_text_on_a_light_box_is_read(backend):
    frame = photo("astronaut").copy()
    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 190, 320, 240), fill=(250, 250, 250))
    draw.text((8, 198), "Chapter two begins", font=ImageFont.truetype(FONT, 24),
              fill=(20, 20, 20))
    assert TextDetector(backend=backend).text_chars(np.asarray(image)) > 10


CAPTIONS = {  # frames with known text: (photo, text, size, fill, box)
    "white 28 px": ("chelsea", "BREAKING NEWS", 28, (255, 255, 255), None),
    "white 20 px": ("coffee", "Live from the studio", 20, (255, 255, 255), None),
    "yellow 20 px": ("rocket", "Stir the sauce gently", 20, (255, 255, 0), None),
    "dark on a light box": ("astronaut", "Chapter two begins", 24, (20, 20, 20), (250, 250, 250)),
    "small logo": ("coffee", "TV", 14, (255, 255, 255), None),
}


def captioned(name, text, size, fill, box):
    if not box:
        return with_caption(photo(name), text, size=size, xy=(10, 200), fill=fill)
    image = Image.fromarray(photo(name).copy())
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 190, 320, 240), fill=box)
    draw.text((8, 198), text, font=ImageFont.truetype(FONT, size), fill=fill)
    return np.asarray(image)


@needs_tesseract
@pytest.mark.slow
def test_both_backends_give_every_frame_the_same_verdict():
    """The decision-identity check of the OCR backends: the library (tesserocr, its own
    Tesseract 5.5.4) and the program (pytesseract, Debian's) may read a few characters
    apart, but on clean photos, captions and a small logo every frame lands on the same
    side of max_text_chars (10), and a clean photo reads 0 in both."""
    library, program = TextDetector(backend="tesserocr"), TextDetector(backend="pytesseract")
    frames = {f"clean {name}": photo(name) for name in PHOTOS}
    frames.update({label: captioned(*spec) for label, spec in CAPTIONS.items()})
    for label, frame in frames.items():
        ours, theirs = library.text_chars(frame), program.text_chars(frame)
        assert (ours > 10) == (theirs > 10), (label, ours, theirs)
        if label.startswith("clean"):
            assert ours == theirs == 0, label


def test_the_library_engine_is_loaded_once_and_never_pickled():
    detector = TextDetector()
    detector.text_chars(photo("coffee"))
    engine = detector._engine
    detector.text_chars(photo("rocket"))
    assert engine is not None and detector._engine is engine
    clone = pickle.loads(pickle.dumps(detector))
    assert clone._engine is None and clone.text_chars(photo("coffee")) == 0



def test_a_count_does_not_depend_on_what_the_engine_read_before():
    """The miner's lookahead reads some frames on other threads' engines, in another
    order; that is only sound because an engine learns nothing from one page to the next."""
    frames = [with_caption(photo("chelsea"), "Breaking News"), photo("coffee"),
              with_caption(photo("rocket"), "Live at five", fill=(255, 255, 0)),
              with_caption(photo("coffee"), "SALE 50%", size=24)]
    one = TextDetector()
    forwards = [one.text_chars(f) for f in frames]
    other = TextDetector()
    backwards = [other.text_chars(f) for f in reversed(frames)][::-1]
    fresh = [TextDetector().text_chars(f) for f in frames]
    assert forwards == backwards == fresh and max(forwards) > 10

def test_tesseract_tsv_rows_are_parsed_as_the_program_reports_them():
    tsv = ("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n"
           "1\t1\t0\t0\t0\t0\t0\t0\t320\t608\t-1\t\n"
           "5\t1\t1\t1\t1\t1\t8\t198\t90\t20\t91.5\tBREAKING\n")
    assert parse_tsv(tsv) == {"text": ["", "BREAKING"], "conf": [-1.0, 91.5], "top": [0, 198]}


def test_missing_language_data_is_a_user_error_naming_the_config_key(tmp_path):
    with pytest.raises(UserError, match=f"{TESSDATA_KEY}: .*tesseract-ocr-eng"):
        TextDetector(tessdata=str(tmp_path)).text_chars(photo("coffee"))
    with pytest.raises(UserError, match=TESSDATA_KEY):
        ocr_identity(tessdata=str(tmp_path))


def test_the_backends_have_different_identities():
    library = ocr_identity(backend="tesserocr")
    assert library["backend"] == "tesserocr" and library["tesseract"].startswith("tesseract 5.5")
    assert library["traineddata_sha256"]["eng"] and library["source_dpi"] == 70
    if shutil.which("tesseract"):
        program = ocr_identity(backend="pytesseract")
        assert "backend" not in program  # as before the library existed: its caches stay valid
        assert program["stack_band"] == library["stack_band"]


def test_missing_tesseract_binary_is_a_clear_error():
    detector = TextDetector(tesseract_cmd="/nonexistent/tesseract", backend="pytesseract")
    with pytest.raises(TesseractNotFoundError, match="tesseract-ocr"):
        detector.text_chars(photo("coffee"))


def test_missing_tesseract_is_a_user_error_naming_the_config_key():
    # a UserError: the command line prints it as one line and exits 2, no traceback
    with pytest.raises(UserError, match="quality.ocr.tesseract_cmd: .*`/nonexistent/tesseract`"):
        ocr_identity(tesseract_cmd="/nonexistent/tesseract", backend="pytesseract")


def test_missing_brisque_model_is_a_user_error_naming_the_config_key(tmp_path):
    with pytest.raises(UserError, match=MODEL_DIR_KEY):
        load_svr_model(str(tmp_path))


# --- the gate --------------------------------------------------------------------------

class CountingText:
    """A stand-in TextDetector: fixed answer, counts calls."""

    def __init__(self, chars):
        self.chars, self.calls = chars, 0

    def text_chars(self, frame):
        self.calls += 1
        return self.chars


def test_gate_rejects_blurry_before_running_ocr(scorer):
    text = CountingText(chars=0)
    gate = QualityGate(scorer, max_brisque=0.65, text=text, max_text_chars=10)
    verdict = gate.check(blur(photo("coffee"), 6))
    assert (verdict.ok, verdict.reason) == (False, reasons.BLURRY)
    assert verdict.brisque > 0.65 and verdict.text_chars is None
    assert text.calls == 0 and gate.evaluations == {"brisque": 1, "text": 0}


def test_gate_rejects_text_on_sharp_frames_and_passes_clean_ones(scorer):
    gate = QualityGate(scorer, 0.65, CountingText(chars=25), max_text_chars=10)
    verdict = gate.check(photo("coffee"))
    assert (verdict.ok, verdict.reason, verdict.text_chars) == (False, reasons.TEXT, 25)
    assert verdict.brisque < 0.65

    gate = QualityGate(scorer, 0.65, CountingText(chars=10), max_text_chars=10)
    verdict = gate.check(photo("coffee"))
    assert verdict.ok and verdict.reason is None and verdict.text_chars == 10
    assert gate.evaluations == {"brisque": 1, "text": 1}


def test_gate_threshold_is_on_the_normalised_scale(scorer):
    frame = photo("rocket")
    score = scorer.score_normalised([frame])[0]
    assert QualityGate(scorer, score + 1e-6, None, 0).check(frame).ok
    assert QualityGate(scorer, score - 1e-6, None, 0).check(frame).reason == reasons.BLURRY


@needs_tesseract
def test_real_gate_end_to_end():
    gate = build_quality_gate(max_brisque=0.65, max_text_chars=10, device="cpu")
    frame = photo("chelsea")
    assert gate.check(frame).ok
    assert gate.check(with_caption(frame, "BREAKING NEWS")).reason == reasons.TEXT
    assert gate.check(blur(frame, 6)).reason == reasons.BLURRY
    assert gate.evaluations == {"brisque": 3, "text": 2}


def test_gate_pickles_before_use_and_builds_from_config_values():
    gate = build_quality_gate(brisque_model_dir=None, ocr_enabled=False, device="cpu")
    clone = pickle.loads(pickle.dumps(gate))
    assert clone.text is None and clone.brisque._model is None
    assert clone.check(photo("coffee")).ok
    assert build_quality_gate(brisque_enabled=False, ocr_enabled=False) is None


def test_piq_features_give_the_same_verdicts_close_to_the_reference(scorer):
    piq_scorer = BrisqueScorer(features="piq")
    clean = [photo(name) for name in PHOTOS]
    blurred = [blur(frame, 4) for frame in clean]
    reference = scorer.score(clean + blurred)
    via_piq = piq_scorer.score(clean + blurred)
    assert np.all(np.abs(via_piq - reference) < 6.0)          # BRISQUE points (docs/quality.md)
    assert via_piq[:4].max() < 65.0 < via_piq[4:].min()      # clean kept, blur rejected at 0.65
    assert np.all(via_piq[4:] > via_piq[:4])                 # each photo: blur scores higher


def test_unknown_feature_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="quality.brisque.features"):
        BrisqueScorer(features="opencv")
