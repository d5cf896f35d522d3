"""What both retrievers put in a document's or node's metadata."""

from __future__ import annotations

from typing import Any, Dict

from . import Passage


def to_metadata(passage: Passage, tree: str, rank: int) -> Dict[str, Any]:
    """Our ids and scores: ``id``, ``document_id``, ``title``, ``tree``,
    ``rank`` (1-based), ``score``, ``probability``, ``rerank_probability``."""
    return {
        "id": passage.id,
        "document_id": passage.document_id,
        "title": passage.title,
        "tree": tree,
        "rank": rank,
        "score": passage.score,
        "probability": passage.probability,
        "rerank_probability": passage.rerank_probability,
    }
