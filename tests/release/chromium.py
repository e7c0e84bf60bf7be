"""Headless Chromium driven through the DevTools protocol over pipes (no package needed):
open a page, run JavaScript in it, wait for a condition, take a screenshot.

    with Browser(netlog=tmp / "net.json") as browser:
        browser.open("file:///.../index.html#view=examples")
        browser.wait("document.body.dataset.ready === '1'")
        browser.evaluate("document.title")
        browser.screenshot(path)

`--remote-debugging-pipe` makes Chromium read protocol messages (JSON, each ended by a
NUL byte) on its file descriptor 3 and answer on 4. The network log (`--log-net-log`)
is written when the browser exits, for the check that no request left the page.
"""
from __future__ import annotations

import base64
import json
import os
import subprocess
import time
from typing import Optional

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--disable-background-networking", "--no-first-run", "--disable-extensions",
         "--disable-component-update", "--disable-sync", "--mute-audio"]


class BrowserError(RuntimeError):
    pass


class Browser:
    def __init__(self, netlog=None, width: int = 1400, height: int = 1000):
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()
        args = ["chromium", *FLAGS, "--remote-debugging-pipe", f"--window-size={width},{height}"]
        if netlog:
            args += [f"--log-net-log={netlog}", "--net-log-capture-mode=Everything"]

        def child_fds():   # the protocol's descriptors are 3 (in) and 4 (out)
            os.dup2(to_browser_read, 3)
            os.dup2(from_browser_write, 4)

        self._process = subprocess.Popen(args + ["about:blank"], preexec_fn=child_fds, pass_fds=(3, 4),
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._id = 0
        self.size = (width, height)
        target = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self._session = self.call("Target.attachToTarget", targetId=target["targetId"],
                                  flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Runtime.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self.call("Browser.close")
            except (BrowserError, OSError):
                pass
            try:
                self._process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)

    # the protocol

    def call(self, method: str, session: bool = False, timeout: float = 60, **params) -> dict:
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def _read(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("no answer from chromium in time")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise BrowserError("chromium closed the pipe: " + self._process.stderr.read().decode()[-2000:])
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    # pages

    def open(self, url: str) -> None:
        self.call("Page.navigate", session=True, url=url)

    def evaluate(self, expression: str, timeout: float = 60):
        """The value of a JavaScript expression in the page (a promise is awaited)."""
        result = self.call("Runtime.evaluate", session=True, timeout=timeout, expression=expression,
                           awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, condition: str, timeout: float = 30) -> None:
        """Until a JavaScript expression is true in the page."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if self.evaluate(f"!!({condition})"):
                    return
            except BrowserError:
                pass   # the page is between documents
            time.sleep(0.05)
        raise BrowserError(f"not true after {timeout} s: {condition}")

    def screenshot(self, path, full_height: Optional[int] = None) -> None:
        """A PNG of the window (or of the page down to `full_height` pixels)."""
        params = {"format": "png"}
        if full_height:
            params["clip"] = {"x": 0, "y": 0, "width": self.size[0], "height": full_height, "scale": 1}
            params["captureBeyondViewport"] = True
        data = self.call("Page.captureScreenshot", session=True, **params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
