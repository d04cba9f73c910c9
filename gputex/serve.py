"""``gputex serve --stdio``: JSON lines in, JSON lines out, one warm :class:`~gputex.Converter`.

Request (one JSON object a line)::

    {"id": 1, "command": "capture", "inputs": ["a.png"], "out": "out/", "mips": true, "level": "all"}

``command`` is ``capture`` or ``upload`` (or ``key``: ``{"command": "key", "for": "capture",
"inputs": [...], ...settings}`` answers each input's cache key, as ``gputex key``, converting
nothing); ``inputs`` and ``out`` are what the CLI takes as
arguments and ``-o``; every other key is a long option of that command with dashes as
underscores (:mod:`gputex.settings`), plus ``"key": true`` for each result's cache key. An
input may be ``{"name": "a.png", "data": "<base64>"}`` (bytes, no file); ``"out": "-"``
returns the outputs base64-encoded in each result's ``data`` (name -> base64) instead.

Reply (one JSON object a line, in the order requests complete, with the request's id)::

    {"id": 1, "ok": true, "results": [{"source": "a.png", "ok": true, "outputs": [...], ...}]}

``ok`` is false when any input failed (each result says why) or the request itself is bad
(then ``error`` says why, and there are no results): a line that is not JSON, not an object,
names an unknown command or option, or gives a bad value gets one error reply and the server
goes on. Requests run concurrently (``requests`` at a time, default the thread cap: a build
sending one file per request still keeps every core busy), their GPU steps taking turns on
the one device and their codec work sharing the Converter's pool. End of input: the requests in flight finish, then exit 0. SIGTERM / SIGINT:
reading stops, requests in flight stop between inputs (their replies say so, every output
written is whole), exit 0.

The protocol owns stdout: the server moves file descriptor 1 to a private descriptor and
points 1 at stderr, so chatter from C libraries can never corrupt a reply.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, TextIO

from .errors import GputexError

__all__ = ["Server", "serve_stdio", "MAX_LINE"]

#: Longest request line (base64 inputs included).
MAX_LINE = 1 << 30


class BadRequest(GputexError, ValueError):
    """A request line that cannot be run (the reply's ``error``)."""


def parse_request(line: bytes, lineno: int) -> tuple[Any, dict]:
    """``(id, request)`` from one line, or BadRequest naming the line and the problem.
    ``id`` is returned as far as it could be read (None otherwise)."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(f"line {lineno}: not UTF-8 ({e.reason} at byte {e.start})") from None
    if not text.strip():
        raise BadRequest(f"line {lineno}: empty request")
    try:
        req = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadRequest(f"line {lineno}: not JSON ({str(e).splitlines()[0][:200]})") from None
    if not isinstance(req, dict):
        raise BadRequest(f"line {lineno}: a request is a JSON object, got {type(req).__name__}")
    rid = req.get("id")
    if isinstance(rid, (dict, list)):
        raise BadRequest(f"line {lineno}: id must be a string, number or null")
    return rid, req


def _inputs(raw: Any, lineno: int) -> list:
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise BadRequest(f"line {lineno}: inputs must be a non-empty list")
    out: list = []
    for n, x in enumerate(raw):
        if isinstance(x, str) and x:
            if x == "-":
                raise BadRequest(f"line {lineno}: input {n}: '-' (paths on stdin) is not available in serve")
            out.append(x)
        elif isinstance(x, dict) and set(x) <= {"name", "data"} and isinstance(x.get("data"), str):
            name = x.get("name", f"input{n}")
            if not isinstance(name, str) or not name:
                raise BadRequest(f"line {lineno}: input {n}: name must be a non-empty string")
            try:
                out.append((name, base64.b64decode(x["data"], validate=True)))
            except (binascii.Error, ValueError) as e:
                raise BadRequest(f"line {lineno}: input {n} ({name}): data is not base64 ({e})") from None
        else:
            raise BadRequest(f"line {lineno}: input {n}: a path, or {{\"name\": ..., \"data\": base64}}")
    return out


class Server:
    """Runs requests on a :class:`~gputex.Converter` and writes one reply line each to ``out``."""

    def __init__(self, converter, out: TextIO, requests: int = 2):
        self.conv = converter
        self.out = out
        self._write = threading.Lock()
        self.stop = threading.Event()
        self.pool = ThreadPoolExecutor(max(1, requests), thread_name_prefix="gputex-request")
        self.lines = 0

    def reply(self, d: dict) -> None:
        text = json.dumps(d, separators=(",", ":"))
        with self._write:
            self.out.write(text + "\n")
            self.out.flush()

    def submit(self, line: bytes) -> None:
        """Handle one request line: bad ones are answered at once, good ones run in the pool."""
        self.lines += 1
        lineno = self.lines
        rid = None
        try:
            rid, req = parse_request(line, lineno)
            command = req.get("command")
            if command == "key":
                self._submit_key(rid, req, lineno)
                return
            if command not in ("capture", "upload"):
                raise BadRequest(f"line {lineno}: command must be 'capture', 'upload' or 'key', got {command!r}")
            inputs = _inputs(req.get("inputs"), lineno)
            out = req.get("out")
            if out is not None and (not isinstance(out, str) or not out):
                raise BadRequest(f"line {lineno}: out must be a non-empty string")
            settings = {k: v for k, v in req.items() if k not in ("id", "command", "inputs", "out")}
            if "key" in settings and not isinstance(settings["key"], bool):
                raise BadRequest(f"line {lineno}: key must be true or false")
            # settings are checked here, before the request is queued: a bad one is a reply now
            results = self.conv.convert(inputs, command, out, **settings)
        except GputexError as e:
            self.reply({"id": rid, "ok": False, "error": _line_error(e, lineno)})
            return
        except Exception as e:  # noqa: BLE001 (a request must never end the server)
            self.reply({"id": rid, "ok": False, "error": f"line {lineno}: {type(e).__name__}: {e}"})
            return
        self.pool.submit(self._run, rid, results, lineno)

    def _submit_key(self, rid, req: dict, lineno: int) -> None:
        """``{"command": "key", "for": "capture", "inputs": [paths], ...settings}``: the cache key
        of each input (as ``gputex key``), without converting."""
        command = req.get("for", "capture")
        if command not in ("capture", "upload"):
            raise BadRequest(f"line {lineno}: for must be 'capture' or 'upload', got {command!r}")
        inputs = _inputs(req.get("inputs"), lineno)
        if not all(isinstance(i, str) for i in inputs):
            raise BadRequest(f"line {lineno}: key takes paths")
        out = req.get("out")
        if out is not None and (not isinstance(out, str) or not out):
            raise BadRequest(f"line {lineno}: out must be a non-empty string")
        settings = {k: v for k, v in req.items() if k not in ("id", "command", "for", "inputs", "out")}
        from .settings import make_options

        make_options(command, settings, out=out)  # a bad setting is a reply now

        def run() -> None:
            try:
                pairs = self.conv.keys(inputs, command, out, **settings)
                self.reply({"id": rid, "ok": True, "results": [{"source": s, "key": k} for s, k in pairs]})
            except GputexError as e:
                self.reply({"id": rid, "ok": False, "error": _line_error(e, lineno)})
            except Exception as e:  # noqa: BLE001
                self.reply({"id": rid, "ok": False, "error": f"line {lineno}: internal error: {type(e).__name__}: {e}"})

        self.pool.submit(run)

    def _run(self, rid, results, lineno: int) -> None:
        done: list[dict] = []
        error = None
        if self.stop.is_set():  # queued behind others when the server was told to stop
            self.reply({"id": rid, "ok": False, "error": f"line {lineno}: not run (server shutting down)"})
            return
        try:
            for r in results:
                d = r.as_dict()
                if r.data is not None:
                    d["data"] = {k: base64.b64encode(v).decode() for k, v in r.data.items()}
                done.append(d)
                if self.stop.is_set():
                    break
            if self.stop.is_set():
                results.close()
                error = f"line {lineno}: stopped (server shutting down) after {len(done)} result(s)"
        except GputexError as e:
            error = _line_error(e, lineno)
        except Exception as e:  # noqa: BLE001
            error = f"line {lineno}: internal error: {type(e).__name__}: {e}"
        reply = {"id": rid, "ok": error is None and all(d.get("ok") for d in done), "results": done}
        if error:
            reply["error"] = error
        self.reply(reply)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def _line_error(e: Exception, lineno: int) -> str:
    msg = str(e)
    return msg if msg.startswith("line ") else f"line {lineno}: {msg}"


def serve_stdio(converter, stdin: BinaryIO | None = None, requests: int = 2) -> int:
    """Serve requests from ``stdin`` (default: the process's) until EOF or SIGTERM/SIGINT."""
    proto = _take_stdout()
    server = Server(converter, proto, requests)
    stream = stdin if stdin is not None else sys.stdin.buffer

    class _Terminated(Exception):
        pass

    reading = [False]

    def on_signal(signum, frame) -> None:
        server.stop.set()
        if reading[0]:  # only a blocked read is interrupted; anywhere else the loop sees ``stop``
            raise _Terminated

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGTERM, signal.SIGINT):
            previous[s] = signal.signal(s, on_signal)
    try:
        _ = converter.session  # the device first: no adapter is exit code 3 before any request
        try:
            while not server.stop.is_set():
                reading[0] = True
                try:
                    line = stream.readline(MAX_LINE)
                finally:
                    reading[0] = False
                if not line:
                    break
                server.submit(line[:-1] if line.endswith(b"\n") else line)
        except _Terminated:
            pass
        server.close()  # requests in flight finish (after SIGTERM/SIGINT: between inputs)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    return 0


def _take_stdout() -> TextIO:
    """A private stream for replies; descriptor 1 then points at stderr."""
    sys.stdout.flush()
    try:
        fd = os.dup(1)
        os.dup2(2, 1)
    except OSError:
        return sys.stdout
    sys.stdout = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace", buffering=1)
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)
