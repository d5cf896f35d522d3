"""A LlamaIndex retriever over `treenav serve` (``pip install 'treenav-client[llamaindex]'``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from . import Retrieval, TreenavClient
from .metadata import our_keys, request_options, to_metadata

__all__ = ["TreenavLlamaRetriever"]


class TreenavLlamaRetriever(BaseRetriever):
    """Passages from one tree of a `treenav serve`, best first, as scored nodes.

    ``TreenavLlamaRetriever(tree="docs", base_url="http://127.0.0.1:8080",
    similarity_top_k=4)``: the same keywords as LangChain's
    ``TreenavRetriever`` (``k`` and ``top`` are accepted too). Each node's id
    is the passage id and its ``ref_doc_id`` the document id; ``score`` is
    one calibrated relevance probability, non-increasing down the list;
    ``metadata`` holds the document's own metadata fields as they are, then
    ours under ``treenav_`` (ids, title, tree, rank, score and the judge's
    and shortlist's own probabilities), which the LLM and embedding text
    leave out (``excluded_llm_metadata_keys``).
    ``filters`` (LlamaIndex ``MetadataFilters`` joined by AND, or treenav's
    filter dict) keeps the documents whose metadata passes.
    ``aretrieve`` does not block the event loop.
    """

    def __init__(
        self,
        tree: str,
        base_url: str = "http://127.0.0.1:8080",
        *,
        similarity_top_k: Optional[int] = None,
        k: Optional[int] = None,
        top: Optional[int] = None,
        filters: Any = None,
        strategy: Optional[str] = None,
        judge_budget: Optional[int] = None,
        per_document: Optional[int] = None,
        token: Optional[str] = None,
        timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._tree = tree
        first = next((v for v in (similarity_top_k, k, top) if v is not None), None)
        self._options: Dict[str, Any] = request_options(
            {"k": first, "strategy": strategy, "judge_budget": judge_budget, "per_document": per_document},
            {} if filters is None else {"filter": filters},
        )
        self._client = TreenavClient(base_url, token=token, timeout=timeout)

    def _nodes(self, found: Retrieval) -> List[NodeWithScore]:
        out = []
        for rank, p in enumerate(found.passages, start=1):
            metadata = to_metadata(p, found.tree, rank)
            ours = our_keys(metadata)
            node = TextNode(
                id_=p.id,
                text=p.text,
                metadata=metadata,
                excluded_llm_metadata_keys=ours,
                excluded_embed_metadata_keys=ours,
            )
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=p.document_id)
            out.append(NodeWithScore(node=node, score=p.score))
        return out

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return self._nodes(self._client.retrieve(self._tree, query_bundle.query_str, **self._options))

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        found = await self._client.aretrieve(self._tree, query_bundle.query_str, **self._options)
        return self._nodes(found)

    # -- updates (LlamaIndex's index names) -----------------------------------

    def insert(self, document: Any) -> None:
        """Adds one LlamaIndex ``Document`` or ``TextNode`` (its id, text
        and metadata; ``metadata["title"]`` becomes the title) to the tree,
        or replaces the document with that id. A node that names its source
        document (``ref_doc_id``) is a passage of that document."""
        self.insert_documents([document])

    def insert_documents(self, documents: Sequence[Any]) -> None:
        """Adds several ``Document``s or nodes at once (one update)."""
        records = []
        for doc in documents:
            meta = {k: v for k, v in (getattr(doc, "metadata", None) or {}).items() if not k.startswith("treenav_")}
            passage_id = str(doc.node_id)
            doc_id = str(getattr(doc, "ref_doc_id", None) or passage_id)
            title = str(meta.pop("title", ""))
            meta.pop("id", None)
            meta.pop("doc_id", None)
            records.append({**meta, "id": passage_id, "doc_id": doc_id, "title": title, "text": doc.get_content()})
        if not records:
            raise ValueError("insert_documents needs at least one document")
        self._client.add_documents(self._tree, records)

    def delete_ref_doc(self, ref_doc_id: str, **kwargs: Any) -> None:
        """Removes the document ``ref_doc_id`` (every passage of it)."""
        self._client.delete_documents(self._tree, [ref_doc_id])
