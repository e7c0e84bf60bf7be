"""A Flink session cluster of separate JVMs on this machine, and how a build runs on it.

    python -m pipelines cluster start [--taskmanagers 2] [--dir build/flink/cluster]
    python -m pipelines cluster status|stop [--dir ...]

The cluster is what Flink's own start scripts would run, started without them (PyPI's
apache-flink-libraries ships Flink's jars but no scripts and no conf/): one JobManager
(StandaloneSessionClusterEntrypoint), N TaskManagers (TaskManagerRunner), each its own
JVM with the memory flags Flink's BashJavaUtils computes from the config, as the scripts
get them, and one Python worker pool for the TaskManagers' SDK workers
(pipelines/scaleout/workers.py). Config, logs and pids live in one folder.

A supervisor process (`cluster supervise`, which `start` runs) keeps N TaskManagers
running: a standalone cluster has no resource manager to replace a lost one, and a job
restarted without its slots would wait for them. A replacement that cannot start ends
the supervision; a job then fails once its slot requests time out (Settings.config).

A build submits to it through Beam's Flink job server, which the Python FlinkRunner
starts from a local jar for the length of the build (`beam_options`). What the set-up
fetches, once, is in scripts/flink/setup.sh; docs/scale-out.md has the recipe for a
cluster this module did not start.
"""
from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from typing import Dict, List, Optional, Set

from pipelines.scaleout import workers
from pipelines.scaleout.flink_install import FLINK_MINOR, FLINK_VERSION, SETUP_DIR, Install
from transforms.core.errors import UserError

DEFAULT_CLUSTER_DIR = os.path.join(SETUP_DIR, "cluster")

# Flink 1.19 on Java 17 needs these opened (the `env.java.opts.all` of the config.yaml
# Flink's distribution ships, which apache-flink-libraries does not).
JAVA_17_OPTIONS = [
    *(f"--add-exports={m}=ALL-UNNAMED" for m in (
        "java.base/sun.net.util", "java.rmi/sun.rmi.registry",
        "jdk.compiler/com.sun.tools.javac.api", "jdk.compiler/com.sun.tools.javac.file",
        "jdk.compiler/com.sun.tools.javac.parser", "jdk.compiler/com.sun.tools.javac.tree",
        "jdk.compiler/com.sun.tools.javac.util", "java.security.jgss/sun.security.krb5")),
    *(f"--add-opens=java.base/{p}=ALL-UNNAMED" for p in (
        "java.lang", "java.net", "java.io", "java.nio", "sun.nio.ch", "java.lang.reflect",
        "java.text", "java.time", "java.util", "java.util.concurrent",
        "java.util.concurrent.atomic", "java.util.concurrent.locks")),
]

JOBMANAGER_CLASS = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASKMANAGER_CLASS = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
BASH_JAVA_UTILS_CLASS = "org.apache.flink.runtime.util.bash.BashJavaUtils"
RESULT_PREFIX = "BASH_JAVA_UTILS_EXEC_RESULT:"
ENVIRONMENT_CACHE_MS = 60_000


