"""Client of `treenav serve`: retrieval by decision-model tree navigation.

Standard library only. The LangChain and LlamaIndex retrievers live in
``treenav_client.langchain`` and ``treenav_client.llama_index``.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import http.client
import json
import math
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = [
    "TreenavClient",
    "TreenavError",
    "Passage",
    "Usage",
    "Retrieval",
    "KeptChunk",
    "Pruned",
    "TreeInfo",
    "Updated",
    "API_VERSION",
]

#: The API version this client speaks.
API_VERSION = 1

#: Largest response body read, bytes.
MAX_RESPONSE_BYTES = 64 << 20

#: Longest wait honoured from a ``Retry-After``, seconds.
MAX_RETRY_WAIT = 10.0


class TreenavError(Exception):
    """An error answer of the service, or a transport failure (status 0)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}" + (f" (field `{field}`)" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether trying again later may succeed (overload, timeouts, transport)."""
        return self.status in (0, 502, 503, 504)


@dataclass(frozen=True)
class Usage:
    """What a request cost."""

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    low_confidence: int = 0
    #: Input tokens the judge's server served from its prefix cache.
    cached_input_tokens: int = 0

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "Usage":
        return Usage(
            calls=int(d.get("calls", 0)),
            cache_hits=int(d.get("cache_hits", 0)),
            input_tokens=int(d.get("input_tokens", 0)),
            output_tokens=int(d.get("output_tokens", 0)),
            latency_ms=float(d.get("latency_ms", 0.0)),
            cost_usd=float(d.get("cost_usd", 0.0)),
            low_confidence=int(d.get("low_confidence", 0)),
            cached_input_tokens=int(d.get("cached_input_tokens", 0)),
        )


@dataclass(frozen=True)
class Passage:
    """One returned passage, best first."""

    id: str
    document_id: str
    title: str
    text: str
    #: The relevance score: one calibrated probability scale for every rank
    #: and query, non-increasing down the list (filter on this one).
    score: float
    #: The judge's own P(yes) for the passage.
    probability: float
    #: The shortlist's multiple-choice probability (None outside it).
    rerank_probability: Optional[float]
    node: int
    path: List[int] = field(default_factory=list)
    #: The document's metadata (its source record's extra fields).
    metadata: Dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "Passage":
        rerank = d.get("rerank_probability")
        metadata = d.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise ValueError("`metadata` is not an object")
        return Passage(
            id=str(d["id"]),
            document_id=str(d["document_id"]),
            title=str(d.get("title", "")),
            text=str(d["text"]),
            score=float(d.get("score", d["probability"])),
            probability=float(d["probability"]),
            rerank_probability=None if rerank is None else float(rerank),
            node=int(d.get("node", 0)),
            path=[int(n) for n in d.get("path", [])],
            metadata=dict(metadata),
        )


@dataclass(frozen=True)
class Retrieval:
    """The answer of ``POST /v1/retrieve``."""

    tree: str
    query: str
    passages: List[Passage]
    usage: Usage
    candidates_judged: int
    latency_ms: float
    trace: Optional[Dict[str, Any]] = None
    #: Fewer passages than ``top`` were within reach.
    exhausted: bool = False
    #: The tree's update generation this answer came from (0: as built).
    generation: int = 0

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "Retrieval":
        return Retrieval(
            tree=str(d["tree"]),
            query=str(d["query"]),
            passages=[Passage.from_json(p) for p in d["passages"]],
            usage=Usage.from_json(d.get("usage", {})),
            candidates_judged=int(d.get("candidates_judged", 0)),
            latency_ms=float(d.get("latency_ms", 0.0)),
            trace=d.get("trace"),
            exhausted=bool(d.get("exhausted", False)),
            generation=int(d.get("generation", 0)),
        )


