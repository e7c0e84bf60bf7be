"""What scripts/flink/setup.sh fetched, checked, and where a run finds it.

    build/flink/flink-1.19.0/lib/*.jar, bin/bash-java-utils.jar   Flink (PyPI's
        apache-flink-libraries: Flink's jars, no start scripts, no conf/)
    build/flink/job-server/lib/*.jar   Beam's Flink 1.19 runner and its dependencies (Maven)
    build/flink/job-server/beam-runners-flink-1.19-job-server-2.62.0.jar   the launcher

The set-up calls this module to check every fetched file against scripts/flink/sha256sums
and to write the launcher:

    python -m pipelines.scaleout.flink_install verify FOLDER PREFIX
    python -m pipelines.scaleout.flink_install launcher FOLDER
"""
from __future__ import annotations

import dataclasses
import glob
import hashlib
import os
import shutil
import sys
import zipfile
from typing import Dict, List, Optional

from transforms.core.errors import UserError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLINK_VERSION = "1.19.0"            # the Flink that Beam's runner below is built against
FLINK_MINOR = "1.19"                # --flink_version
BEAM_JOB_SERVER_VERSION = "2.62.0"  # scripts/flink/pom.xml
JOB_SERVER_MAIN = "org.apache.beam.runners.flink.FlinkJobServerDriver"
JOB_SERVER_JAR = f"beam-runners-flink-{FLINK_MINOR}-job-server-{BEAM_JOB_SERVER_VERSION}.jar"
SETUP_DIR = os.environ.get("FLINK_SETUP_DIR") or os.path.join(ROOT, "build", "flink")
SUMS = os.path.join(ROOT, "scripts", "flink", "sha256sums")


class SetupError(UserError):
    """Java or the fetched jars are missing: the message says what to run."""


@dataclasses.dataclass(frozen=True)
class Install:
    """Where the set-up put Flink's jars and the job server, and the java to run them."""
    java: str
    flink_home: str
    job_server_jar: str

    @classmethod
    def locate(cls, folder: str = SETUP_DIR) -> "Install":
        java = find_java()
        flink_home = os.path.join(folder, f"flink-{FLINK_VERSION}")
        jar = os.path.join(folder, "job-server", JOB_SERVER_JAR)
        complete = glob.glob(os.path.join(folder, ".complete-*"))
        for path, what in ((os.path.join(flink_home, "lib", f"flink-dist-{FLINK_VERSION}.jar"),
                            f"Flink {FLINK_VERSION}'s jars"),
                           (jar, f"Beam's Flink job server {BEAM_JOB_SERVER_VERSION}")):
            if not os.path.isfile(path) or not complete:
                raise SetupError(f"{what}: not set up ({path} missing, or the set-up did not "
                                 "finish): run `make flink-setup` (scripts/flink/setup.sh)")
        return cls(java=java, flink_home=flink_home, job_server_jar=jar)

    def classpath(self) -> str:
        """lib/'s jars with flink-dist last, the order Flink's scripts give them."""
        jars = sorted(glob.glob(os.path.join(self.flink_home, "lib", "*.jar")))
        dist = [j for j in jars if os.path.basename(j).startswith("flink-dist")]
        return os.pathsep.join([j for j in jars if j not in dist] + dist)

    def cluster_classpath(self) -> str:
        """Flink's classpath and, after it, Beam's runner with its dependencies (the job
        server's lib/ less the Flink and SLF4J jars Flink has itself). With Beam's
        classes loaded once by the JVM rather than per job (classloader.resolve-order in
        flink.py), a TaskManager keeps a job's SDK workers from one stage to the next,
        and a long-lived cluster's metaspace does not grow by Beam's classes per job
        (apache/beam#29890)."""
        lib = os.path.join(os.path.dirname(self.job_server_jar), "lib")
        beam = [j for j in sorted(glob.glob(os.path.join(lib, "*.jar")))
                if not os.path.basename(j).startswith(("flink-", "slf4j-"))]
        return os.pathsep.join([self.classpath(), *beam])


def find_java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not java or not os.access(java, os.X_OK):
        raise SetupError("no java found (JAVA_HOME/bin/java or java on PATH): Flink "
                         f"{FLINK_VERSION} and Beam's job server need a JDK 17 (Debian: "
                         "apt-get install openjdk-17-jdk-headless)")
    return java


# --- set-up: checksums and the launcher ----------------------------------------------

def read_sums(path: str = SUMS) -> Dict[str, str]:
    """{path under build/flink/: sha256} from a sha256sum-style list (# comments)."""
    sums = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip() or line.startswith("#"):
                continue
            digest, _, name = line.rstrip("\n").partition("  ")
            if len(digest) != 64 or not name:
                raise ValueError(f"{path}:{number}: not '<sha256>  <path>'")
            sums[name] = digest
    return sums


def verify(folder: str, prefix: str, sums: Dict[str, str]) -> List[str]:
    """Problems unless `folder` holds exactly the files listed under `prefix`/, each
    with its sha256: a changed file, one the list does not name, one that is missing."""
    expected = {name[len(prefix) + 1:]: digest for name, digest in sums.items()
                if name.startswith(prefix + "/")}
    found = sorted(os.path.relpath(os.path.join(d, n), folder)
                   for d, _, names in os.walk(folder) for n in names)
    problems = [f"{prefix}/{name}: not in the checksum list (another version resolved?)"
                for name in found if name not in expected]
    problems += [f"{prefix}/{name}: missing" for name in sorted(set(expected) - set(found))]
    for name in found:
        if name in expected and _sha256(os.path.join(folder, name)) != expected[name]:
            problems.append(f"{prefix}/{name}: sha256 differs from the pinned one")
    return problems


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_launcher(folder: str, name: str = JOB_SERVER_JAR) -> str:
    """A jar holding only a manifest: the job server's main class and lib/'s jars as its
    class path, so that `java -jar` (how Beam's FlinkRunner starts a job server from
    --flink_job_server_jar) runs the runner with its dependencies. Beam's published job
    server is the same classes shaded into one jar."""
    jars = sorted(f"lib/{n}" for n in os.listdir(os.path.join(folder, "lib")) if n.endswith(".jar"))
    text = "Class-Path: " + " ".join(jars)
    # A manifest line holds at most 72 bytes; a continuation line starts with a space.
    lines = [text[:72]] + [" " + text[i:i + 71] for i in range(72, len(text), 71)]
    manifest = "\r\n".join(["Manifest-Version: 1.0", f"Main-Class: {JOB_SERVER_MAIN}",
                            *lines]) + "\r\n\r\n"
    path = os.path.join(folder, name)
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", manifest)
    return path


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 3 and argv[0] == "verify":
        problems = verify(argv[1], argv[2], read_sums())
        for problem in problems:
            print(f"flink-setup: {problem}", file=sys.stderr)
        return 1 if problems else 0
    if len(argv) == 2 and argv[0] == "launcher":
        print(write_launcher(argv[1]))
        return 0
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