@dataclasses.dataclass
class Settings:
    """What a local cluster is started with. Memory is sized for a 2-core machine."""
    taskmanagers: int = 2
    rest_port: int = 8081
    pool_port: int = 50000
    slots_per_taskmanager: int = 1
    jobmanager_memory: str = "1024m"
    taskmanager_memory: str = "1536m"
    restart_attempts: int = 10
    restart_delay_s: int = 15
    slot_request_timeout_s: int = 60

    def config(self, folder: str) -> Dict[str, str]:
        return {
            "jobmanager.rpc.address": "localhost",
            "jobmanager.rpc.port": str(workers.free_port()),
            "jobmanager.bind-host": "localhost",
            "taskmanager.bind-host": "localhost",
            "taskmanager.host": "localhost",
            "rest.address": "localhost",
            "rest.bind-address": "localhost",
            "rest.port": str(self.rest_port),
            "jobmanager.memory.process.size": self.jobmanager_memory,
            "taskmanager.memory.process.size": self.taskmanager_memory,
            "taskmanager.numberOfTaskSlots": str(self.slots_per_taskmanager),
            # A build is one job of a few hundred operators sharing a slot, and each
            # blocking result partition (a sort-merge shuffle) takes at least
            # sort-shuffle.min-buffers network buffers of 32 kB: with Flink's defaults
            # (512 each, ~110 MB of network memory) the job fails "Insufficient number
            # of network buffers". Fewer per partition, more memory for them, less
            # managed memory (Beam's batch operators use little of it).
            "taskmanager.network.sort-shuffle.min-buffers": "64",
            "taskmanager.memory.network.min": "256m",
            "taskmanager.memory.network.max": "256m",
            "taskmanager.memory.managed.fraction": "0.2",
            "parallelism.default": "2",
            # Beam's runner keeps a reference to the job's class loader after the job
            # (apache/beam#20783): Flink's check would fail the next job.
            "classloader.check-leaked-classloader": "false",
            # Beam's classes from the cluster's classpath, not the job's jars: Beam's Flink
            # runner keeps a job's environments (its SDK workers) between the job's stages
            # only when its classes come from Flink's own class loader; otherwise every
            # stage starts and stops a Python worker per TaskManager. Parent-first for all
            # classes: with Beam alone parent-first, a joda-time or protobuf class of the
            # job's jars meets its twin of the classpath (ClassCastException).
            "classloader.resolve-order": "parent-first",
            # A lost TaskManager or worker restarts the job (Beam leaves the strategy to
            # the cluster); a build that still fails publishes nothing. The restarts span
            # 150 s: until the JobManager has dropped a lost TaskManager, a restart reads
            # the lost results from it again and fails; a replacement takes ~30 s to
            # register, more on a loaded machine (6 restarts, 90 s, were once not enough
            # while the test suite ran beside the cluster). Heartbeats every 2 s: an
            # unreachable TaskManager is dropped after two failed ones
            # (heartbeat.rpc-failure-threshold), not after Flink's 50 s.
            "heartbeat.interval": "2000",
            "heartbeat.timeout": "20000",
            "restart-strategy.type": "fixed-delay",
            "restart-strategy.fixed-delay.attempts": str(self.restart_attempts),
            "restart-strategy.fixed-delay.delay": f"{self.restart_delay_s} s",
            # A job that lacks slots (a TaskManager lost and not replaced: the supervisor
            # gave up) fails after this long instead of Flink's 5 minutes, and is
            # restarted as above: a build fails within attempts x (delay + timeout),
            # ~12.5 minutes, not 11 x 5 minutes with its subtasks SCHEDULED and no message.
            # A replacement registers in ~30 s, well within it.
            "slot.request.timeout": str(self.slot_request_timeout_s * 1000),
            "io.tmp.dirs": os.path.join(folder, "tmp"),
            "web.tmpdir": os.path.join(folder, "tmp", "web"),
            "env.java.opts.all": " ".join(JAVA_17_OPTIONS),
        }


LOG4J = """\
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = MainAppender
appender.main.name = MainAppender
appender.main.type = File
appender.main.fileName = ${sys:log.file}
appender.main.append = true
appender.main.layout.type = PatternLayout
appender.main.layout.pattern = %d{yyyy-MM-dd HH:mm:ss,SSS} %-5p %-60c %x - %m%n
"""