@dataclass(frozen=True)
class KeptChunk:
    """A chunk the pruner kept, in context order."""

    id: str
    text: str
    rank: int
    grade: Optional[float]
    probability: Optional[float]
    forced: bool
    tokens: int

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "KeptChunk":
        return KeptChunk(
            id=str(d["id"]),
            text=str(d["text"]),
            rank=int(d["rank"]),
            grade=d.get("grade"),
            probability=d.get("probability"),
            forced=bool(d.get("forced", False)),
            tokens=int(d.get("tokens", 0)),
        )


@dataclass(frozen=True)
class Pruned:
    """The answer of ``POST /v1/prune``."""

    strategy: str
    kept: List[KeptChunk]
    stats: Dict[str, Any]

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "Pruned":
        return Pruned(
            strategy=str(d["strategy"]),
            kept=[KeptChunk.from_json(c) for c in d["kept"]],
            stats=dict(d.get("stats", {})),
        )


@dataclass(frozen=True)
class TreeInfo:
    """A served tree."""

    name: str
    documents: int
    passages: int
    clusters: int
    path: str
    source: str
    format_version: int

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "TreeInfo":
        return TreeInfo(
            name=str(d["name"]),
            documents=int(d["documents"]),
            passages=int(d["passages"]),
            clusters=int(d["clusters"]),
            path=str(d.get("path", "")),
            source=str(d.get("source", "")),
            format_version=int(d.get("format_version", 0)),
        )


@dataclass(frozen=True)
class Updated:
    """What an update of a served tree's documents did."""

    tree: str
    generation: int
    added: int
    replaced: int
    removed: int
    not_found: List[str]
    documents: int
    unchanged: int = 0
    embedded_again: bool = False
    passages_embedded_again: int = 0

    @staticmethod
    def from_json(d: Dict[str, Any]) -> "Updated":
        return Updated(
            tree=str(d["tree"]),
            generation=int(d["generation"]),
            added=int(d["added"]),
            replaced=int(d["replaced"]),
            removed=int(d["removed"]),
            not_found=[str(i) for i in d.get("not_found", [])],
            documents=int(d["documents"]),
            unchanged=int(d.get("unchanged", 0)),
            embedded_again=bool(d.get("embedded_again", False)),
            passages_embedded_again=int(d.get("passages_embedded_again", 0)),
        )


Chunk = Union[str, Dict[str, Any]]


