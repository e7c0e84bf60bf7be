"""Process-wide test setup.

TensorFlow (a test dependency: we read our TFRecords with tf.data) and Triton (pulled in
by torch when sentence-transformers loads) crash the process with a segfault when Triton
is imported after TensorFlow. Importing Triton first makes every test order safe.
"""
import importlib.util

if importlib.util.find_spec("triton") is not None:
    import triton  # noqa: F401
