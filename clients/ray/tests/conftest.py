"""Ray 2.60 asks every node and driver for a token, and a driver reads it
once, when ``ray`` is first imported. One is made here, before the test
modules import ``ray``, so nothing else on the machine joins the tests'
cluster. The cluster itself (a head and a worker node on 127.0.0.1) is
started once for every test module that asks for it."""

import os
import secrets
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest


def pytest_configure(config):
    if os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    token = Path(tempfile.mkdtemp(prefix="treenav-ray-")) / "token"
    token.write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def cluster():
    import ray

    port = free_port()
    # The cluster asks for the token pytest_configure made.
    assert os.environ.get("RAY_AUTH_MODE") == "token", "conftest.py sets the token"
    # Serve's proxy gets 5 s to say it is ready: too few on a busy 2-core
    # machine (it is killed and restarted without end).
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S="60",
               RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S="60")
    common = ["--num-cpus", "1", "--object-store-memory", str(200 * 1024 * 1024), "--disable-usage-stats"]
    head = ["ray", "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port),
            "--include-dashboard", "false", *common]
    worker = ["ray", "start", "--address", f"127.0.0.1:{port}", "--node-ip-address", "127.0.0.1", *common]
    try:
        for command in (head, worker):
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
            assert done.returncode == 0, f"{' '.join(command)}:\n{done.stderr[-800:]}"
        ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
        nodes = [n for n in ray.nodes() if n["Alive"]]
        assert len(nodes) == 2, f"a head and a worker, got {len(nodes)} nodes"
        yield
    finally:
        ray.shutdown()
        subprocess.run(["ray", "stop", "--force"], capture_output=True, env=env, timeout=180)
