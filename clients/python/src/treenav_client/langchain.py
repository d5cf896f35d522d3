"""A LangChain retriever over `treenav serve` (``pip install 'treenav-client[langchain]'``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import Field

from . import TreenavClient
from .metadata import to_metadata

__all__ = ["TreenavRetriever"]


class TreenavRetriever(BaseRetriever):
    """Passages from one tree of a `treenav serve`, best first, as Documents.

    ``metadata`` holds the passage and document ids, the title, the rank and
    the scores (``score``: one calibrated relevance probability, non-increasing
    down the list; ``probability`` and ``rerank_probability``: the judge's
    P(yes) and the shortlist's choice probability).
    """

    base_url: str = "http://127.0.0.1:8080"
    tree: str
    top: Optional[int] = None
    strategy: Optional[str] = None
    judge_budget: Optional[int] = None
    timeout: float = 60.0
    token: Optional[str] = Field(default=None, repr=False, exclude=True)

    def _client(self) -> TreenavClient:
        return TreenavClient(self.base_url, token=self.token, timeout=self.timeout)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> List[Document]:
        found = self._client().retrieve(
            self.tree, query, top=self.top, strategy=self.strategy, judge_budget=self.judge_budget
        )
        return [
            Document(page_content=p.text, metadata=to_metadata(p, found.tree, rank), id=p.id)
            for rank, p in enumerate(found.passages, start=1)
        ]