class TreenavClient:
    """A client of one `treenav serve`.

    ``token`` (or the ``TREENAV_TOKEN`` environment variable) is sent as a
    bearer token; a ``user:password@`` in ``base_url`` is taken out of it and
    sent as Basic auth. Neither ever appears in ``repr()`` or an error (a
    server echoing them back is scrubbed). Overloaded answers (503) are retried after their
    ``Retry-After``, at most ``retries`` times. ``timeout`` bounds the whole
    call, retries included, however slowly a server answers. Redirects are
    never followed (a token is never sent elsewhere). Every failure is a
    :class:`TreenavError`. ``a``-prefixed methods are the same calls for
    asyncio, run off the event loop.
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        token: Optional[str] = None,
        timeout: float = 60.0,
        retries: int = 2,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if retries < 0:
            raise ValueError("retries must not be negative")
        self.base_url, self._basic = _split_credentials(base_url.rstrip("/"))
        self._token = token if token is not None else os.environ.get("TREENAV_TOKEN")
        self.timeout = timeout
        self.retries = retries
        # A pool of this client's own: a server trickling its answers ties
        # up this client's threads, never another client's.
        self._workers: Optional[concurrent.futures.ThreadPoolExecutor] = None
        self._aclient: Any = None
        self._aclient_loop: Any = None
        # (loop, task) of the async client being made off the loop.
        self._aclient_making: Any = None

    def __repr__(self) -> str:  # never shows the token or a password
        return f"TreenavClient({self.base_url!r}, token={'set' if self._token or self._basic else 'none'})"

    def close(self) -> None:
        """Stops this client's worker threads (also done when it is collected)."""
        if self._workers is not None:
            self._workers.shutdown(wait=False, cancel_futures=True)
            self._workers = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutting down
            pass

    def _authorization(self) -> Optional[str]:
        if self._token:
            return f"Bearer {self._token}"
        if self._basic:
            return "Basic " + base64.b64encode(self._basic.encode("utf-8")).decode("ascii")
        return None

    def _secrets(self) -> List[str]:
        """Every form of the credentials a server could echo back."""
        out = []
        if self._token:
            out.append(self._token)
        if self._basic:
            out.append(base64.b64encode(self._basic.encode("utf-8")).decode("ascii"))
            out.append(self._basic)
            password = self._basic.split(":", 1)[1] if ":" in self._basic else ""
            out.append(password)
            out.append(urllib.parse.quote(password, safe=""))
        return [x for x in out if len(x) >= 4]

    def _scrubbed(self, e: TreenavError) -> TreenavError:
        message = e.message
        for secret in self._secrets():
            message = message.replace(secret, "***")
        if message == e.message:
            return e
        return TreenavError(e.status, e.code, message, e.field, e.retry_after)

    # -- routes ------------------------------------------------------------

    def retrieve(
        self,
        tree: str,
        query: str,
        *,
        top: Optional[int] = None,
        shortlist: Optional[int] = None,
        strategy: Optional[str] = None,
        budgets: Optional[Sequence[int]] = None,
        judge_budget: Optional[int] = None,
        per_document: Optional[int] = None,
        filter: Optional[Dict[str, Any]] = None,
        trace: bool = False,
        **settings: Any,
    ) -> Retrieval:
        """Ranked passages for ``query`` from the tree named ``tree``
        (``top`` of them unless the tree holds fewer: ``exhausted``).

        ``filter`` keeps the documents whose metadata passes, e.g.
        ``{"source": "wiki", "year": {"gte": 2019}, "tenant": {"in": ["a", "b"]}}``
        (operators ``eq``, ``ne``, ``in``, ``gt``, ``gte``, ``lt``, ``lte``;
        all must hold): nothing else is judged or returned.

        Any other navigator setting goes by its name in ``settings`` (each
        ``treenav query`` flag with ``_``: ``explore_budget=50``,
        ``always_judge=True``, …; :meth:`settings` lists them with their
        ranges and defaults, as the server reads them); a name the server
        does not know is a 400 naming it."""
        settings.update(top=top, shortlist=shortlist, strategy=strategy, budgets=budgets,
                        judge_budget=judge_budget, per_document=per_document)
        body = _retrieve_body(tree, query, filter, trace, settings)
        return _parsed(Retrieval.from_json, self._request("POST", "/v1/retrieve", body))

    async def aretrieve(
        self,
        tree: str,
        query: str,
        *,
        top: Optional[int] = None,
        shortlist: Optional[int] = None,
        strategy: Optional[str] = None,
        budgets: Optional[Sequence[int]] = None,
        judge_budget: Optional[int] = None,
        per_document: Optional[int] = None,
        filter: Optional[Dict[str, Any]] = None,
        trace: bool = False,
        **settings: Any,
    ) -> Retrieval:
        """:meth:`retrieve` for asyncio, never blocking the event loop: over
        httpx's async client when the ``[async]`` extra is installed, else on
        a worker thread. The same deadline, retries and errors."""
        settings.update(top=top, shortlist=shortlist, strategy=strategy, budgets=budgets,
                        judge_budget=judge_budget, per_document=per_document)
        body = _retrieve_body(tree, query, filter, trace, settings)
        return _parsed(Retrieval.from_json, await self._arequest("POST", "/v1/retrieve", body))

    def retrieve_many(
        self,
        tree: str,
        queries: Sequence[str],
        *,
        return_errors: bool = False,
        **options: Any,
    ) -> List[Any]:
        """:meth:`retrieve` for many queries, in order, over
        ``POST /v1/retrieve/batch`` (64 per call; the service runs a few at
        a time). ``options`` are :meth:`retrieve`'s keywords, for every
        query. A query that fails raises its :class:`TreenavError`, or with
        ``return_errors`` stands in its place in the list."""
        out: List[Any] = []
        for body in _batch_bodies(tree, queries, options):
            out.extend(_batch_results(self._request("POST", "/v1/retrieve/batch", body)))
        return self._batch_done(out, return_errors)

    async def aretrieve_many(
        self,
        tree: str,
        queries: Sequence[str],
        *,
        return_errors: bool = False,
        **options: Any,
    ) -> List[Any]:
        """:meth:`retrieve_many` for asyncio, never blocking the event loop."""
        out: List[Any] = []
        for body in _batch_bodies(tree, queries, options):
            reply = await self._arequest("POST", "/v1/retrieve/batch", body)
            out.extend(_batch_results(reply))
        return self._batch_done(out, return_errors)

    def _batch_done(self, results: List[Any], return_errors: bool) -> List[Any]:
        """A batch's items with credentials scrubbed from their errors; the
        first error raised unless ``return_errors``."""
        results = [self._scrubbed(r) if isinstance(r, TreenavError) else r for r in results]
        if not return_errors:
            for r in results:
                if isinstance(r, TreenavError):
                    raise r
        return results

    def prune(
        self,
        question: str,
        chunks: Sequence[Chunk],
        *,
        strategy: Optional[str] = None,
        threshold: Optional[float] = None,
        extra: Optional[int] = None,
        n: Optional[int] = None,
        keep_top_k: Optional[int] = None,
        token_budget: Optional[int] = None,
        edge_placement: bool = False,
    ) -> Pruned:
        """The chunks (strings or ``{"id", "text"}``) the answer needs.
        Settings not given are the service's: a saved config's when it runs
        with ``--prune-config prune.json`` (a threshold fitted for a target
        recall by ``treenav bench --prune --target-recall``), else grade >= 4."""
        body: Dict[str, Any] = {
            "question": question,
            "chunks": list(chunks),
            "edge_placement": edge_placement,
        }
        for key, value in (
            ("strategy", strategy),
            ("threshold", threshold),
            ("extra", extra),
            ("n", n),
            ("keep_top_k", keep_top_k),
            ("token_budget", token_budget),
        ):
            if value is not None:
                body[key] = value
        return _parsed(Pruned.from_json, self._request("POST", "/v1/prune", body))

    def settings(self) -> Dict[str, Dict[str, Any]]:
        """The navigator settings a retrieve request takes, by name, each
        with its ``description``, ``type``, range and ``default``: read from
        the server's OpenAPI document (the navigator's own list), so a
        setting the server has is here with no new client."""
        doc = self._request("GET", "/openapi.json")
        try:
            properties = doc["components"]["schemas"]["RetrieveRequest"]["properties"]
        except (KeyError, TypeError) as e:
            raise TreenavError(200, "bad_response", f"the OpenAPI document has no RetrieveRequest: {e}") from None
        return {k: v for k, v in properties.items() if k not in ("tree", "query", "filter", "trace")}

    def trees(self) -> List[TreeInfo]:
        """The served trees."""
        reply = self._request("GET", "/v1/trees")
        return _parsed(lambda r: [TreeInfo.from_json(t) for t in r["trees"]], reply)

    def health(self) -> bool:
        """Whether the process answers ``/healthz``."""
        try:
            self._request("GET", "/healthz")
            return True
        except TreenavError:
            return False

    def ready(self) -> Dict[str, Any]:
        """``/readyz``'s report (``ready`` false on 503, not an exception)."""
        try:
            return self._request("GET", "/readyz")
        except TreenavError as e:
            if e.status == 503 and e.code == "not_ready":
                return {"ready": False, "problems": [e.message]}
            raise

    def add_documents(self, tree: str, documents: List[Dict[str, Any]]) -> Updated:
        """Adds documents to a served tree without a rebuild; ids it has are
        replaced. Each is a passages-JSONL record (``id``, ``text``, optional
        ``title`` and ``doc_id``, any other field its metadata) or a BEIR one
        (``_id``, ``title``, ``text``). Queries from now on see them."""
        if not documents:
            raise ValueError("add_documents needs at least one document")
        route = f"/v1/trees/{urllib.parse.quote(tree, safe='')}/documents"
        return _parsed(Updated.from_json, self._request("POST", route, list(documents)))

    def delete_documents(self, tree: str, ids: List[str]) -> Updated:
        """Removes documents from a served tree by id (unknown ids are
        reported in ``not_found``, not an error)."""
        if not ids:
            raise ValueError("delete_documents needs at least one id")
        route = f"/v1/trees/{urllib.parse.quote(tree, safe='')}/documents"
        return _parsed(Updated.from_json, self._request("DELETE", route, {"ids": [str(i) for i in ids]}))

    def reload(self, tree: Optional[str] = None) -> Dict[str, Any]:
        """Reloads one tree (or all) from its file; a refused file raises."""
        return self._request("POST", "/v1/admin/reload", {} if tree is None else {"tree": tree})

    # -- transport ---------------------------------------------------------

    def _request(self, method: str, route: str, body: Any = None) -> Any:
        """One call, retries included, within ``timeout`` in all."""
        deadline = time.monotonic() + self.timeout
        attempt = 0
        while True:
            try:
                return self._within(deadline, method, route, body)
            except TreenavError as e:
                if e.status != 503 or e.retry_after is None or attempt >= self.retries:
                    raise self._scrubbed(e) from None
                wait = min(e.retry_after, MAX_RETRY_WAIT)
                if time.monotonic() + wait >= deadline:
                    raise self._scrubbed(e) from None
                attempt += 1
                time.sleep(wait)

    def _within(self, deadline: float, method: str, route: str, body: Any) -> Any:
        """One attempt on a worker thread, abandoned at the deadline (a
        server trickling its answer cannot hold the caller)."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TreenavError(0, "timeout", f"{self.base_url}{route}: no answer within {self.timeout} s")
        if self._workers is None:
            self._workers = concurrent.futures.ThreadPoolExecutor(
                max_workers=_WORKERS_PER_CLIENT, thread_name_prefix="treenav-client"
            )
        future = self._workers.submit(self._once, method, route, body, deadline)
        try:
            return future.result(timeout=left)
        except concurrent.futures.TimeoutError:
            # A call still queued behind busy workers is never sent: the
            # caller has given up on it.
            future.cancel()
            raise TreenavError(0, "timeout", f"{self.base_url}{route}: no answer within {self.timeout} s") from None

    def _once(self, method: str, route: str, body: Any, deadline: float) -> Any:
        if deadline - time.monotonic() < min(MIN_SEND_LEFT, self.timeout / 4):
            # Queued (behind busy workers) until too late to be answered in
            # time: not sent, so a write its caller gave up on never lands
            # after the caller had its timeout.
            raise TreenavError(0, "timeout", f"{self.base_url}{route}: no answer within {self.timeout} s")
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(self.base_url + route, data=data, method=method)
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        authorization = self._authorization()
        if authorization:
            request.add_header("Authorization", authorization)
        try:
            left = max(deadline - time.monotonic(), 0.001)
            with _OPENER.open(request, timeout=left) as response:
                raw = _read_until(response, deadline, self.base_url + route)
                _check_length(response.status, response.headers.get("Content-Length"), raw)
                return _decode(response.status, raw)
        except urllib.error.HTTPError as e:
            if 300 <= e.code < 400:
                where = e.headers.get("Location", "?")
                raise TreenavError(
                    e.code, "redirect", f"the server redirected to {where}; redirects are not followed"
                ) from None
            raise _error(e.code, e.read(MAX_RESPONSE_BYTES + 1), e.headers.get("Retry-After")) from None
        except TreenavError:
            raise
        except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise TreenavError(0, "transport", f"{self.base_url}{route}: {reason}") from None


    async def _arequest(self, method: str, route: str, body: Optional[Dict[str, Any]] = None) -> Any:
        try:
            import httpx  # the [async] extra
        except ImportError:
            return await asyncio.to_thread(self._request, method, route, body)
        try:
            return await asyncio.wait_for(self._ahttpx(httpx, method, route, body), self.timeout)
        except asyncio.TimeoutError:
            raise TreenavError(0, "timeout", f"{self.base_url}{route}: no answer within {self.timeout} s") from None
        except TreenavError as e:
            raise self._scrubbed(e) from None

    async def _ahttpx(self, httpx: Any, method: str, route: str, body: Optional[Dict[str, Any]]) -> Any:
        headers = {"Accept": "application/json"}
        authorization = self._authorization()
        if authorization:
            headers["Authorization"] = authorization
        attempt = 0
        client = await self._async_client(httpx)
        while True:
            try:
                return await _ahttpx_once(client, method, self.base_url + route, body, headers)
            except TreenavError as e:
                if e.status != 503 or e.retry_after is None or attempt >= self.retries:
                    raise self._scrubbed(e) from None
                attempt += 1
                await asyncio.sleep(min(e.retry_after, MAX_RETRY_WAIT))
            except httpx.HTTPError as e:
                raise TreenavError(0, "transport", f"{self.base_url}{route}: {e}") from None

    async def _async_client(self, httpx: Any) -> Any:
        """One ``httpx.AsyncClient`` per event loop, kept and reused. Making
        one costs 50-150 ms (TLS context, pools), so it is made once, on a
        worker thread, while the loop runs other tasks; concurrent first
        calls wait for the same one."""
        loop = asyncio.get_running_loop()
        if self._aclient is not None and self._aclient_loop is loop:
            return self._aclient
        making = self._aclient_making
        if making is None or making[0] is not loop:
            task = loop.create_task(
                asyncio.to_thread(httpx.AsyncClient, timeout=self.timeout, follow_redirects=False)
            )
            making = self._aclient_making = (loop, task)
        client = await asyncio.shield(making[1])
        if self._aclient_loop is not loop:
            self._aclient, self._aclient_loop = client, loop
        return self._aclient

    async def aclose(self) -> None:
        """Closes the kept async connection pool (and the worker threads)."""
        if self._aclient is not None:
            await self._aclient.aclose()
            self._aclient = None
            self._aclient_loop = None
            self._aclient_making = None
        self.close()


async def _ahttpx_once(client: Any, method: str, url: str, body: Any, headers: Dict[str, str]) -> Any:
    async with client.stream(method, url, json=body, headers=headers) as response:
        raw = b""
        async for chunk in response.aiter_raw():
            raw += chunk
            if len(raw) > MAX_RESPONSE_BYTES:
                break
        status = response.status_code
        if 300 <= status < 400:
            where = response.headers.get("Location", "?")
            raise TreenavError(status, "redirect", f"the server redirected to {where}; redirects are not followed")
        if status >= 400:
            raise _error(status, raw, response.headers.get("Retry-After"))
        _check_length(status, response.headers.get("Content-Length"), raw)
        return _decode(status, raw)


def _retrieve_body(
    tree: str,
    query: str,
    filter: Optional[Dict[str, Any]],
    trace: bool,
    settings: Dict[str, Any],
) -> Dict[str, Any]:
    """A retrieve request: the settings given (not ``None``) by name."""
    body: Dict[str, Any] = {"tree": tree, "query": query, "trace": trace}
    if filter is not None:
        body["filter"] = dict(filter)
    for key, value in settings.items():
        if value is not None:
            body[key] = list(value) if isinstance(value, (list, tuple)) else value
    return body


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Never follows a redirect: the 3xx is the answer (and becomes an error)."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)

#: Worker threads of one client (its calls run on them, so a deadline can
#: bound a whole call).
_WORKERS_PER_CLIENT = 16
# A queued call with less time left than this (or a quarter of its timeout)
# is not sent: no answer could arrive before its caller's deadline.
MIN_SEND_LEFT = 0.25

#: Bytes read at a time, the deadline checked between reads.
_READ_CHUNK = 64 << 10


def _read_until(response: Any, deadline: float, url: str) -> bytes:
    """The body, read in chunks until ``deadline``: a server trickling it
    byte by byte frees the worker thread at the deadline, not later."""
    chunks = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TreenavError(0, "timeout", f"{url}: the answer did not arrive in time")
        chunk = response.read1(_READ_CHUNK) if hasattr(response, "read1") else response.read(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            return b"".join(chunks)


def _split_credentials(url: str) -> "tuple[str, Optional[str]]":
    """The URL without a ``user:password@``, and ``user:password`` (decoded)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port is not None else "")
    clean = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    return clean, f"{user}:{password}"


