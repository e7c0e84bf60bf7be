"""The paper-scale table (bench/paper_scale.py) is arithmetic on measured rates: check the
arithmetic on rates chosen so each figure is known by hand."""
import json

from bench.paper_scale import gpu_rates, main, paper_scale

CPU = {"machine": {"cores": 2, "cpu": "test"}, "commit": "test",
       "video": {"frames": 100, "int8": {"cpu_ms_per_frame": 100.0, "embedding_share": 0.5,
                                         "brisque_evaluations": 10}},
       "static": {"decode_cpu_ms_per_picture": 10.0, "embed_int8_cpu_ms_per_picture": 90.0}}
GPU = {"device": "test", "clip_fp16_frames_per_s": 1000.0, "brisque_frames_per_s": 100.0,
       "knn_1m_10k_queries_s": 2.0}


def seconds(text):
    value, unit = text.replace(",", "").split()
    return float(value) * (3600 if unit == "h" else 60)


def test_each_figure_is_its_formula():
    rows = {row[0].split(":")[0] if row[0].startswith("video frames") else row[0]: row for row in paper_scale(CPU, GPU, {"a": 1.0}, 10, "int8", 5, 4, 2)}
    frames = 1.0 * 3600 * 10                                  # 36,000 frames
    assert rows["video frames"][0] == "video frames: 36,000"
    video = rows["video stage"]
    assert abs(seconds(video[2]) - frames * 0.100 / 2) < 60          # 100 CPU ms a frame on 2 cores
    # on the GPU machine: the CPU's rest (100 - 50 embedding - 1.79 BRISQUE ms) on 16 cores
    # against the GPU's embedding (frames / 1000) + BRISQUE (a tenth of the frames / 100)
    rest = frames * (100 - 50 - 17.9 * 10 / 100) / 1000 / 16
    gpu = frames / 1000 + frames * 0.1 / 100
    assert abs(seconds(video[3]) - max(rest, gpu)) < 6
    assert abs(seconds(video[4]) - frames * 0.100 / 20) < 6          # 5 workers x 4 cores
    static = rows["static sets: decode + embed 1.74M pictures"]
    assert abs(seconds(static[2]) - 1_740_000 * 0.100 / 2) < 360


def test_it_prints_a_markdown_table(tmp_path, capsys):
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(CPU))
    assert main(["--cpu", str(path), "--hours", "a=1", "--fps", "10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("| part | formula | this machine (2 cores)")
    assert len(lines) == 3 + 6 and all(line.startswith("| ") for line in lines[3:])


def test_the_encoders_set_up_once_a_worker_is_left_out_of_the_rate():
    """int8's quantisation (tens of CPU s a worker) is a third of a bench build's CPU and
    nothing a frame at the paper's size."""
    with_setup = dict(CPU, encoder={"int8": {"setup_cpu_s": 5.0}})    # 50 ms a frame of 100
    plain, paid = (paper_scale(c, GPU, {"a": 1.0}, 10, "int8", 5, 4, 2) for c in (CPU, with_setup))
    video = {row[0]: row for row in paid}["video stage"]
    assert abs(seconds(video[2]) - 36_000 * 0.050 / 2) < 60
    assert seconds(video[2]) < seconds({row[0]: row for row in plain}["video stage"][2])


def test_a_gpu_report_is_read_by_bench_gpus_own_keys(tmp_path):
    """The keys bench/gpu.py writes (a full-size report's shape), the kNN brought to 10k
    queries against 1M vectors."""
    report = {"device": "cuda", "gpu": "NVIDIA H200", "commit": "abc1234",
              "clip": {"fp32_frames_per_s": 1190.0, "fp16_frames_per_s": 7769.0},
              "brisque": {"scores_frames_per_s": 652.0, "features_frames_per_s": 580.0},
              "knn": {"n": 500_000, "queries": 5_000, "torch_cpu_s": 20.0, "torch_cuda_s": 0.5}}
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(report))
    rates = gpu_rates(str(path))
    assert rates["device"] == "NVIDIA H200 (bench/gpu.py at abc1234)"
    assert (rates["clip_fp16_frames_per_s"], rates["brisque_frames_per_s"]) == (7769.0, 652.0)
    assert rates["knn_1m_10k_queries_s"] == 0.5 * 2 * 2
