"""A tree built in parts, served as one on Ray Serve.

Each part (``treenav build CORPUS --part I/N -o part-I.tree``, a complete
tree over its slice, with its own lexical index and vectors) is a Ray Serve
deployment whose replicas each run ``treenav serve`` over that part on a
loopback port and forward to it; a router deployment takes ``treenav
serve``'s HTTP API, asks every part at once through their handles and
merges their passages by score (``parts.merge_retrievals``). More replicas
of a part add throughput; more parts add size.

    treenav-ray serve --part part-0.tree --part part-1.tree --part part-2.tree \\
        --name corpus --port 8000 --replicas 1

The part files must be readable at the same path on every node that may
run a replica (a shared folder, as the build's ``--work``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import select
import signal
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .parts import SHARED_BUDGET, first_error, merge_retrievals, merge_trees, setting_default, share_budget

# Bodies the router reads (as `treenav serve --max-body-bytes`' default).
MAX_BODY = 1 << 20
# What a part may answer: 64 passages of a batch of 64, with texts.
MAX_PART_REPLY = 64 << 20
# One part's answer (a batch of 64 under treenav serve's 30 s deadline).
PART_TIMEOUT = 120.0
# How long a part's `treenav serve` may take to load its tree and judge.
START_TIMEOUT = 300.0
LISTENING = re.compile(r"listening on (http://\S+)")


def _error(code: str, message: str) -> Dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class TreePart:
    """One part: a ``treenav serve`` process over the part's tree, forwarded to."""

    def __init__(self, index: int, name: str, tree: str, treenav: str, serve_args: Sequence[str]):
        self.index = index
        command = [treenav, "serve", "--tree", f"{name}={tree}", "--addr", "127.0.0.1:0", *serve_args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        self.base = self._wait_listening(command)
        # Whatever else it prints is read, so a full pipe never stops it.
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        self.session = None

    def _wait_listening(self, command: List[str]) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        out = self.process.stdout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([out], [], [], 1.0)
            if ready:
                line = out.readline()
                if not line and self.process.poll() is not None:
                    break
                found = LISTENING.search(line)
                if found:
                    return found.group(1)
            elif self.process.poll() is not None:
                break
        self.process.kill()
        raise RuntimeError(
            f"part {self.index}: `{' '.join(command)}` did not start serving "
            f"(exit {self.process.poll()}; its stderr is in this replica's log)"
        )

    async def forward(self, method: str, path: str, body: Optional[bytes],
                      authorization: Optional[str] = None) -> Tuple[int, Dict[str, Any]]:
        """The part's (status, JSON body) for one request (``authorization``:
        the client's header, passed on: the parts check tokens)."""
        import aiohttp

        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=PART_TIMEOUT))
        headers = {"content-type": "application/json"} if body is not None else {}
        if authorization is not None:
            headers["authorization"] = authorization
        try:
            async with self.session.request(method, self.base + path, data=body, headers=headers) as reply:
                raw = await _read_bounded(reply.content, MAX_PART_REPLY)
                if raw is None:
                    return 502, _error("part_reply_too_large", f"part {self.index}: over {MAX_PART_REPLY} bytes")
                try:
                    return reply.status, json.loads(raw) if raw else {}
                except ValueError:
                    return 502, _error("part_reply_not_json", f"part {self.index}: {raw[:200]!r}")
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            return 503, _error("part_unavailable", f"part {self.index}: {type(e).__name__}: {e}")

    def check_health(self) -> None:
        """Ray Serve's health check: a replica whose server died is replaced."""
        if self.process.poll() is not None:
            raise RuntimeError(f"part {self.index}: treenav serve exited with {self.process.returncode}")

    def __del__(self) -> None:
        process = getattr(self, "process", None)
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)


async def _read_bounded(stream, limit: int) -> Optional[bytes]:
    """A reply's whole body, or None past ``limit`` bytes (a stream's
    ``read(n)`` returns what has arrived, not n bytes: read to the end)."""
    chunks, size = [], 0
    while True:
        chunk = await stream.read(1 << 16)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)


def _host_allowed(host: str, allowed: Sequence[str]) -> bool:
    """As ``treenav serve``: an IP address, localhost, or a name given
    (``Host`` with or without a port; an IPv6 address in brackets)."""
    if host.startswith("["):
        name = host[1:host.find("]")] if "]" in host else host
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name in ("localhost", *allowed):
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


