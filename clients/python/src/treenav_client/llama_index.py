"""A LlamaIndex retriever over `treenav serve` (``pip install 'treenav-client[llamaindex]'``)."""

from __future__ import annotations

from typing import Any, List, Optional

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from . import TreenavClient
from .metadata import to_metadata

__all__ = ["TreenavLlamaRetriever"]


class TreenavLlamaRetriever(BaseRetriever):
    """Passages from one tree of a `treenav serve`, best first, as scored nodes.

    Each node's id is the passage id; ``score`` is one calibrated relevance
    probability, non-increasing down the list; ``metadata`` holds the ids,
    title, rank and the judge's and shortlist's own probabilities.
    """

    def __init__(
        self,
        tree: str,
        base_url: str = "http://127.0.0.1:8080",
        *,
        top: Optional[int] = None,
        strategy: Optional[str] = None,
        judge_budget: Optional[int] = None,
        token: Optional[str] = None,
        timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._tree = tree
        self._top = top
        self._strategy = strategy
        self._judge_budget = judge_budget
        self._client = TreenavClient(base_url, token=token, timeout=timeout)

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        found = self._client.retrieve(
            self._tree,
            query_bundle.query_str,
            top=self._top,
            strategy=self._strategy,
            judge_budget=self._judge_budget,
        )
        return [
            NodeWithScore(
                node=TextNode(id_=p.id, text=p.text, metadata=to_metadata(p, found.tree, rank)),
                score=p.score,
            )
            for rank, p in enumerate(found.passages, start=1)
        ]
