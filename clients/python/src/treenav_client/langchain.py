"""A LangChain retriever over `treenav serve` (``pip install 'treenav-client[langchain]'``)."""

from __future__ import annotations

import uuid
from typing import Any, Dict, List, Optional, Sequence

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field, PrivateAttr

from . import Retrieval, TreenavClient
from .metadata import request_options, to_metadata

__all__ = ["TreenavRetriever"]


class TreenavRetriever(BaseRetriever):
    """Passages from one tree of a `treenav serve`, best first, as Documents.

    ``TreenavRetriever(tree="docs", base_url="http://127.0.0.1:8080", k=4)``:
    the same keywords as ``TreenavLlamaRetriever``. ``k`` (or ``top``, or
    ``search_kwargs={"k": …}``) passages come back; ``search_kwargs`` also
    takes ``filter`` (``{"source": "wiki", "year": {"gte": 2019}}``: only
    documents whose metadata passes are judged or returned) and any
    navigator setting by its name (``strategy``, ``judge_budget``,
    ``explore_budget``, …: ``TreenavClient.settings()`` lists them).

    ``metadata`` holds the document's own metadata fields as they are, then
    ours under ``treenav_``: the passage and document ids, the title, the
    tree, the rank and the scores (``treenav_score``: one calibrated
    relevance probability, non-increasing down the list;
    ``treenav_probability`` and ``treenav_rerank_probability``: the judge's
    P(yes) and the shortlist's choice probability). ``ainvoke`` does not
    block the event loop.
    """

    tree: str
    base_url: str = "http://127.0.0.1:8080"
    k: Optional[int] = None
    top: Optional[int] = None
    strategy: Optional[str] = None
    judge_budget: Optional[int] = None
    per_document: Optional[int] = None
    filter: Optional[Dict[str, Any]] = None
    search_kwargs: Dict[str, Any] = Field(default_factory=dict)
    timeout: float = 60.0
    token: Optional[str] = Field(default=None, repr=False, exclude=True)
    # One client per retriever (its connection pools reused across calls;
    # built on first use, after the fields are set).
    _shared: Optional[TreenavClient] = PrivateAttr(default=None)

    def _client(self) -> TreenavClient:
        if self._shared is None:
            self._shared = TreenavClient(self.base_url, token=self.token, timeout=self.timeout)
        return self._shared

    def batch(self, inputs: List[Any], config: Any = None, *, return_exceptions: bool = False, **kwargs: Any) -> List[Any]:
        """Many queries in one ``POST /v1/retrieve/batch`` per 64 (callbacks
        given in ``config`` take LangChain's one-call-per-query path, so each
        query is traced)."""
        if not self._batchable(inputs, config):
            return super().batch(inputs, config, return_exceptions=return_exceptions, **kwargs)
        found = self._client().retrieve_many(
            self.tree, list(inputs), return_errors=return_exceptions, **self._options(kwargs)
        )
        return [r if isinstance(r, Exception) else self._documents(r) for r in found]

    async def abatch(
        self, inputs: List[Any], config: Any = None, *, return_exceptions: bool = False, **kwargs: Any
    ) -> List[Any]:
        """:meth:`batch` for asyncio, never blocking the event loop."""
        if not self._batchable(inputs, config):
            return await super().abatch(inputs, config, return_exceptions=return_exceptions, **kwargs)
        found = await self._client().aretrieve_many(
            self.tree, list(inputs), return_errors=return_exceptions, **self._options(kwargs)
        )
        return [r if isinstance(r, Exception) else self._documents(r) for r in found]

    @staticmethod
    def _batchable(inputs: List[Any], config: Any) -> bool:
        """Plain queries, no callbacks to run per query."""
        configs = config if isinstance(config, list) else [config]
        traced = any(isinstance(c, dict) and c.get("callbacks") for c in configs)
        return bool(inputs) and all(isinstance(q, str) for q in inputs) and not traced

    def _options(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        given = {
            "k": self.k if self.k is not None else self.top,
            "strategy": self.strategy,
            "judge_budget": self.judge_budget,
            "per_document": self.per_document,
            "filter": self.filter,
        }
        return request_options(given, {**self.search_kwargs, **kwargs})

    def _documents(self, found: Retrieval) -> List[Document]:
        return [
            Document(page_content=p.text, metadata=to_metadata(p, found.tree, rank), id=p.id)
            for rank, p in enumerate(found.passages, start=1)
        ]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> List[Document]:
        return self._documents(self._client().retrieve(self.tree, query, **self._options(kwargs)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> List[Document]:
        found = await self._client().aretrieve(self.tree, query, **self._options(kwargs))
        return self._documents(found)


    # -- updates (LangChain's vector-store names) ------------------------------

    def add_documents(self, documents: Sequence[Document], ids: Optional[Sequence[str]] = None) -> List[str]:
        """Adds LangChain Documents to the tree (without a rebuild); returns
        their ids. The id is ``ids[i]``, else the Document's ``id``, else
        ``metadata["id"]``, else a new UUID; a Document whose id the tree has
        replaces it. ``metadata["title"]`` becomes the title; the other
        metadata fields become the document's metadata (filterable)."""
        if ids is not None and len(ids) != len(documents):
            raise ValueError("ids must have one id per document")
        records, out = [], []
        for i, doc in enumerate(documents):
            meta = {k: v for k, v in (doc.metadata or {}).items() if not k.startswith("treenav_")}
            given = ids[i] if ids is not None else (doc.id or meta.pop("id", None))
            doc_id = str(given) if given is not None else str(uuid.uuid4())
            meta.pop("id", None)
            title = str(meta.pop("title", ""))
            records.append({**meta, "id": doc_id, "doc_id": doc_id, "title": title, "text": doc.page_content})
            out.append(doc_id)
        self._client().add_documents(self.tree, records)
        return out

    def delete(self, ids: Optional[Sequence[str]] = None, **kwargs: Any) -> bool:
        """Removes documents by id; True when every id was in the tree."""
        if not ids:
            raise ValueError("delete needs the ids of the documents to remove")
        return not self._client().delete_documents(self.tree, list(ids)).not_found
