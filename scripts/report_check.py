#!/usr/bin/env python3
"""Open an HTML report of scripts/report.py in headless Chromium and check it.

Drives Debian's `chromium` over the DevTools protocol on a pipe
(`--remote-debugging-pipe`, no extra package): loads the page from disk with
the network cut off, waits until the report says every chart is drawn, and
prints one JSON object:

  load_seconds        navigation start to the last chart drawn (the page's
                      own performance.now() when it finished)
  wall_seconds        the same seen from outside: Page.navigate to ready
  console_errors      console.error / uncaught exceptions / failed loads
  requests            URLs the page tried to fetch other than itself
  charts              per graph, the algorithm names that have a trace
  screenshot_colors   distinct colours among sampled pixels of the screenshot
  size_bytes          the file's size

    scripts/report_check.py report.html [--screenshot shot.png] [--runs 3]

Exit status: 0 when the page rendered with no console error and no outside
request, 1 otherwise, 2 on bad usage or when Chromium cannot be started.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

from rematbench import script


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """A headless Chromium spoken to over --remote-debugging-pipe: fd 3 is
    its input, fd 4 its output, messages are JSON ended by a NUL byte."""

    def __init__(self, chromium, width=1280, height=900):
        self.profile = tempfile.mkdtemp(prefix="remat-report-check-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # The child reads fd 3 and writes fd 4: move its ends there (dup2
        # makes them inheritable, every other descriptor of ours is not,
        # PEP 446, so close_fds=False passes only these).
        def child_fds():
            # Copies first: a pipe end may already sit at 3 or 4.
            read_end, write_end = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu",
             "--remote-debugging-pipe", f"--user-data-dir={self.profile}",
             "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", f"--window-size={width},{height}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=child_fds,
            close_fds=False)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None, timeout=60):
        self._next_id += 1
        message = {"id": self._next_id, "method": method,
                   "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]
            self.events.append(answer)

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except (OSError, EOFError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


# Reads what the report states about itself once drawn (scripts/report.py
# sets window.rematReport = {ready_ms, charts: {graph: [algorithms]}} when
# its last chart is drawn, window.rematReportError on a failure).
READY = """new Promise((resolve) => {
  const poll = () => {
    if (window.rematReportError) resolve({error: String(window.rematReportError)});
    else if (window.rematReport && window.rematReport.ready_ms !== undefined)
      resolve(window.rematReport);
    else setTimeout(poll, 10);
  };
  poll();
})"""


def png_colors(png, samples=4000):
    """Distinct RGB colours among about `samples` pixels of a PNG (8-bit RGB
    or RGBA, as Chromium writes them), without an imaging library."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        kind = png[pos + 4:pos + 8]
        data = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    width = int.from_bytes(header[0:4], "big")
    height = int.from_bytes(header[4:8], "big")
    depth, color_type = header[8], header[9]
    if depth != 8 or color_type not in (2, 6):
        raise ValueError(f"PNG type {color_type}/{depth} not handled")
    channels = 3 if color_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        line = raw[y * (stride + 1):(y + 1) * (stride + 1)]
        kind, row = line[0], bytearray(line[1:])
        for i in range(stride):
            a = row[i - channels] if i >= channels else 0
            b = previous[i]
            c = previous[i - channels] if i >= channels else 0
            if kind == 1:
                row[i] = (row[i] + a) & 255
            elif kind == 2:
                row[i] = (row[i] + b) & 255
            elif kind == 3:
                row[i] = (row[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                row[i] = (row[i] + (a if pa <= pb and pa <= pc
                                    else b if pb <= pc else c)) & 255
        rows.append(bytes(row))
        previous = row
    step = max(1, int((width * height / samples) ** 0.5))
    colors = set()
    for y in range(0, height, step):
        for x in range(0, width, step):
            colors.add(rows[y][x * channels:x * channels + 3])
    return len(colors)


def check(chromium, path, screenshot=None, timeout=60, full_page=False):
    """One cold load of `path` in a fresh browser: the figures above."""
    browser = Browser(chromium)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})
        session = browser.send("Target.attachToTarget", {
            "targetId": target["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            browser.send(f"{domain}.enable", session=session)
        # Offline: any request the page makes beyond itself fails, and is
        # listed below.
        browser.send("Network.emulateNetworkConditions", {
            "offline": True, "latency": 0, "downloadThroughput": -1,
            "uploadThroughput": -1}, session=session)
        url = "file://" + os.path.abspath(path)
        start = time.monotonic()
        browser.send("Page.navigate", {"url": url}, session=session)
        state = browser.send("Runtime.evaluate", {
            "expression": READY, "awaitPromise": True, "returnByValue": True,
            "timeout": timeout * 1000}, session=session,
            timeout=timeout)["result"].get("value") or {}
        wall = time.monotonic() - start
        # Let late console messages arrive.
        browser.send("Runtime.evaluate", {"expression": "1"}, session=session)
        capture = {"format": "png"}
        if full_page:
            size = browser.send("Page.getLayoutMetrics",
                                session=session)["cssContentSize"]
            capture.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"],
                "height": min(size["height"], 16000), "scale": 1})
        shot = browser.send("Page.captureScreenshot", capture,
                            session=session)
        png = base64.b64decode(shot["data"])
        if screenshot:
            with open(screenshot, "wb") as f:
                f.write(png)
        errors, requests = [], []
        for event in browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and \
                    params.get("type") in ("error", "assert"):
                errors.append("console.error: " + " ".join(
                    str(a.get("value", a.get("description", "")))
                    for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                errors.append("exception: " + str(
                    details.get("exception", {}).get("description")
                    or details.get("text")))
            elif method == "Log.entryAdded" and \
                    params.get("entry", {}).get("level") == "error":
                errors.append("log: " + params["entry"].get("text", ""))
            elif method == "Network.requestWillBeSent":
                request_url = params.get("request", {}).get("url", "")
                if request_url != url and not request_url.startswith("data:"):
                    requests.append(request_url)
        if "error" in state:
            errors.append("report: " + state["error"])
        return {
            "file": path,
            "size_bytes": os.path.getsize(path),
            "load_seconds": (state["ready_ms"] / 1000
                             if "ready_ms" in state else None),
            "wall_seconds": round(wall, 3),
            "console_errors": errors,
            "requests": requests,
            "charts": state.get("charts", {}),
            "screenshot_colors": png_colors(png),
            "chromium": subprocess.run([chromium, "--version"],
                                       capture_output=True,
                                       text=True).stdout.strip(),
        }
    finally:
        browser.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", help="an HTML file from scripts/report.py")
    parser.add_argument("--screenshot", help="write the first load's "
                        "screenshot (PNG) here")
    parser.add_argument("--full-page", action="store_true",
                        help="screenshot the whole page, not the first "
                        "screen (at most 16,000 pixels high)")
    parser.add_argument("--runs", type=script.positive_count, default=1,
                        help="cold loads, each in a fresh browser (default 1)")
    parser.add_argument("--timeout", type=script.positive, default=60,
                        help="seconds to wait for the page (default 60)")
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("report_check: no chromium on PATH (Debian: apt-get install "
              "chromium)", file=sys.stderr)
        return 2
    if not os.path.isfile(args.report):
        print(f"report_check: {args.report}: no such file", file=sys.stderr)
        return 2
    runs = []
    for i in range(args.runs):
        try:
            runs.append(check(chromium, args.report,
                              args.screenshot if i == 0 else None,
                              args.timeout, args.full_page))
        except (OSError, EOFError, TimeoutError, RuntimeError) as e:
            print(f"report_check: {args.report}: chromium: {e}",
                  file=sys.stderr)
            return 2
    result = dict(runs[0])
    loads = [r["load_seconds"] for r in runs if r["load_seconds"] is not None]
    result["load_seconds_runs"] = loads
    result["wall_seconds_runs"] = [r["wall_seconds"] for r in runs]
    if loads:
        result["load_seconds"] = sorted(loads)[len(loads) // 2]  # median
    result["console_errors"] = sorted({e for r in runs
                                       for e in r["console_errors"]})
    with open("/proc/loadavg") as f:
        result["load_average"] = [float(v) for v in f.read().split()[:3]]
    print(json.dumps(result, indent=1))
    ok = (not result["console_errors"] and not result["requests"]
          and result["load_seconds"] is not None)
    return 0 if ok else 1


if __name__ == "__main__":
    script.run(main)
