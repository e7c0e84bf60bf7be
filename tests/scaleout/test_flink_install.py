"""pipelines/scaleout/flink_install.py: what the Flink set-up fetched is exactly what
scripts/flink/sha256sums pins, the job server's launcher names its jars, and a missing
set-up or java is a one-line error that says what to run."""
import hashlib
import zipfile

import pytest

from pipelines.scaleout import flink_install
from pipelines.scaleout.flink_install import Install, SetupError


def _folder(tmp_path, files):
    for name, data in files.items():
        path = tmp_path / "lib" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return str(tmp_path / "lib")


def _sums(files, prefix="job-server/lib"):
    return {f"{prefix}/{name}": hashlib.sha256(data).hexdigest() for name, data in files.items()}


FILES = {"a-1.0.jar": b"first", "b-2.0.jar": b"second"}


def test_the_pinned_files_pass(tmp_path):
    assert flink_install.verify(_folder(tmp_path, FILES), "job-server/lib", _sums(FILES)) == []


def test_a_changed_file_fails(tmp_path):
    folder = _folder(tmp_path, {**FILES, "b-2.0.jar": b"tampered"})
    assert flink_install.verify(folder, "job-server/lib", _sums(FILES)) == [
        "job-server/lib/b-2.0.jar: sha256 differs from the pinned one"]


def test_a_file_the_list_does_not_name_fails(tmp_path):
    folder = _folder(tmp_path, {**FILES, "c-3.0.jar": b"another version resolved"})
    assert flink_install.verify(folder, "job-server/lib", _sums(FILES)) == [
        "job-server/lib/c-3.0.jar: not in the checksum list (another version resolved?)"]


def test_a_missing_file_fails(tmp_path):
    folder = _folder(tmp_path, {"a-1.0.jar": b"first"})
    assert flink_install.verify(folder, "job-server/lib", _sums(FILES)) == [
        "job-server/lib/b-2.0.jar: missing"]


def test_the_repository_pins_every_fetched_file():
    sums = flink_install.read_sums()
    assert any(name.startswith("downloads/apache-flink-libraries-1.19.0") for name in sums)
    assert f"flink-1.19.0/lib/flink-dist-1.19.0.jar" in sums
    assert "job-server/lib/beam-runners-flink-1.19-2.62.0.jar" in sums
    # the runner is built against this Flink: the cluster must run the same one
    assert "job-server/lib/flink-runtime-1.19.0.jar" in sums


def test_the_launcher_names_the_main_class_and_every_jar(tmp_path):
    names = {f"some-library-with-a-long-name-{i}.jar": b"x" for i in range(30)}
    folder = _folder(tmp_path, names)
    jar = flink_install.write_launcher(str(tmp_path), "launcher.jar")
    with zipfile.ZipFile(jar) as z:
        raw = z.read("META-INF/MANIFEST.MF").decode()
    assert all(len(line.encode()) <= 72 for line in raw.split("\r\n"))
    unfolded = raw.replace("\r\n ", "")
    fields = dict(line.split(": ", 1) for line in unfolded.split("\r\n") if line)
    assert fields["Main-Class"] == "org.apache.beam.runners.flink.FlinkJobServerDriver"
    assert sorted(fields["Class-Path"].split(" ")) == sorted(f"lib/{n}" for n in names)
    assert folder.endswith("lib")


def test_no_set_up_says_what_to_run(tmp_path):
    with pytest.raises(SetupError, match="make flink-setup"):
        Install.locate(str(tmp_path))


def test_no_java_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(SetupError, match="no java found"):
        Install.locate(str(tmp_path))
