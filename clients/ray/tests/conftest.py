"""Ray 2.60 asks every node and driver for a token, and a driver reads it
once, when ``ray`` is first imported. One is made here, before the test
modules import ``ray``, so nothing else on the machine joins the tests'
cluster."""

import os
import secrets
import tempfile
from pathlib import Path


def pytest_configure(config):
    if os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    token = Path(tempfile.mkdtemp(prefix="treenav-ray-")) / "token"
    token.write_text(secrets.token_hex(32))
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN_PATH=str(token))
