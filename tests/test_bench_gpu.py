"""bench/gpu.py --cpu-smoke: every section of the GPU benchmark runs on tiny sizes on the
CPU (as CI runs it), prints one JSON line, and its checks hold: the kNN backends return
equal lists, grouped as the pipeline groups, and the float32 error stays under the bound
the search assumes. The figures themselves are not asserted (no timed assertions)."""
import json
import os
import subprocess
import sys

from tests.paths import ROOT


def test_cpu_smoke_runs_every_section_and_its_checks_hold():
    run = subprocess.run([sys.executable, "-m", "bench.gpu", "--cpu-smoke"], cwd=ROOT,
                         capture_output=True, text=True, timeout=900,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "CUDA_VISIBLE_DEVICES": ""})
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-3000:]
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert len(lines) == 1
    report = json.loads(lines[0])
    assert report["device"] == "cpu" and report["size"] == "smoke"
    for section in ("clip", "brisque", "knn", "video"):
        assert "error" not in report[section], report[section]
    knn = report["knn"]
    assert all(knn["equal_to_reference"].values()) and "torch_cpu" in knn["equal_to_reference"]
    assert set(knn["recall_vs_reference"].values()) == {1.0}
    assert knn["grouped"]["groups"] > 1 and knn["grouped"]["equal_to_reference"]
    assert knn["float32_nonfinite_distances"] == 0, knn
    assert 0 < knn["float32_rel_error_max"] < knn["float32_rel_error_assumed"], knn
    clip = report["clip"]
    assert clip["fp32_frames_per_s"] > 0 and clip["bf16_frames_per_s"] > 0
    # bf16 really ran, and within its rounding of fp32 (0.004 on unit vectors); 0.4 or
    # NaN was work left undone (OMP_THREAD_LIMIT below torch's threads: tests/transforms/test_openmp_limit.py)
    assert 0 < clip["bf16_vs_fp32"]["max_abs_element"] < 0.05, clip
    assert report["video"]["frames"] == report["video"]["shots"] * report["video"]["frames_per_shot"]
    # the CPU against itself, in other batches: the kernels' noise (~2e-11 points), far
    # inside the published precision (1e-4 points), and the published scores equal
    brisque = report["brisque"]
    assert brisque["max_abs_score_vs_cpu"] < 1e-6 and brisque["published_scores_equal_to_cpu"], brisque