def _check_length(status: int, declared: Optional[str], raw: bytes) -> None:
    if declared is None:
        return
    try:
        expected = int(declared)
    except ValueError:
        raise TreenavError(status, "bad_response", f"bad Content-Length {declared!r}") from None
    if len(raw) < expected and len(raw) <= MAX_RESPONSE_BYTES:
        raise TreenavError(status, "bad_response", f"short body: {len(raw)} of {expected} bytes")


#: The most requests one ``POST /v1/retrieve/batch`` carries.
MAX_BATCH = 64

def _batch_bodies(tree: str, queries: Sequence[str], options: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The batch calls for ``queries``, 64 at most in each; ``options`` are
    :meth:`TreenavClient.retrieve`'s keywords (a name the server does not
    know is its 400, naming it)."""
    if isinstance(queries, str):
        raise TypeError("retrieve_many() takes a list of queries, not one string")
    settings = dict(options)
    filter, trace = settings.pop("filter", None), bool(settings.pop("trace", False))
    requests = [_retrieve_body(tree, q, filter, trace, settings) for q in queries]
    return [{"requests": requests[i:i + MAX_BATCH]} for i in range(0, len(requests), MAX_BATCH)]


def _batch_results(reply: Any) -> List[Any]:
    """A batch reply's items: each a :class:`Retrieval` or its error."""
    def parse(r: Any) -> List[Any]:
        out: List[Any] = []
        for item in r["results"]:
            if "error" in item:
                d = item["error"]
                out.append(TreenavError(int(item.get("status", 0)), str(d.get("code", "")),
                                        str(d.get("message", "")), d.get("field")))
            else:
                out.append(Retrieval.from_json(item))
        return out

    return _parsed(parse, reply)


