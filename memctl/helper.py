"""A helper process for work that holds the GIL, so that a second CPU takes part of it (issue 25).

The helper is this Python running one module's `_serve`, with this process's module search path
(not multiprocessing's spawn, which runs the calling program's main module again in the child: a
script that calls memctl.api without a `__main__` guard would start a second dream there). A
thread of this process writes it its items, pickled a batch at a time, while this process goes on;
its reply is read once, in steps that let a stop (a signal, the run's deadline) end the wait
(`reply`), or by a thread as it comes (`drain`, `available`), and is never unpickled: each user
parses and checks it, and does the work itself when the helper cannot start, dies, hangs or
answers anything else. Not in a frozen executable or an interpreter
embedded in another program, whose executable is not a Python to run, and not off POSIX (the
reply is waited for with poll() on a pipe).

Used by `memctl.embed.stored.Decoding` (stored vectors) and `memctl.text.wordings` (wording keys).
"""

from __future__ import annotations

import os
import pickle
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional, Sequence


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def runnable_python() -> bool:
    """Whether sys.executable is a Python interpreter this process may start a helper with."""
    if getattr(sys, "frozen", False) or not sys.executable or os.name != "posix":  # poll() on pipes: POSIX only
        return False
    # the file's name is an identifier, not text: "python", "python3", "python3.11", "pypy3"
    return Path(sys.executable).name.lower().rstrip("0123456789.") in ("python", "pypy")


def serve_code(module: str) -> str:
    """The code a helper runs: argv[1:] is this process's module search path (sys.path)."""
    return f"import sys; sys.path[:] = sys.argv[1:]; from {module} import _serve; _serve()"


class Helper:
    """One helper process running `code`, fed `items` `per` to a pickle by a thread; `reply()` reads its answer.

    `running` is False when it could not start (the caller does the work itself).
    """

    def __init__(self, code: str, items: Sequence[Any], per: int, name: str) -> None:
        self.process: Optional[subprocess.Popen] = None
        self.feeder: Optional[threading.Thread] = None
        self.drainer: Optional[threading.Thread] = None
        self.drained: list[bytes] = []
        self.name = name
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", code, *(p for p in sys.path if isinstance(p, str))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
            )
        except OSError:
            return
        # One write per pickle, which waits for the pipe without the GIL: a write per pickle
        # frame would wait for the GIL thousands of times behind this process's own work (14 s
        # instead of 10 s for 100k stored vectors). For the same reason a reply is read once, or
        # in chunks of up to 1 MiB by a thread that waits without the GIL (`drain`).
        feeder = threading.Thread(target=_feed, args=(self.process.stdin, list(items), per), name=name, daemon=True)
        try:
            feeder.start()
        except RuntimeError:  # no thread left: the caller does it all
            self.close()
            return
        self.feeder = feeder

    @property
    def running(self) -> bool:
        return self.process is not None and self.feeder is not None

    def reply(self, deadline: float) -> Optional[bytes]:
        """Return the helper's whole reply (b"" if it hung past `deadline`, time.monotonic), or None
        when the pipe could not be waited on or read. The helper is ended either way."""
        try:
            if not self.running:
                return None
            try:
                return _read_all(self.process, deadline)  # type: ignore[arg-type]
            except (OSError, ValueError):
                return None
        finally:
            self.close()

    def drain(self) -> None:
        """Read the helper's output from now on in a thread, as it comes (see `available`).

        A pipe holds 64 KiB: a helper that writes more than that before its reply is read would
        wait for it, doing nothing, so one that answers as it goes is read by a thread. Each
        read waits for the pipe without the GIL.
        """
        if self.process is None or self.process.stdout is None or self.drainer is not None:
            return
        drainer = threading.Thread(target=self._drain, args=(self.process.stdout.fileno(),), name=self.name + "-out", daemon=True)
        try:
            drainer.start()
        except RuntimeError:  # no thread left: read when asked only
            return
        self.drainer = drainer

    def _drain(self, fd: int) -> None:
        try:
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                self.drained.append(chunk)  # list.append is atomic: `available` takes whole chunks
        except OSError:  # closed by `close`
            pass
        self.drained.append(b"")  # the end

    def available(self) -> tuple[bytes, bool]:
        """Return what the drained helper (`drain`) wrote since the last call, without waiting, and whether its output has ended."""
        if self.drainer is None:
            return b"", True
        taken = []
        while self.drained:
            taken.append(self.drained.pop(0))
        return b"".join(taken), b"" in taken

    def close(self) -> None:
        """End the helper, if any (a stop while waiting, a helper that lingers, a caller that gives up)."""
        process, feeder, drainer, self.process, self.feeder, self.drainer = self.process, self.feeder, self.drainer, None, None, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        if drainer is not None:
            drainer.join(5)  # its read ends once the helper is gone: before the pipe is closed under it
        for stream in (process.stdin, process.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass
        if feeder is not None:
            feeder.join(5)  # ended: its pipe is broken once the helper is gone


def read_items(stream: Any) -> Any:
    """In the helper: yield each pickled batch written by `_feed` until the pipe ends."""
    while True:
        try:
            yield pickle.load(stream)
        except EOFError:
            return


def _feed(stream: Any, items: list[Any], per: int) -> None:
    """Write the helper its items, `per` to a pickle (a thread of this process); a helper gone meanwhile ends it.

    An item that cannot be pickled ends the feed there: the helper answers what it was given
    (its user does the rest), as it does when its input ends early for any other reason.
    """
    try:
        for start in range(0, len(items), per):
            view = memoryview(pickle.dumps(items[start : start + per], protocol=pickle.HIGHEST_PROTOCOL))
            while view:
                view = view[stream.write(view):]  # an unbuffered pipe: one system call, the GIL released
    except (OSError, ValueError):  # a broken pipe: the helper died or was ended
        pass
    except (pickle.PicklingError, TypeError, AttributeError, RecursionError):  # not picklable
        pass
    try:
        stream.close()
    except (OSError, ValueError):
        pass


def _read_all(helper: subprocess.Popen, deadline: float) -> bytes:
    """Read the helper's reply to its end, in steps that let a signal's handler run (a stop).

    Ends when the pipe is closed, once the helper has exited and nothing more is waiting
    (another process may hold a copy of the pipe's write end), or at `deadline` (time.monotonic):
    a helper stuck for that long has its part done by the caller.
    """
    chunks = []
    fd = helper.stdout.fileno()  # type: ignore[union-attr]
    waiter = select.poll()
    waiter.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    while time.monotonic() < deadline:
        if not waiter.poll(200):
            if helper.poll() is not None and not waiter.poll(0):
                return b"".join(chunks)
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
    return b""
