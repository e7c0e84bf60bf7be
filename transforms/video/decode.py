"""Streaming video decode with ffmpeg: one frame in memory at a time.

Where PyAV (FFmpeg's libraries in process) gives the pipe's very pixels, frames are
decoded in process, cheaper than through a pipe (`_PyAVFrames`); anything else, and
anything PyAV fails on, goes through the ffmpeg program as below.

ffmpeg-python builds the command line; we run the process ourselves so that we control
its pipes: frames arrive as raw RGB on stdout, stderr is drained by a thread (a full
stderr pipe would block ffmpeg and so our read), and, on request, ffmpeg's own scene
score for every frame arrives on an extra pipe (see `iter_scored_frames`).

Errors: anything that cannot be opened or decoded at all raises `VideoError` with a
short summary of what ffmpeg said. A file that breaks half-way yields the frames that
decode and then stops: ffmpeg often exits 0 on an mp4 cut short (its index, read first,
still promises every frame). So a decode can fill a `DecodeReport` (frames decoded, the
frames the container promised, ffmpeg's error lines), and `truncation` compares them: the
caller decides, once the stream has ended, whether the video was whole. A decode that
makes no progress for `stall_timeout` seconds is killed and raises, so a worker never
hangs on one bad file.
"""
from __future__ import annotations

import collections
import contextlib
import functools
import logging
import os
import queue
import re
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterator, Mapping, Optional, Tuple

import ffmpeg
import numpy as np

log = logging.getLogger(__name__)

DEFAULT_STALL_TIMEOUT = 120.0  # seconds without one new frame before we give up on a file
_STDERR_LINES = 20             # how much of ffmpeg's stderr we keep for error messages


class VideoError(Exception):
    """The video cannot be probed or decoded; the message says why (for rejects/)."""


@dataclass(frozen=True)
class VideoInfo:
    width: int       # as displayed, i.e. after the container's rotation is applied
    height: int
    fps: float
    duration: Optional[float]  # seconds; None when the container does not say
    codec: str
    n_frames: Optional[int] = None  # the container's frame count, when it has one


def probe(path: str) -> VideoInfo:
    """Read the first video stream's properties with ffprobe. Remembered per version of
    the file (inode, size, modification time) in this process: the shot detector, the
    miner and the explorer each ask about the same file, and one ffprobe run costs ~70 ms
    of every build's start-up. A failure is not remembered."""
    if not os.path.isfile(path):
        raise VideoError(f"no such file: {path}")
    version = os.stat(path)
    return _probe_version(path, version.st_ino, version.st_size, version.st_mtime_ns)


@functools.lru_cache(maxsize=1024)
def _probe_version(path: str, inode: int, size: int, mtime_ns: int) -> VideoInfo:
    try:
        meta = ffmpeg.probe(path, v="error")
    except ffmpeg.Error as e:
        raise VideoError(f"ffprobe failed: {_summarise(e.stderr)}") from None
    except OSError as e:  # ffprobe binary missing
        raise VideoError(f"cannot run ffprobe: {e}") from None
    streams = [s for s in meta.get("streams", []) if s.get("codec_type") == "video"
               and s.get("disposition", {}).get("attached_pic", 0) == 0]  # not cover art
    if not streams:
        raise VideoError("no video stream")
    s = streams[0]
    width, height = int(s.get("width") or 0), int(s.get("height") or 0)
    if width <= 0 or height <= 0:
        raise VideoError("video stream has no frame size")
    if _rotation(s) % 180 == 90:  # ffmpeg auto-rotates on decode, so report display size
        width, height = height, width
    fps = _rate(s.get("avg_frame_rate")) or _rate(s.get("r_frame_rate"))
    duration = s.get("duration") or meta.get("format", {}).get("duration")
    n_frames = s.get("nb_frames")
    return VideoInfo(width=width, height=height, fps=fps,
                     duration=float(duration) if duration else None,
                     codec=s.get("codec_name", "unknown"),
                     n_frames=int(n_frames) if n_frames and n_frames.isdigit() else None)


