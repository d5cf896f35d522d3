"""Starts a real `treenav serve` on 127.0.0.1 for the tests.

The binary is $TREENAV_BIN, else target/release/treenav, else
target/debug/treenav of this checkout (the Rust test that runs this suite
sets TREENAV_BIN).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List

import pytest

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "python-test-token-0123456789"


def _binary() -> Path:
    env = os.environ.get("TREENAV_BIN")
    candidates = [Path(env)] if env else [ROOT / "target/release/treenav", ROOT / "target/debug/treenav"]
    for c in candidates:
        if c.is_file():
            return c
    pytest.exit(f"no treenav binary (tried {', '.join(map(str, candidates))}); build it or set TREENAV_BIN", 2)


class Serving:
    def __init__(self, args: List[str], env: dict) -> None:
        self.process = subprocess.Popen(
            [str(_binary()), "serve", "--addr", "127.0.0.1:0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line.startswith("listening on "):
            self.process.kill()
            raise RuntimeError(f"treenav serve did not start: {line!r}")
        self.base_url = line[len("listening on "):]

    def stop(self) -> None:
        self.process.terminate()  # SIGTERM: a graceful shutdown
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture(scope="session")
def tree_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trees") / "sample.tree"
    subprocess.run([str(_binary()), "build", "-o", str(path)], check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def notes_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Notes with metadata (tenant, year, lang, tags): the filter tests' tree."""
    path = tmp_path_factory.mktemp("trees") / "notes.tree"
    corpus = ROOT / "tests/fixtures/notes-metadata.jsonl"
    subprocess.run([str(_binary()), "build", str(corpus), "-o", str(path)], check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def scratch_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tree of its own for the tests that add and remove documents."""
    path = tmp_path_factory.mktemp("trees") / "scratch.tree"
    subprocess.run([str(_binary()), "build", "--embedder", "tfidf", "-o", str(path)], check=True, capture_output=True)
    return path


@pytest.fixture(scope="session")
def server(tree_file: Path, notes_file: Path, scratch_file: Path) -> Iterator[str]:
    args = ["--tree", f"sample={tree_file}", "--tree", f"notes={notes_file}", "--tree", f"scratch={scratch_file}"]
    s = Serving(args, dict(os.environ))
    yield s.base_url
    s.stop()


@pytest.fixture(scope="session")
def guarded_server(tree_file: Path) -> Iterator[str]:
    env = dict(os.environ, TREENAV_TEST_TOKENS=TOKEN)
    s = Serving(["--tree", f"sample={tree_file}", "--auth-token-env", "TREENAV_TEST_TOKENS"], env)
    yield s.base_url
    s.stop()
