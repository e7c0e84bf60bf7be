"""Process-wide test setup.

TensorFlow (a test dependency: we read our TFRecords with tf.data) and Triton (pulled in
by torch when sentence-transformers loads) crash the process with a segfault when Triton
is imported after TensorFlow. Importing Triton first makes every test order safe.
"""
import importlib.util

if importlib.util.find_spec("triton") is not None:
    import triton  # noqa: F401

import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "slow: tens of CPU seconds (worker processes, full-size models): "
                   "left out of `make test-quick`, run by `make test`")


@pytest.fixture(scope="session")
def sample_release(tmp_path_factory):
    """`sample_release(benchmark, config)`: the folder of that sample's version 1.0.0, built
    in process once per test session (into its own output folder, beside which a test may
    publish more versions) and shared by the tests that read it: tests/test_conformance.py
    and tests/release/check/test_reproducible.py."""
    built = {}

    def release(name: str, config: str) -> str:
        if (name, config) not in built:
            from pipelines import build, registry
            out = tmp_path_factory.mktemp(f"conformance-{name}-{config}")
            built[name, config] = build.build(registry.load(name), [
                "--config", config, "--output", str(out), "--version", "1.0.0"])
        return built[name, config]
    return release