@dataclass
class DecodeReport:
    """What one decode pass saw, filled in when the stream ends (JSON-ready: the shot
    list cache keeps it, so a cached video is judged as a decoded one is)."""
    frames: int = 0                  # frames decoded
    expected: Optional[int] = None   # frames the container promises; None: it does not say
    basis: str = ""                  # where `expected` comes from
    exit_code: Optional[int] = None  # ffmpeg's; None: the stream did not reach its end
    errors: str = ""                 # ffmpeg's last error lines ("" when it printed none)


def expected_frames(info: VideoInfo) -> Tuple[Optional[int], str]:
    """(frames the container promises, how we know): its frame count, else duration x
    frame rate, else (None, "")."""
    if info.n_frames:
        return info.n_frames, "container frame count"
    if info.duration and info.fps:
        return round(info.duration * info.fps), "duration x frame rate"
    return None, ""


def truncation(report: DecodeReport, tolerance: float) -> Optional[str]:
    """None when a finished decode looks whole, else why not (a reject's detail).

    Truncated: more than `tolerance` (a share) of the promised frames did not decode, or,
    when the container promises nothing, ffmpeg stopped with an error after some frames.
    Error lines alone do not decide (a damaged frame ffmpeg conceals is still a frame);
    they are quoted so the reader sees why frames went missing."""
    said = f"; ffmpeg: {report.errors}" if report.errors else ""
    if report.expected:
        missing = report.expected - report.frames
        if missing > tolerance * report.expected:
            share = missing / report.expected
            return (f"decoded {report.frames} of {report.expected} frames ({report.basis}): "
                    f"{share:.0%} missing > decode.truncation_tolerance {tolerance:g}{said}")
        return None
    if report.exit_code:
        return (f"decoded {report.frames} frames, then ffmpeg exit {report.exit_code} "
                f"(the container gives no frame count){said}")
    return None


def output_size(info: VideoInfo, max_side: Optional[int]) -> Tuple[int, int]:
    """(width, height) of decoded frames: downscaled to fit max_side, even, aspect kept."""
    w, h = info.width, info.height
    if not max_side or max(w, h) <= max_side:
        return w, h
    s = max_side / max(w, h)
    return max(2, round(w * s / 2) * 2), max(2, round(h * s / 2) * 2)


def iter_frames(path: str, max_side: Optional[int] = None, *,
                info: Optional[VideoInfo] = None,
                stall_timeout: float = DEFAULT_STALL_TIMEOUT,
                report: Optional[DecodeReport] = None,
                ) -> Iterator[Tuple[int, np.ndarray]]:
    """Yield (frame_index, RGB uint8 HxWx3) for every frame, in order, from index 0.
    `report`, when given, is filled in once the stream has ended.

    Decoded in process by PyAV where that gives the pipe's very pixels and the
    container promises a frame count (`_in_process_then_pipe`), else through the pipe."""
    info = info or probe(path)
    if expected_frames(info)[0] and _PyAVFrames.usable(path, max_side, info):
        yield from _in_process_then_pipe(path, info, stall_timeout, report)
    else:
        yield from _pipe_frames(path, max_side, info, stall_timeout, report)


def iter_scored_frames(path: str, max_side: Optional[int] = None, *,
                       info: Optional[VideoInfo] = None,
                       stall_timeout: float = DEFAULT_STALL_TIMEOUT,
                       report: Optional[DecodeReport] = None,
                       ) -> Iterator[Tuple[int, np.ndarray, float]]:
    """Like `iter_frames`, plus ffmpeg's scene score (0..1) of each frame against the
    previous one (`select` filter's `scene`, the paper's "scene detection of ffmpeg").
    Computed in the same ffmpeg process: one decode gives both."""
    yield from _stream(path, max_side, info, True, stall_timeout, report)


def decodes_in_process(path: str, max_side: Optional[int] = None) -> bool:
    """Whether `ForwardFrameReader` starts this video in process (PyAV): there a frame
    is decoded without being converted, and only the frames looked at are converted to
    RGB, while the pipe converts (and scales) every frame it passes. A frame PyAV cannot
    give as the pipe would still sends the rest of the video through the pipe."""
    return _PyAVFrames.usable(path, max_side)