class Router:
    """``treenav serve``'s HTTP API over every part (see the module docs)."""

    def __init__(self, *parts, allow_hosts: Sequence[str] = (), allow_origins: Sequence[str] = ()):
        self.parts = parts
        self.budget: Optional[int] = None  # the parts' default explore_budget, read once
        self.allow_hosts = tuple(allow_hosts)
        self.allow_origins = tuple(allow_origins)

    async def _all(self, method: str, path: str, body: Optional[bytes], auth: Optional[str] = None):
        calls = [part.forward.remote(method, path, body, auth) for part in self.parts]
        return await asyncio.gather(*calls)

    def _refused(self, request) -> Optional[Tuple[int, Dict[str, Any]]]:
        host = request.headers.get("host", "")
        if not _host_allowed(host, self.allow_hosts):
            return 403, _error("host_not_allowed", f"Host `{host[:100]}` is not an IP address, localhost or an --allow-host name")
        origin = request.headers.get("origin")
        if request.method != "GET" and origin is not None:
            own = f"http://{host}"
            if origin not in (own, *self.allow_origins):
                return 403, _error("origin_not_allowed", "a cross-site request (Origin) is refused: give --allow-origin")
        return None

    async def __call__(self, request):
        from starlette.responses import JSONResponse

        refused = self._refused(request)
        if refused:
            return JSONResponse(refused[1], status_code=refused[0])
        body = None
        if request.method in ("POST", "DELETE"):
            if int(request.headers.get("content-length") or 0) > MAX_BODY:
                return JSONResponse(_error("body_too_large", f"over {MAX_BODY} bytes"), status_code=413)
            body = await request.body()
            if len(body) > MAX_BODY:
                return JSONResponse(_error("body_too_large", f"over {MAX_BODY} bytes"), status_code=413)
        auth = request.headers.get("authorization")
        try:
            status, answer = await self._route(request.method, request.url.path, body, auth)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            # A part's 200 that is not the answer treenav serve gives.
            status, answer = 502, _error("part_reply_malformed", f"{type(e).__name__}: {str(e)[:200]}")
        return JSONResponse(answer, status_code=status)

    async def _route(self, method: str, path: str, body: Optional[bytes],
                     auth: Optional[str]) -> Tuple[int, Dict[str, Any]]:
        if (method, path) == ("GET", "/healthz"):
            return 200, {"status": "ok", "parts": len(self.parts)}
        if (method, path) == ("GET", "/readyz"):
            answers = await self._all("GET", "/readyz", None)
            ready = all(status == 200 for status, _ in answers)
            return (200 if ready else 503), {"ready": ready, "parts": [a for _, a in answers]}
        if (method, path) == ("GET", "/v1/trees"):
            answers = await self._all("GET", path, None, auth)
            return first_error(answers) or (200, merge_trees([a for _, a in answers]))
        if (method, path) == ("POST", "/v1/retrieve"):
            return await self._retrieve(body, auth)
        if (method, path) == ("POST", "/v1/retrieve/batch"):
            return await self._batch(body, auth)
        if (method, path) in (("POST", "/v1/prune"), ("GET", "/openapi.json")):
            return await self.parts[0].forward.remote(method, path, body, auth)
        if path.startswith("/v1/trees/") or path.startswith("/v1/admin/"):
            return 501, _error(
                "read_only_in_parts",
                "a tree served in parts takes no writes here: update each part with `treenav add PART.tree` "
                "(a document's part: treenav_ray.parts.part_of(id, N)); its server follows the change",
            )
        return 404, _error("not_found", f"no route {method} {path}")

    async def _shared(self, body: Optional[bytes], batch: bool) -> Tuple[Optional[bytes], List[Optional[int]]]:
        """The body each part gets, every request's exploration budget divided
        among the parts (``parts.share_budget``), and each request's ``top``
        (the body parsed once). A body that is not the JSON expected goes as
        it came, for the parts to refuse, with no ``top``."""
        if self.budget is None:
            status, openapi = await self.parts[0].forward.remote("GET", "/openapi.json", None)
            self.budget = setting_default(openapi, SHARED_BUDGET) if status == 200 else None
        try:
            parsed = json.loads(body or b"")
            requests = parsed["requests"] if batch else [parsed]
            tops = [_top(r) for r in requests]
            if self.budget is not None:
                requests = [share_budget(r, len(self.parts), self.budget) for r in requests]
        except (ValueError, KeyError, TypeError, AttributeError):
            return body, [None]
        shared = {**parsed, "requests": requests} if batch else requests[0]
        return json.dumps(shared).encode(), tops

    async def _retrieve(self, body: Optional[bytes], auth: Optional[str]) -> Tuple[int, Dict[str, Any]]:
        shared, tops = await self._shared(body, False)
        answers = await self._all("POST", "/v1/retrieve", shared, auth)
        return first_error(answers) or (200, merge_retrievals([a for _, a in answers], tops[0]))

    async def _batch(self, body: Optional[bytes], auth: Optional[str]) -> Tuple[int, Dict[str, Any]]:
        shared, tops = await self._shared(body, True)
        answers = await self._all("POST", "/v1/retrieve/batch", shared, auth)
        error = first_error(answers)
        if error:
            return error
        results = []
        for i, top in enumerate(tops):
            items = [a["results"][i] for _, a in answers]
            failed = next((item for item in items if "error" in item), None)
            results.append(failed if failed is not None else merge_retrievals(items, top))
        return 200, {**answers[0][1], "results": results}


def _top(request: Dict[str, Any]) -> Optional[int]:
    top = request.get("top")
    return top if isinstance(top, int) and not isinstance(top, bool) else None


def application(parts: Sequence[str], name: str, treenav: str = "treenav", serve_args: Sequence[str] = (),
                replicas: int = 1, allow_hosts: Sequence[str] = (), allow_origins: Sequence[str] = ()):
    """The Ray Serve application: a deployment per part (``replicas`` each)
    and the router, its ingress."""
    from ray import serve

    if not parts:
        raise ValueError("at least one part is needed")
    part = serve.deployment(TreePart, ray_actor_options={"num_cpus": 0}, health_check_period_s=5)
    handles = [
        part.options(name=f"part-{i}", num_replicas=replicas).bind(i, name, os.fspath(tree), treenav, list(serve_args))
        for i, tree in enumerate(parts)
    ]
    router = serve.deployment(Router, name="router", ray_actor_options={"num_cpus": 0})
    return router.bind(*handles, allow_hosts=list(allow_hosts), allow_origins=list(allow_origins))


def run(parts: Sequence[str], name: str, host: str = "127.0.0.1", port: int = 8000,
        proxy_location: str = "HeadOnly", **options) -> str:
    """Starts Serve's HTTP proxy on ``host:port`` (on the head node only, by
    default; ``EveryNode`` puts one on each node, behind a load balancer)
    and the application; returns its URL."""
    from ray import serve

    serve.start(proxy_location=proxy_location, http_options={"host": host, "port": port})
    serve.run(application(parts, name, **options), name="treenav", route_prefix="/")
    return f"http://{host}:{port}"