def _parsed(parse: Any, reply: Any) -> Any:
    """A reply in its typed form, or a :class:`TreenavError` when its shape is wrong."""
    try:
        return parse(reply)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise TreenavError(200, "bad_response", f"unexpected reply shape: {e!r}") from None


def _decode(status: int, raw: bytes) -> Any:
    if len(raw) > MAX_RESPONSE_BYTES:
        raise TreenavError(status, "too_large", f"response larger than {MAX_RESPONSE_BYTES} bytes")
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise TreenavError(status, "bad_response", f"not JSON: {type(e).__name__}") from None


def _error(status: int, raw: bytes, retry_after: Optional[str]) -> TreenavError:
    try:
        detail = json.loads(raw[:MAX_RESPONSE_BYTES].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        detail = None
    wait: Optional[float] = None
    if retry_after is not None:
        try:
            wait = float(retry_after)
        except ValueError:
            wait = None
        if wait is not None and (not math.isfinite(wait) or wait < 0):
            wait = None
    if isinstance(detail, dict) and isinstance(detail.get("error"), dict):
        err = detail["error"]
        return TreenavError(
            status,
            str(err.get("code", "error")),
            str(err.get("message", "")),
            err.get("field"),
            wait,
        )
    if isinstance(detail, dict) and "ready" in detail:
        return TreenavError(status, "not_ready", "; ".join(map(str, detail.get("problems", []))), None, wait)
    return TreenavError(status, "error", raw[:200].decode("utf-8", "replace"), None, wait)