# --- internals -----------------------------------------------------------------------

def _pipe_frames(path, max_side, info, stall_timeout, report=None):
    for index, frame, _ in _stream(path, max_side, info, False, stall_timeout, report):
        yield index, frame


def _in_process_then_pipe(path, info, stall_timeout, report):
    """Every frame from PyAV while it matches the pipe. A video PyAV decodes whole (at
    least the frames its container promises) is reported as the pipe reports a clean
    run; on anything else (a frame PyAV cannot give as the pipe would, a PyAV error,
    fewer frames than promised) the pipe takes over from the first frame not yet given
    and, having decoded the video itself, makes the report: truncated and damaged
    videos are judged on ffmpeg's own word, as before."""
    expected, basis = expected_frames(info)
    to_rgb = _RgbConverter()
    given = 0
    frames = _PyAVFrames(path, stall_timeout).frames()
    try:
        with contextlib.closing(frames):
            for index, frame in frames:
                yield index, to_rgb(frame)
                given = index + 1
    except _NotLikeThePipe as e:
        log.info("%s: %s; decoding with ffmpeg from frame %d", path, e, given)
    else:
        if given >= expected:
            if report is not None:
                report.frames, report.exit_code, report.errors = given, 0, ""
                report.expected, report.basis = expected, basis
            return
        log.info("%s: PyAV decoded %d of %d frames; ffmpeg decides", path, given, expected)
    yield from _skipping(_pipe_frames(path, None, info, stall_timeout, report), given)


def _stream(path, max_side, info, scene_scores, stall_timeout, report=None):
    info = info or probe(path)
    width, height = output_size(info, max_side)

    score_r = score_w = None
    # An explicit scale pins the output size, so our frame size is right even if a
    # stream changes resolution mid-way; `area` avoids aliasing when downscaling.
    v = ffmpeg.input(path)["v:0"].filter("scale", width, height, flags="area")
    if scene_scores:
        score_r, score_w = os.pipe()
        # select computes `scene` for every frame (gte(scene,0) keeps them all) and
        # attaches lavfi.scene_score; metadata prints it unbuffered to our pipe.
        v = (v.filter("select", "gte(scene,0)")
              .filter("metadata", mode="print", key="lavfi.scene_score",
                      file=f"pipe:{score_w}", direct=1))
    args = (v.output("pipe:", format="rawvideo", pix_fmt="rgb24",
                     fps_mode="passthrough")  # every decoded frame once: no dup/drop
             .global_args("-nostdin", "-hide_banner", "-loglevel", "error")
             .compile())
    try:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE,
                                pass_fds=(score_w,) if scene_scores else ())
    except OSError as e:
        for fd in (score_r, score_w):
            if fd is not None:
                os.close(fd)
        raise VideoError(f"cannot run ffmpeg: {e}") from None
    if score_w is not None:
        os.close(score_w)  # the child holds the write end; EOF arrives when it exits

    stderr_tail = collections.deque(maxlen=_STDERR_LINES)
    threads = [threading.Thread(target=_drain, args=(proc.stderr, stderr_tail), daemon=True)]
    scores: "queue.Queue" = queue.Queue()
    if scene_scores:
        threads.append(threading.Thread(target=_read_scores, args=(score_r, scores),
                                        daemon=True))
    watch = _Watchdog(proc, stall_timeout)
    threads.append(threading.Thread(target=watch.run, daemon=True))
    for t in threads:
        t.start()

    index = 0
    try:
        while True:
            frame = np.empty((height, width, 3), np.uint8)  # a fresh, writable array each
            with watch.waiting():
                complete = _read_into(proc.stdout, frame)
            if not complete:  # EOF (a partial last frame is dropped)
                break
            score = None
            if scene_scores:
                with watch.waiting():
                    score = _score_for(scores, index)
            yield index, frame, score
            index += 1
        rc = proc.wait()
        if watch.fired:
            raise VideoError(f"ffmpeg stalled for {stall_timeout:.0f}s after {index} frames")
        threads[0].join(timeout=5)  # let the drain thread collect the last words
        msg = _summarise("\n".join(stderr_tail)) if stderr_tail else ""
        if rc != 0:
            if index == 0:
                raise VideoError(f"ffmpeg exit {rc}: {msg or 'no message'}")
            log.warning("%s: decode stopped after %d frames (ffmpeg exit %d): %s",
                        path, index, rc, msg)
        if report is not None:
            report.frames, report.exit_code, report.errors = index, rc, msg
            report.expected, report.basis = expected_frames(info)
    finally:
        # Also runs when the consumer stops early (generator closed): kill, reap, join.
        watch.stop()
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
        proc.wait()
        for t in threads:
            t.join(timeout=5)
        proc.stderr.close()


