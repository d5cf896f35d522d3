"""What both retrievers put in a document's or node's metadata."""

from __future__ import annotations

from typing import Any, Dict, List

from . import Passage


#: The prefix of every field the retrievers add to a document's metadata.
PREFIX = "treenav_"


def to_metadata(passage: Passage, tree: str, rank: int) -> Dict[str, Any]:
    """The document's own metadata fields as they are, then ours, each
    under :data:`PREFIX` so none overwrites a field of the user's:
    ``treenav_id``, ``treenav_document_id``, ``treenav_title``,
    ``treenav_tree``, ``treenav_rank`` (1-based), ``treenav_score`` (the
    calibrated probability), ``treenav_probability`` (the judge's P(yes))
    and ``treenav_rerank_probability``. The document's title is also
    ``title`` (unless its metadata has a ``title`` of its own), where an
    LLM's view of a LlamaIndex node and a LangChain prompt read it: the
    title an added document's ``metadata["title"]`` gave comes back there."""
    ours = {
        "id": passage.id,
        "document_id": passage.document_id,
        "title": passage.title,
        "tree": tree,
        "rank": rank,
        "score": passage.score,
        "probability": passage.probability,
        "rerank_probability": passage.rerank_probability,
    }
    title = {"title": passage.title} if passage.title and "title" not in passage.metadata else {}
    return {**title, **passage.metadata, **{PREFIX + k: v for k, v in ours.items()}}


def our_keys(metadata: Dict[str, Any]) -> List[str]:
    """The keys :func:`to_metadata` added (to keep out of an LLM's or an
    embedder's view of a node)."""
    return [k for k in metadata if k.startswith(PREFIX)]


def request_options(given: Dict[str, Any], search_kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The retrieve call's keywords from a retriever's settings and its
    framework's per-call options: ``k`` (or ``top``), ``filter`` (or
    ``filters``), and any navigator setting by its name (``strategy``,
    ``judge_budget``, ``explore_budget``, …: :meth:`TreenavClient.settings`
    lists them). A name the server does not know is its 400, and a filter
    that cannot be said in treenav's grammar a :class:`TreenavError`:
    never silently ignored."""
    merged = {**{k: v for k, v in given.items() if v is not None}, **search_kwargs}
    out: Dict[str, Any] = {}
    given_filter = merged.pop("filter", merged.pop("filters", None))
    merged.pop("filters", None)
    if given_filter is not None:
        out["filter"] = to_filter(given_filter)
    k = merged.pop("k", None)
    top = merged.pop("top", None)
    if k is not None or top is not None:
        out["top"] = int(k if k is not None else top)
    out.update({key: value for key, value in merged.items() if value is not None})
    return out


#: LlamaIndex's ``FilterOperator`` values and treenav's operators.
_OPERATORS = {"==": "eq", "!=": "ne", ">": "gt", ">=": "gte", "<": "lt", "<=": "lte", "in": "in"}


def to_filter(given: Any) -> Dict[str, Any]:
    """treenav's filter from a dict (passed as is: ``{"year": {"gte":
    2019}}``) or LlamaIndex ``MetadataFilters`` joined by AND, with the
    operators ``==``, ``!=``, ``>``, ``>=``, ``<``, ``<=`` and ``in``."""
    from . import TreenavError

    if isinstance(given, dict):
        return dict(given)
    filters = getattr(given, "filters", None)
    if filters is None:
        raise TreenavError(0, "bad_filter", f"a filter is a dict or MetadataFilters, not {type(given).__name__}")
    condition = str(getattr(getattr(given, "condition", None), "value", "and") or "and").lower()
    if condition != "and":
        raise TreenavError(0, "unsupported", f"filters joined by {condition.upper()}: treenav joins conditions by AND")
    out: Dict[str, Dict[str, Any]] = {}
    for f in filters:
        if hasattr(f, "filters"):
            raise TreenavError(0, "unsupported", "nested MetadataFilters: treenav filters are one list joined by AND")
        operator = str(getattr(getattr(f, "operator", None), "value", "==") or "==")
        op = _OPERATORS.get(operator)
        if op is None:
            raise TreenavError(0, "unsupported", f"filter operator {operator!r}: treenav has {', '.join(_OPERATORS)}")
        ops = out.setdefault(str(f.key), {})
        if op in ops:
            raise TreenavError(0, "bad_filter", f"two `{operator}` conditions on {f.key!r}")
        ops[op] = list(f.value) if op == "in" else f.value
    return out
