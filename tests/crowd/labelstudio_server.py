"""A Label Studio server for a test: started from `.venv-labelstudio/` (make
labelstudio-setup) as a subprocess on a free loopback port, with its own data folder and
a known admin token, offline; talked to over HTTP only (the project never imports it).

    with LabelStudio(tmp_path) as ls:
        project = ls.post("/api/projects", {"title": "validation", "label_config": xml})
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from tests.paths import ROOT

VENV = os.path.join(str(ROOT), ".venv-labelstudio")
EXECUTABLE = os.path.join(VENV, "bin", "label-studio")
ADMIN, PASSWORD, TOKEN = "admin@example.com", "test-password-1", "0123456789abcdef0123456789abcdef01234567"
STARTUP_LIMIT_S = 300   # a guard against a hung server, not a measurement


def available() -> bool:
    return os.access(EXECUTABLE, os.X_OK)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabelStudio:
    def __init__(self, data_dir):
        self.data_dir = str(data_dir)
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process = None

    def environment(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
        env.update({
            "LABEL_STUDIO_BASE_DATA_DIR": self.data_dir,
            "LABEL_STUDIO_USERNAME": ADMIN, "LABEL_STUDIO_PASSWORD": PASSWORD,
            "LABEL_STUDIO_USER_TOKEN": TOKEN,
            # the token above is a legacy one (Label Studio 1.23 issues JWTs otherwise)
            "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
            # offline: no analytics, no version check, no error reports to Sentry
            "COLLECT_ANALYTICS": "false", "LATEST_VERSION_CHECK": "false",
            "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "",
            "LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true",
            "DJANGO_DB": "sqlite", "LOG_LEVEL": "WARNING",
        })
        return env

    def __enter__(self):
        log = open(os.path.join(self.data_dir, "server.log"), "wb")
        self._process = subprocess.Popen(
            [EXECUTABLE, "start", "--no-browser", "--internal-host", "127.0.0.1", "--port", str(self.port),
             "--data-dir", self.data_dir],
            env=self.environment(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"label-studio exited ({self._process.returncode}): {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"label-studio did not answer /health: {self.log_tail()}")
            time.sleep(1)

    def log_tail(self) -> str:
        with open(os.path.join(self.data_dir, "server.log"), "rb") as f:
            return f.read()[-3000:].decode("utf-8", "replace")

    def __exit__(self, *exc):
        if self._process is not None and self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)   # its own session: the server and its children
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()

    def request(self, method: str, path: str, body=None, raw: bool = False):
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Token {TOKEN}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                payload = r.read()
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read()[:500]!r}") from None
        return payload if raw else json.loads(payload or b"null")

    def post(self, path, body):
        return self.request("POST", path, body)

    def export(self, project: int) -> bytes:
        """The project's JSON export with its annotators named by email (an export
        snapshot, as docs/crowd.md has the requester make it), as downloaded."""
        made = self.post(f"/api/projects/{project}/exports",
                         {"serialization_options": {"annotations__completed_by": {"only_id": False}}})
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while self.get(f"/api/projects/{project}/exports/{made['id']}").get("status") != "completed":
            if time.monotonic() > deadline:
                raise RuntimeError(f"export {made['id']} of project {project} did not complete")
            time.sleep(0.5)
        return self.get(f"/api/projects/{project}/exports/{made['id']}/download?exportType=JSON", raw=True)

    def get(self, path, raw=False):
        return self.request("GET", path, raw=raw)