def _read_into(stream, frame: np.ndarray) -> bool:
    """Fill `frame` from the pipe; False at EOF (including a partial frame)."""
    view = memoryview(frame).cast("B")
    got, n = 0, len(view)
    while got < n:
        k = stream.readinto(view[got:])
        if not k:
            return False
        got += k
    return True


def _drain(stream, tail: collections.deque) -> None:
    for line in iter(stream.readline, b""):
        tail.append(line.decode("utf-8", "replace").rstrip())


_FRAME_LINE = re.compile(rb"^frame:\s*(\d+)")
_SCORE_LINE = re.compile(rb"^lavfi\.scene_score=([0-9.eE+-]+|nan|inf)", re.I)


def _read_scores(fd: int, out: "queue.Queue") -> None:
    """Parse metadata=print output ("frame:N ..." then "lavfi.scene_score=X")."""
    frame = None
    with os.fdopen(fd, "rb") as f:
        for line in f:
            m = _FRAME_LINE.match(line)
            if m:
                frame = int(m.group(1))
                continue
            m = _SCORE_LINE.match(line)
            if m and frame is not None:
                value = float(m.group(1))
                out.put((frame, 0.0 if value != value else value))  # nan -> 0
    out.put(None)  # ffmpeg is gone: no more scores


def _score_for(scores: "queue.Queue", index: int) -> float:
    """The score of frame `index`: it is printed before the frame reaches stdout."""
    while True:
        item = scores.get()
        if item is None:
            scores.put(None)  # keep the end marker for the next call
            return 0.0        # no score (should not happen): treat as "no cut"
        frame, score = item
        if frame >= index:
            return score      # frame numbers count up in step with our index


class _Watchdog:
    """Kills ffmpeg when we have waited on it for `timeout` seconds in one go. Time the
    consumer spends with a frame does not count: a slow consumer is not a stall."""

    def __init__(self, proc, timeout: float):
        self.proc, self.timeout = proc, timeout
        self.fired = False
        self._since = None
        self._done = threading.Event()

    @contextlib.contextmanager
    def waiting(self):
        """Wrap each blocking wait on ffmpeg."""
        self._since = time.monotonic()
        try:
            yield
        finally:
            self._since = None

    def run(self) -> None:
        while not self._done.wait(min(1.0, self.timeout)):
            since = self._since
            if since is not None and time.monotonic() - since > self.timeout:
                self.fired = True
                self.proc.kill()
                return

    def stop(self) -> None:
        self._done.set()