class LocalCluster:
    """A JobManager, TaskManagers, a worker pool and a supervisor, as processes of their
    own session (they outlive the command that started them), with everything in
    `folder`: conf/, <process>.log (Flink's log), <process>.out (stdout and stderr),
    <process>.pid, sdk-worker-<n>.log, supervisor.log and cluster.json (Settings).
    A process that died keeps its pid file (`lost`) until the cluster stops."""

    def __init__(self, folder: str = DEFAULT_CLUSTER_DIR, install: Optional[Install] = None,
                 settings: Optional[Settings] = None):
        self.folder = os.path.abspath(folder)
        self._install = install
        self.settings = settings or self._saved_settings() or Settings()
        # {name: process} this object started: their handles say whether they run, and
        # polling them reaps them (none stays a zombie)
        self._children: Dict[str, subprocess.Popen] = {}

    @property
    def install(self) -> Install:
        """Located when first needed: stopping a cluster needs no jars."""
        if self._install is None:
            self._install = Install.locate()
        return self._install

    # --- state ---------------------------------------------------------------------

    @property
    def conf_dir(self) -> str:
        return os.path.join(self.folder, "conf")

    @property
    def rest_address(self) -> str:
        return f"localhost:{self.settings.rest_port}"

    @property
    def pool_address(self) -> str:
        return f"localhost:{self.settings.pool_port}"

    def _saved_settings(self) -> Optional[Settings]:
        try:
            with open(os.path.join(self.folder, "cluster.json")) as f:
                return Settings(**json.load(f))
        except (OSError, ValueError, TypeError):
            return None

    def pids(self) -> Dict[str, int]:
        """{process name: pid} of this cluster's processes that are alive."""
        alive = {}
        for path in sorted(glob.glob(os.path.join(self.folder, "*.pid"))):
            name = os.path.basename(path)[:-4]
            try:
                with open(path) as f:
                    pid = int(f.read().strip())
            except (OSError, ValueError):
                continue
            if self._running(name, pid):
                alive[name] = pid
        for child in self._children.values():
            child.poll()
        return alive

    def _running(self, name: str, pid: int) -> bool:
        child = self._children.get(name)
        if child is not None and child.pid == pid:
            return child.poll() is None
        return self._is_ours(pid)

    def lost(self) -> List[str]:
        """The processes that have a pid file but are no longer running (crashed, killed)."""
        alive = self.pids()
        return sorted(name for name in self._names() if name not in alive)

    def _is_ours(self, pid: int) -> bool:
        """The pid is alive and runs with this folder on its command line (a pid file
        outliving its process must not make us signal a stranger that reused the pid).
        A JVM's command line reads empty for a moment after it starts (java's launcher
        executes itself again): read it again, unless the process is a zombie."""
        for _ in range(50):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read()
                if cmdline:
                    return self.folder.encode() in cmdline
                with open(f"/proc/{pid}/stat", "rb") as f:
                    if f.read().rpartition(b")")[2].split()[0] == b"Z":
                        return False
            except (OSError, IndexError):
                return False
            time.sleep(0.01)
        return False

    # --- starting -------------------------------------------------------------------

    def start(self, taskmanagers: Optional[int] = None, timeout_s: float = 180.0) -> None:
        """Start everything, wait until the JobManager counts the TaskManagers
        (`taskmanagers`, else the settings'), then start the supervisor."""
        if taskmanagers is not None:
            self.settings = dataclasses.replace(self.settings, taskmanagers=taskmanagers)
        if self.pids():
            raise UserError(f"a cluster is already running from {self.folder} "
                            f"({', '.join(self.pids())}): stop it first")
        for name in self._names():  # left by a cluster that crashed: nothing runs
            os.remove(self._pid_file(name))
        for port, what in ((self.settings.rest_port, "the JobManager's REST port"),
                           (self.settings.pool_port, "the worker pool's port")):
            if workers.port_open(port):
                raise UserError(f"{what} {port} is taken: another Flink or pool runs here; "
                                "pick others (--rest-port, --pool-port)")
        self._write_conf()
        try:
            self.start_pool(wait=False)
            self._start_jvm("jobmanager", JOBMANAGER_CLASS, self._resources("GET_JM_RESOURCE_PARAMS"),
                            ["--executionMode", "cluster"])
            for _ in range(self.settings.taskmanagers):
                self.add_taskmanager(wait=False)
            workers.wait_for_port(self.settings.pool_port, None, timeout_s, "the worker pool")
            self._wait(lambda: len(self.taskmanagers()) >= self.settings.taskmanagers, timeout_s,
                       f"{self.settings.taskmanagers} TaskManagers did not register",
                       started=self._names())
            self.start_supervisor()
        except BaseException:
            self.stop()
            raise

    def start_pool(self, wait: bool = True, timeout_s: float = 60.0) -> None:
        """Start the worker pool (also a replacement for one that died)."""
        pool = workers.start_pool(self.settings.pool_port, self.folder, detach=True)
        self._children["worker-pool"] = pool
        self._write_pid("worker-pool", pool.pid)
        if wait:
            workers.wait_for_port(self.settings.pool_port, pool, timeout_s, "the worker pool")

    def add_taskmanager(self, wait: bool = True, timeout_s: float = 180.0) -> str:
        """Start one more TaskManager JVM (a replacement after a loss); returns its name.
        `wait`: until a TaskManager the JobManager did not know before registers (a
        lost one may still be listed, or be dropped meanwhile: counting would not do)."""
        names = [n for n in self._names() if n.startswith("taskmanager-")]
        name = f"taskmanager-{1 + max([int(n.split('-')[1]) for n in names] or [0])}"
        known = {tm["id"] for tm in self.taskmanagers()}
        self._start_jvm(name, TASKMANAGER_CLASS, self._resources("GET_TM_RESOURCE_PARAMS"), [])
        if wait:
            self._wait(lambda: {tm["id"] for tm in self.taskmanagers()} - known,
                       timeout_s, f"{name} did not register", started=[name])
        return name

    def start_supervisor(self) -> None:
        """Start the supervisor (`supervise`) as a process of its own session."""
        with open(os.path.join(self.folder, "supervisor.log"), "ab") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "pipelines", "cluster", "supervise", "--dir", self.folder],
                cwd=self.folder, env=workers.pool_environment(), stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._children["supervisor"] = process
        self._write_pid("supervisor", process.pid)

    def supervise(self, poll_s: float = 1.0) -> int:
        """Keep settings.taskmanagers TaskManagers running: start one in the place of each
        that is lost, and wait until it registers. Runs until stopped (`stop`); returns 1
        if a replacement does not start or register: then a job lacking its slots fails
        after slot.request.timeout, and nothing restarts it in a loop."""
        wanted = self.settings.taskmanagers
        print(f"{_now()} supervising {self.folder}: {wanted} TaskManagers", flush=True)
        replaced: Set[str] = set()
        while True:
            running = [n for n in self.pids() if n.startswith("taskmanager-")]
            if len(running) < wanted:
                gone = sorted(n for n in self.lost() if n.startswith("taskmanager-")
                              and n not in replaced)
                replaced.update(gone)
                try:
                    name = self.add_taskmanager()
                except RuntimeError as error:
                    print(f"{_now()} {', '.join(gone) or 'a TaskManager'} lost, and its "
                          f"replacement failed: {error}; supervision ends", flush=True)
                    return 1
                print(f"{_now()} {', '.join(gone) or 'a TaskManager'} lost: {name} started "
                      "in its place and registered", flush=True)
            time.sleep(poll_s)

    def _names(self) -> List[str]:
        """Every process that has a pid file, alive or not."""
        return [os.path.basename(p)[:-4] for p in glob.glob(os.path.join(self.folder, "*.pid"))]

    def _pid_file(self, name: str) -> str:
        return os.path.join(self.folder, name + ".pid")

    def _write_conf(self) -> None:
        os.makedirs(self.conf_dir, exist_ok=True)
        os.makedirs(os.path.join(self.folder, "tmp", "web"), exist_ok=True)
        with open(os.path.join(self.conf_dir, "config.yaml"), "w") as f:
            for key, value in self.settings.config(self.folder).items():
                f.write(f"{key}: {json.dumps(value)}\n")
        with open(os.path.join(self.conf_dir, "log4j.properties"), "w") as f:
            f.write(LOG4J)
        with open(os.path.join(self.folder, "cluster.json"), "w") as f:
            json.dump(dataclasses.asdict(self.settings), f, indent=1)

    def _resources(self, command: str) -> "Resources":
        """JVM flags and dynamic properties from Flink's BashJavaUtils, as its scripts do."""
        utils = os.path.join(self.install.flink_home, "bin", "bash-java-utils.jar")
        run = subprocess.run(
            [self.install.java, "-classpath", utils + os.pathsep + self.install.classpath(),
             BASH_JAVA_UTILS_CLASS, command, "--configDir", self.conf_dir],
            capture_output=True, text=True, timeout=120)
        results = [line[len(RESULT_PREFIX):] for line in run.stdout.splitlines()
                   if line.startswith(RESULT_PREFIX)]
        if run.returncode != 0 or len(results) != 2:
            raise RuntimeError(f"Flink's BashJavaUtils {command} failed ({run.returncode}): "
                               + (run.stderr or run.stdout).strip()[-2000:])
        return Resources(jvm=results[0].split(), dynamic=results[1].split())

    def _start_jvm(self, name: str, main_class: str, resources: "Resources",
                   arguments: List[str]) -> None:
        command = [self.install.java, *resources.jvm, *JAVA_17_OPTIONS,
                   f"-Dlog.file={os.path.join(self.folder, name + '.log')}",
                   f"-Dlog4j.configuration=file:{self.conf_dir}/log4j.properties",
                   f"-Dlog4j.configurationFile=file:{self.conf_dir}/log4j.properties",
                   "-classpath", self.install.cluster_classpath(), main_class,
                   "--configDir", self.conf_dir, *arguments, *resources.dynamic]
        with open(os.path.join(self.folder, name + ".out"), "ab") as out:
            process = subprocess.Popen(command, cwd=self.folder, stdin=subprocess.DEVNULL,
                                       stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self._children[name] = process
        self._write_pid(name, process.pid)

    def _write_pid(self, name: str, pid: int) -> None:
        with open(self._pid_file(name), "w") as f:
            f.write(f"{pid}\n")

    # --- REST -----------------------------------------------------------------------

    def rest(self, path: str, method: str = "GET", timeout_s: float = 10.0):
        return rest(self.rest_address, path, method, timeout_s)

    def taskmanagers(self) -> List[dict]:
        """The TaskManagers registered with the JobManager ([] while it is not up)."""
        try:
            return self.rest("/taskmanagers").get("taskmanagers", [])
        except OSError:
            return []

    def _wait(self, done, timeout_s: float, failure: str, started: List[str]) -> None:
        """Until `done()`; an error as soon as one of the processes `started` for it exits
        (only those: one lost before, its pid file left, is no start failure)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if done():
                return
            alive = self.pids()
            dead = [n for n in started if n not in alive]
            if dead:
                raise RuntimeError(f"{', '.join(dead)} exited on start: see "
                                   + ", ".join(os.path.join(self.folder, n + ".out") for n in dead))
            time.sleep(0.5)
        raise RuntimeError(f"{failure} in {timeout_s:.0f} s (logs in {self.folder})")

    # --- stopping -------------------------------------------------------------------

    def kill(self, name: str, with_children: bool = False) -> None:
        """SIGKILL one process of the cluster: a fault, no goodbye; its pid file stays,
        as after a crash. `with_children` kills its session too (the worker pool with
        its workers, as a lost machine)."""
        pid = self.pids().get(name)
        if pid is None:
            raise ValueError(f"no running process {name!r} in {self.folder}")
        if with_children:
            _signal_session(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while self._running(name, pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # until the kernel has ended it (and this object reaped it)

    def stop(self, grace_s: float = 20.0) -> List[str]:
        """SIGTERM every process, the supervisor first (it would replace the TaskManagers
        being stopped), then the TaskManagers; SIGKILL what outlives `grace_s`; a killed
        pool's workers go with its session. Returns the names stopped."""
        stopped = self._stop(["supervisor"], grace_s)
        alive = self.pids()  # the supervisor may have started a TaskManager meanwhile
        stopped += self._stop(sorted(alive, key=lambda n: (n == "worker-pool", n == "jobmanager", n)),
                              grace_s)
        for name in self._names():
            os.remove(self._pid_file(name))
        return stopped

    def _stop(self, names: List[str], grace_s: float) -> List[str]:
        alive = {name: pid for name, pid in self.pids().items() if name in names}
        for name in names:
            if name in alive:
                _signal_session(alive[name], signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(self._running(n, p) for n, p in alive.items()):
            time.sleep(0.2)
        for name, pid in alive.items():
            if self._running(name, pid):
                _signal_session(pid, signal.SIGKILL)
        self.pids()  # reaps what this object started
        return [name for name in names if name in alive]

    # --- what a build on this cluster passes to Beam --------------------------------

    def beam_options(self, parallelism: int = 2) -> List[str]:
        return beam_options(self.rest_address, self.pool_address, self.install, parallelism)


def _now() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


@dataclasses.dataclass
class Resources:
    jvm: List[str]
    dynamic: List[str]


def _signal_session(pid: int, signum: int) -> None:
    """Signal the process and, for the worker pool, the workers of its session."""
    try:
        os.killpg(pid, signum)      # each process leads its own session (start_new_session)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, signum)


def beam_options(flink_master: str, pool_address: str, install: Install,
                 parallelism: int = 2) -> List[str]:
    """The Beam options of a build on a Flink cluster: the job server from the local jar
    (nothing downloaded at run time), SDK workers from the worker pool, kept for a minute
    after a stage so that the next stage reuses them (environment_cache_millis)."""
    return ["--runner=FlinkRunner", f"--flink_master={flink_master}",
            f"--flink_version={FLINK_MINOR}", f"--flink_job_server_jar={install.job_server_jar}",
            "--environment_type=EXTERNAL", f"--environment_config={pool_address}",
            f"--parallelism={parallelism}", f"--environment_cache_millis={ENVIRONMENT_CACHE_MS}"]


def rest(address: str, path: str, method: str = "GET", timeout_s: float = 10.0):
    """One call to a Flink REST API (`address` host:port or a URL); the JSON answer."""
    base = address if "://" in address else f"http://{address}"
    request = urllib.request.Request(base.rstrip("/") + path, method=method)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # localhost: no proxy
    with opener.open(request, timeout=timeout_s) as answer:
        body = answer.read()
    return json.loads(body) if body else {}


def job_named(address: str, name: str) -> Optional[dict]:
    """The newest job of that name in /jobs/overview (jid, name, state, ...), or None."""
    jobs = [j for j in rest(address, "/jobs/overview").get("jobs", []) if j.get("name") == name]
    return max(jobs, key=lambda j: j.get("start-time", 0)) if jobs else None


def taskmanagers_of_job(address: str, jid: str) -> Dict[str, Set[str]]:
    """{vertex name: ids of the TaskManagers its subtasks ran on}."""
    placed = {}
    for vertex in rest(address, f"/jobs/{jid}").get("vertices", []):
        answer = rest(address, f"/jobs/{jid}/vertices/{vertex['id']}/taskmanagers")
        placed[vertex["name"]] = {tm["taskmanager-id"] for tm in answer.get("taskmanagers", [])}
    return placed


# --- the command line -----------------------------------------------------------------

def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines cluster",
        description="A local Flink session cluster of separate JVMs (a JobManager, N "
                    "TaskManagers) and a Python worker pool; docs/scale-out.md. `supervise` "
                    "(which `start` runs) keeps N TaskManagers running.")
    parser.add_argument("action", choices=["start", "stop", "status", "supervise"])
    parser.add_argument("--dir", default=DEFAULT_CLUSTER_DIR,
                        help="config, logs and pids (default: build/flink/cluster)")
    parser.add_argument("--taskmanagers", type=int, default=Settings.taskmanagers)
    parser.add_argument("--rest-port", type=int, default=Settings.rest_port)
    parser.add_argument("--pool-port", type=int, default=Settings.pool_port)
    args = parser.parse_args(argv)
    try:
        if args.action == "start":
            cluster = LocalCluster(args.dir, settings=Settings(taskmanagers=args.taskmanagers,
                                                               rest_port=args.rest_port,
                                                               pool_port=args.pool_port))
            started = time.monotonic()
            cluster.start()
            print(f"Flink {FLINK_VERSION}: JobManager and {args.taskmanagers} TaskManagers up in "
                  f"{time.monotonic() - started:.0f} s (web UI http://{cluster.rest_address}); "
                  f"logs and pids in {cluster.folder}\nbuild on it with:\n  "
                  + " ".join(cluster.beam_options()))
        elif args.action == "supervise":
            return LocalCluster(args.dir).supervise()
        elif args.action == "stop":
            stopped = LocalCluster(args.dir).stop()
            print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        else:
            cluster = LocalCluster(args.dir)
            alive = cluster.pids()
            print("\n".join(f"{name}: pid {pid}" for name, pid in alive.items())
                  or f"nothing running from {cluster.folder}")
            for name in cluster.lost():
                print(f"{name}: lost (not running; its pid file is kept until `stop`; logs "
                      f"{os.path.join(cluster.folder, name)}.out and .log)")
            if alive:
                print(f"TaskManagers registered: {len(cluster.taskmanagers())}")
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
