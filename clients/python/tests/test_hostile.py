"""The client against hostile servers.

No real server misbehaves on demand, so these are small raw-socket servers
on 127.0.0.1 written for the test (a mock, said so): each answers every
connection with fixed bytes, optionally trickled.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Iterator, List

import pytest

from treenav_client import TreenavClient, TreenavError


class RawServer:
    def __init__(self, reply: bytes, trickle: float = 0.0) -> None:
        self.reply = reply
        self.trickle = trickle
        self.requests: List[bytes] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                self.requests.append(conn.recv(65536))
                if self.trickle:
                    for b in self.reply:
                        if self.stop:
                            return
                        conn.sendall(bytes([b]))
                        time.sleep(self.trickle)
                else:
                    conn.sendall(self.reply)
            except OSError:
                pass

    def close(self) -> None:
        self.stop = True
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[List[RawServer]]:
    servers: List[RawServer] = []
    yield servers
    for s in servers:
        s.close()


def serve(raw: List[RawServer], reply: bytes, trickle: float = 0.0) -> RawServer:
    s = RawServer(reply, trickle)
    raw.append(s)
    return s


def http(status: str, body: bytes, headers: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"{headers}Connection: close\r\n\r\n"
    ).encode() + body


def test_a_redirect_is_not_followed_and_the_token_stays(raw: List[RawServer]) -> None:
    other = serve(raw, http("200 OK", b'{"trees": []}'))
    redirecting = serve(raw, http("302 Found", b"", f"Location: {other.url}/steal\r\n"))
    client = TreenavClient(redirecting.url, token="secret-token-123", timeout=5)
    with pytest.raises(TreenavError) as e:
        client.trees()
    assert e.value.code == "redirect"
    time.sleep(0.2)
    assert other.requests == [], "the redirect was followed"


def test_the_timeout_bounds_the_whole_call(raw: List[RawServer]) -> None:
    body = b'{"trees": []}'
    slow = serve(raw, http("200 OK", body) + b" " * 100, trickle=0.2)
    started = time.monotonic()
    with pytest.raises(TreenavError) as e:
        TreenavClient(slow.url, timeout=1.5).trees()
    assert time.monotonic() - started < 4
    assert e.value.code == "timeout" and e.value.retryable


@pytest.mark.parametrize(
    "reply",
    [
        http("200 OK", b'{"tree": "t", "passages": 7}'),  # wrong shape
        http("200 OK", b"[" * 100_000 + b"]" * 100_000),  # deep JSON
        b"GARBAGE STATUS LINE\r\n\r\n",
        http("503 Service Unavailable", b'{"error": {"code": "overloaded", "message": "x"}}', "Retry-After: nan\r\n"),
        http("200 OK", b'{"trees": []}')[:-3],  # shorter than its Content-Length
    ],
)
def test_every_failure_is_a_treenav_error(raw: List[RawServer], reply: bytes) -> None:
    s = serve(raw, reply)
    client = TreenavClient(s.url, timeout=5, retries=1)
    with pytest.raises(TreenavError):
        client.retrieve("t", "q")
    with pytest.raises(TreenavError):
        client.trees()


def test_async_calls_hold_the_same_line(raw: List[RawServer]) -> None:
    import asyncio

    other = serve(raw, http("200 OK", b'{"tree": "t", "query": "q", "passages": []}'))
    redirecting = serve(raw, http("307 Temporary Redirect", b"", f"Location: {other.url}/steal\r\n"))
    slow = serve(raw, http("200 OK", b'{"tree": "t"}') + b" " * 100, trickle=0.2)

    async def run() -> None:
        with pytest.raises(TreenavError) as e:
            await TreenavClient(redirecting.url, token="secret-token-123", timeout=5).aretrieve("t", "q")
        assert e.value.code == "redirect"
        started = time.monotonic()
        with pytest.raises(TreenavError) as e:
            await TreenavClient(slow.url, timeout=1.5).aretrieve("t", "q")
        assert e.value.code == "timeout" and time.monotonic() - started < 4

    asyncio.run(run())
    assert other.requests == []


class EchoServer(RawServer):
    """Answers ``status`` (400 by default) quoting the request it got
    (headers and all), with ``headers`` added (a mock: no real server
    echoes credentials on cue)."""

    def __init__(self, status: str = "400 Bad Request", headers: str = "", code: str = "bad", said: str = "you sent:") -> None:
        self.status, self.headers, self.code, self.said = status, headers, code, said
        super().__init__(b"")

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                request = conn.recv(65536)
                self.requests.append(request)
                quoted = request.replace(b"\\", b"\\\\").replace(b'"', b"'").replace(b"\r\n", b" | ")
                body = f'{{"error": {{"code": "{self.code}", "message": "{self.said} '.encode() + quoted + b'"}}'
                conn.sendall(http(self.status, body, self.headers))
            except OSError:
                pass


def test_no_token_or_password_reaches_an_error_or_repr(raw: List[RawServer]) -> None:
    echo = EchoServer()
    raw.append(echo)
    with_password = echo.url.replace("http://", "http://alice:pw-hunter2-xyz@")
    for client in [
        TreenavClient(echo.url, token="tok-secret-12345", timeout=5),
        TreenavClient(with_password, timeout=5),
    ]:
        shown = repr(client)
        with pytest.raises(TreenavError) as e:
            client.trees()
        shown += f" {e.value} {e.value.message!r} {e.value!r}"
        assert "you sent" in shown, "the echo did not reach the error"
        for secret in ["tok-secret-12345", "pw-hunter2-xyz", "YWxpY2U6cHctaHVudGVyMi14eXo"]:
            assert secret not in shown, shown
    # The password was sent, as Basic auth, and the URL carries none.
    assert any(b"Authorization: Basic YWxpY2U6cHctaHVudGVyMi14eXo" in r for r in echo.requests)
    assert TreenavClient(with_password).base_url == echo.url


def test_a_trickling_server_never_starves_another_client(raw: List[RawServer]) -> None:
    body = b'{"trees": []}'
    slow = serve(raw, http("200 OK", body) + b" " * 200, trickle=0.05)
    healthy = serve(raw, http("200 OK", b'{"version": 1, "trees": []}'))
    stuck = TreenavClient(slow.url, timeout=1.0)
    errors: List[str] = []

    def hammer() -> None:
        try:
            stuck.trees()
        except TreenavError as e:
            errors.append(e.code)

    threads = [threading.Thread(target=hammer) for _ in range(48)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    started = time.monotonic()
    assert TreenavClient(healthy.url, timeout=3).trees() == []
    assert time.monotonic() - started < 2
    for t in threads:
        t.join()
    assert errors and set(errors) == {"timeout"}


def test_async_calls_share_one_connection_pool(raw: List[RawServer], monkeypatch: pytest.MonkeyPatch) -> None:
    """Each ``httpx.AsyncClient`` costs the event loop 50–150 ms to make:
    32 concurrent calls make one, not 32."""
    import asyncio

    httpx = pytest.importorskip("httpx")
    made: List[int] = []

    class Counting(httpx.AsyncClient):  # type: ignore[misc]
        def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(httpx, "AsyncClient", Counting)
    ok = serve(raw, http("200 OK", b'{"tree": "t", "query": "q", "passages": []}'))
    client = TreenavClient(ok.url, timeout=5)

    async def run() -> None:
        found = await asyncio.gather(*(client.aretrieve("t", "q") for _ in range(32)), return_exceptions=True)
        assert not [f for f in found if isinstance(f, BaseException)], found
        await client.aclose()

    asyncio.run(run())
    assert len(made) == 1


def test_a_busy_server_echoing_credentials_is_scrubbed_on_every_path(raw: List[RawServer]) -> None:
    """#66 row 3: the retry wait past the deadline raised the server's
    message unscrubbed."""
    import asyncio

    busy = EchoServer("503 Service Unavailable", "Retry-After: 100\r\n", "overloaded", "busy; you sent")
    raw.append(busy)
    with_password = busy.url.replace("http://", "http://user:pa55word-xyz@")
    secrets = ["tok-secret-12345", "pa55word-xyz", "dXNlcjpwYTU1d29yZC14eXo"]
    for client in [
        TreenavClient(busy.url, token="tok-secret-12345", timeout=5),
        TreenavClient(with_password, timeout=5),
    ]:
        with pytest.raises(TreenavError) as e:
            client.retrieve("t", "q")
        shown = f"{e.value} {e.value.message!r} {e.value!r}"
        assert "you sent" in shown and e.value.status == 503, shown
        try:
            asyncio.run(client.aretrieve("t", "q"))
        except TreenavError as ae:
            shown += f" {ae} {ae.message!r}"
        for secret in secrets:
            assert secret not in shown, shown


class SleepyServer(RawServer):
    """Reads a request, notes when it came, answers after ``delay`` s."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.arrived: List[float] = []
        super().__init__(b"")

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                self.requests.append(conn.recv(65536))
                self.arrived.append(time.monotonic())
                time.sleep(self.delay)
                conn.sendall(http("200 OK", b'{"tree": "t", "removed": 1}'))
            except OSError:
                pass


def test_a_call_whose_caller_gave_up_is_never_sent(raw: List[RawServer]) -> None:
    """#66 row 9: 40 callers with a 2 s timeout against a server answering
    in 6 s; requests queued behind the busy workers reached the server after
    their callers had their timeout."""
    sleepy = SleepyServer(6.0)
    raw.append(sleepy)
    client = TreenavClient(sleepy.url, timeout=2)
    codes: List[str] = []
    started = time.monotonic()

    def delete() -> None:
        try:
            client.delete_documents("t", ["a"])
        except TreenavError as e:
            codes.append(e.code)

    threads = [threading.Thread(target=delete) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Each caller has its error at its deadline (a worker's own socket
    # timeout at the same instant says "transport").
    assert len(codes) == 40 and set(codes) <= {"timeout", "transport"}, codes
    time.sleep(3)
    late = [round(a - started, 2) for a in sleepy.arrived if a - started > 1.0]
    assert not late, f"{len(late)} requests reached the server after their callers gave up: {late}"
