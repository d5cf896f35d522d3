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


def request_options(given: Dict[str, Any], search_kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The retrieve call's keywords from a retriever's settings and its
    framework's per-call options (``k``, ``filter``, ``strategy``,
    ``judge_budget``, ``per_document``); an unknown option or a filter is a
    :class:`TreenavError`, never silently ignored."""
    from . import TreenavError

    merged = {**{k: v for k, v in given.items() if v is not None}, **search_kwargs}
    known = {"k", "top", "strategy", "judge_budget", "per_document", "filter", "filters"}
    unknown = sorted(set(merged) - known)
    if unknown:
        raise TreenavError(0, "bad_option", f"unknown retriever option(s): {', '.join(unknown)}")
    if merged.get("filter") is not None or merged.get("filters") is not None:
        raise TreenavError(
            0,
            "unsupported",
            "metadata filters are not supported by this treenav version yet",
        )
    out: Dict[str, Any] = {}
    k = merged.get("k", merged.get("top"))
    if k is not None:
        out["top"] = int(k)
    for key in ("strategy", "judge_budget", "per_document"):
        if merged.get(key) is not None:
            out[key] = merged[key]
    return out