def _summarise(stderr) -> str:
    """The last meaningful lines of ffmpeg's stderr, short enough for a reject record."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    # ffmpeg names its contexts by address ("[mov,mp4 @ 0x55ed...]"): dropped, so the
    # same bad file gives the same reject detail in every run
    stderr = re.sub(r" @ 0x[0-9a-f]+\]", "]", stderr or "")
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    text = " | ".join(lines[-3:]) or "no message"
    return text if len(text) <= 300 else text[:297] + "..."


def _rate(value) -> float:
    try:
        r = Fraction(value)
    except (TypeError, ValueError, ZeroDivisionError):
        return 0.0
    return float(r) if r > 0 else 0.0


def _rotation(stream) -> int:
    rot = stream.get("tags", {}).get("rotate")
    for side in stream.get("side_data_list", []) or []:
        if "rotation" in side:
            rot = side["rotation"]
    try:
        return int(float(rot or 0)) % 360
    except ValueError:
        return 0


class ForwardFrameReader:
    """The kept frames of a video's shots, from one forward decode pass.

    For stages that need pixels again after the shots were found (or came from a
    cache): ask for shots in order; decoding starts on the first request and skips the
    shots nobody asks for. No seeking, so frame numbers are exact on any container.

    A consumer often looks at few of the frames it asks for (the miner publishes ten
    of a shot's frames). So where PyAV decodes to the very pixels of `iter_frames`
    (see `_PyAVFrames`), frames are decoded in process and converted to RGB only when
    looked at; a video PyAV cannot match, or that fails in PyAV, is read through the
    ffmpeg pipe (from its first frame again, if PyAV had started)."""

    def __init__(self, path: str, max_side: Optional[int] = None,
                 stall_timeout: float = DEFAULT_STALL_TIMEOUT):
        self._path, self._max_side, self._stall_timeout = path, max_side, stall_timeout
        self._frames: Optional[Iterator[Tuple[int, object]]] = None
        self._next_index = 0  # the first frame not yet read off the stream
        self.frames_decoded = 0
        self.decoder = ""     # "pyav" or "ffmpeg", once decoding has started
        self._to_rgb = _RgbConverter()

    def frames_of(self, start_frame: int, end_frame: int, frame_indices) -> Mapping[int, np.ndarray]:
        """{frame number: RGB frame} for `frame_indices` (within [start, end), after any
        shot asked before), each frame converted on first look. Raises VideoError when
        the video ends before them."""
        if start_frame < self._next_index:
            raise ValueError(f"{self._path}: frames from {start_frame} asked after frame "
                             f"{self._next_index - 1} was read; ask for shots in order")
        if self._frames is None:
            self._frames = self._open()
        wanted, out = set(frame_indices), {}
        while len(out) < len(wanted) and self._next_index < end_frame:
            item = self._next()
            if item is None:
                break
            index, frame = item
            self._next_index = index + 1
            self.frames_decoded += 1
            if index in wanted:
                out[index] = frame
        if len(out) != len(wanted):
            raise VideoError(f"{self._path}: the video ended before frame "
                             f"{max(wanted - set(out))}, which its shot list names")
        return _LazyRgb(out, self._to_rgb)

    def close(self) -> None:
        if self._frames is not None:
            self._frames.close()  # stops ffmpeg, or closes PyAV's container
            self._frames = None

    def _open(self):
        if _PyAVFrames.usable(self._path, self._max_side):
            self.decoder = "pyav"
            return _PyAVFrames(self._path, self._stall_timeout).frames()
        return self._pipe(skip=0)

    def _pipe(self, skip: int):
        self.decoder = "ffmpeg"
        frames = _pipe_frames(self._path, self._max_side, None, self._stall_timeout)
        return frames if not skip else _skipping(frames, skip)

    def _next(self):
        try:
            item = next(self._frames, None)
            if item is None and self.decoder == "pyav":
                # Asked for more than PyAV decoded: a damaged file, where the pipe
                # (ffmpeg conceals and reads on) may get further. The pipe decides.
                raise _NotLikeThePipe(f"PyAV's stream ended after frame {self._next_index - 1}")
            return item
        except _NotLikeThePipe as e:
            # Frame numbers and pixels must be the pipe's (shot lists name them): read
            # the rest through it, past the frames PyAV already gave.
            log.info("%s: %s; decoding with ffmpeg from frame %d", self._path, e, self._next_index)
            self._frames.close()
            self._frames = self._pipe(skip=self._next_index)
            return next(self._frames, None)


def _skipping(frames, n: int):
    with contextlib.closing(frames):
        for index, frame in frames:
            if index >= n:
                yield index, frame


class _NotLikeThePipe(Exception):
    """PyAV would not give iter_frames's frames from here on (or failed)."""


class _PyAVFrames:
    """A video decoded in process by PyAV (frame threads), frames left in their decoded
    form (YUV) until converted by an `_RgbConverter`.

    Used only where the result is the pipe's exactly: a regular file (a FIFO could
    stall us where the pipe's watchdog cannot reach), no downscale, and frames in 8-bit
    yuv420p of even width and height, limited range, BT.601, BT.709 or unspecified
    matrix, no rotation. There PyAV's libswscale and the ffmpeg program's convert to
    the same RGB, and both demux and decode the same frames (tests/transforms/
    test_video.py compares every frame and the counts, inside and outside these
    conditions). Any frame outside them, or any PyAV error, raises _NotLikeThePipe;
    where PyAV's stream ends, its caller decides whether to believe it."""

    _FORMATS = ("yuv420p",)
    _RANGES = (0, 1)          # unspecified, MPEG (limited)
    _MATRICES = (1, 2, 5, 6)  # BT.709, unspecified, BT.470BG, SMPTE 170M (BT.601)

    def __init__(self, path: str, stall_timeout: float):
        self._path, self._timeout = path, stall_timeout

    @staticmethod
    def usable(path: str, max_side: Optional[int], info: Optional[VideoInfo] = None) -> bool:
        try:
            import av  # noqa: F401
        except ImportError:
            return False
        try:
            if not stat.S_ISREG(os.stat(path).st_mode):
                return False
        except OSError:
            return False  # the pipe reports the missing file as it always has
        if max_side:
            try:
                info = info or probe(path)
            except VideoError:
                return False
            if output_size(info, max_side) != (info.width, info.height):
                return False
        return True

    def frames(self) -> Iterator[Tuple[int, object]]:  # (index, av.VideoFrame)
        import av
        try:
            container = av.open(self._path, timeout=self._timeout)
        except av.error.FFmpegError as e:
            raise _NotLikeThePipe(f"PyAV cannot open it ({e})") from None
        with container:
            try:
                if not container.streams.video:
                    raise _NotLikeThePipe("PyAV finds no video stream")
                stream = container.streams.video[0]  # the pipe's "v:0"
                stream.thread_type = "AUTO"
                for index, frame in enumerate(container.decode(stream)):
                    why = self._unlike_the_pipe(frame)
                    if why:
                        raise _NotLikeThePipe(why)
                    yield index, frame
            except av.error.FFmpegError as e:
                raise _NotLikeThePipe(f"PyAV failed ({e})") from None

    def _unlike_the_pipe(self, frame) -> str:
        if frame.format.name not in self._FORMATS:
            return f"pixel format {frame.format.name}"
        if frame.color_range not in self._RANGES or frame.colorspace not in self._MATRICES:
            return f"colour range {frame.color_range}, matrix {frame.colorspace}"
        if frame.rotation:
            return f"rotation {frame.rotation}"
        if frame.width % 2 or frame.height % 2:  # the two convert the odd edge differently
            return f"odd frame size {frame.width}x{frame.height}"
        return ""


class _RgbConverter:
    """PyAV frames as fresh RGB arrays, through one reformatter: PyAV's own to_ndarray()
    sets up a new libswscale context per call, ~7x the cost of the conversion itself."""

    def __init__(self):
        self._reformatter = None

    def __call__(self, frame) -> np.ndarray:
        if self._reformatter is None:
            from av.video.reformatter import VideoReformatter
            self._reformatter = VideoReformatter()
        rgb = self._reformatter.reformat(frame, format="rgb24").to_ndarray()
        return np.ascontiguousarray(rgb)  # rows can be padded: a copy only then


class _LazyRgb(Mapping):
    """{frame number: RGB uint8 HxWx3} whose PyAV frames are converted (by `to_rgb`) on
    first look: a fresh, writable, contiguous array each, kept for later looks."""

    def __init__(self, frames: dict, to_rgb):
        self._frames, self._to_rgb = frames, to_rgb

    def __getitem__(self, index: int) -> np.ndarray:
        frame = self._frames[index]
        if not isinstance(frame, np.ndarray):
            frame = self._frames[index] = self._to_rgb(frame)
        return frame

    def __iter__(self):
        return iter(self._frames)

    def __len__(self) -> int:
        return len(self._frames)
