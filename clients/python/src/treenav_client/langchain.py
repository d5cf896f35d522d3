"""A LangChain retriever over `treenav serve` (``pip install 'treenav-client[langchain]'``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from . import Retrieval, TreenavClient
from .metadata import request_options, to_metadata

__all__ = ["TreenavRetriever"]


class TreenavRetriever(BaseRetriever):
    """Passages from one tree of a `treenav serve`, best first, as Documents.

    ``TreenavRetriever(tree="docs", base_url="http://127.0.0.1:8080", k=4)``:
    the same keywords as ``TreenavLlamaRetriever``. ``k`` (or ``top``, or
    ``search_kwargs={"k": …}``) passages come back; ``search_kwargs`` also
    takes ``strategy``, ``judge_budget``, ``per_document`` and ``filter``
    (``{"source": "wiki", "year": {"gte": 2019}}``: only documents whose
    metadata passes are judged or returned).

    ``metadata`` holds the document's own metadata fields, then the passage
    and document ids, the title, the rank and
    the scores (``score``: one calibrated relevance probability, non-increasing
    down the list; ``probability`` and ``rerank_probability``: the judge's
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

    def _client(self) -> TreenavClient:
        return TreenavClient(self.base_url, token=self.token, timeout=self.timeout)

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

