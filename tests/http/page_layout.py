#!/usr/bin/env python3
"""Loads URL in headless Chromium with a WIDTH px wide window and prints, as JSON, what a person
would get: the rendered text (document.body.innerText), the viewport width and the document's
scroll width (wider than the viewport = a horizontal scroll bar). Talks to Chromium over the
DevTools protocol with a small WebSocket client of its own (stdlib only, nothing to install).

usage: page_layout.py URL WIDTH
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def ws_connect(url):
    assert url.startswith("ws://"), url
    hostport, path = url[5:].split("/", 1)
    host, port = hostport.split(":")
    s = socket.create_connection((host, int(port)), timeout=30)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            raise RuntimeError("websocket handshake: connection closed")
        head += chunk
    if b" 101 " not in head.split(b"\r\n", 1)[0]:
        raise RuntimeError("websocket handshake refused: " + head.decode(errors="replace"))
    return s


def ws_send(s, text):
    data = text.encode()
    mask = os.urandom(4)
    n = len(data)
    if n < 126:
        header = bytes([0x81, 0x80 | n])
    elif n < 65536:
        header = bytes([0x81, 0x80 | 126]) + n.to_bytes(2, "big")
    else:
        header = bytes([0x81, 0x80 | 127]) + n.to_bytes(8, "big")
    s.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))


def read_exact(s, n):
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise RuntimeError("websocket closed")
        out += chunk
    return out


def ws_recv(s):
    message = b""
    while True:
        b0, b1 = read_exact(s, 2)
        n = b1 & 0x7F
        if n == 126:
            n = int.from_bytes(read_exact(s, 2), "big")
        elif n == 127:
            n = int.from_bytes(read_exact(s, 8), "big")
        payload = read_exact(s, n)
        if b0 & 0x0F in (0x1, 0x0):
            message += payload
            if b0 & 0x80:
                return message.decode()


class Cdp:
    def __init__(self, ws_url):
        self.s = ws_connect(ws_url)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        ws_send(self.s, json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            m = json.loads(ws_recv(self.s))
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    def evaluate(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return r["result"].get("value")


def main():
    url, width = sys.argv[1], int(sys.argv[2])
    profile = tempfile.mkdtemp(prefix="fsaudit-chromium-")
    proc = subprocess.Popen(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", f"--window-size={width},900", url],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.time() + 60
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            if time.time() > deadline or proc.poll() is not None:
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(open(port_file).read().split()[0])
        page = None
        while page is None:
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
            page = next((t for t in targets if t.get("type") == "page"), None)
            if page is None:
                if time.time() > deadline:
                    raise RuntimeError("no page in chromium")
                time.sleep(0.1)
        cdp = Cdp(page["webSocketDebuggerUrl"])
        while cdp.evaluate("document.readyState + ' ' + location.href") != "complete " + url:
            if time.time() > deadline:
                raise RuntimeError("the page did not load")
            time.sleep(0.1)
        # Chromium keeps a window at least 500 px wide: the viewport is set to WIDTH directly, as a
        # phone's would be (media queries follow it).
        cdp.call("Emulation.setDeviceMetricsOverride", width=width, height=900, deviceScaleFactor=1, mobile=False)
        time.sleep(0.5)
        print(cdp.evaluate("JSON.stringify({inner_width: window.innerWidth, "
                           "scroll_width: document.documentElement.scrollWidth, text: document.body.innerText})"))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
