"""A tree served in parts: the merge of the parts' answers, with no Ray in it.

A corpus built in parts (``treenav build CORPUS --part I/N``: each part a
complete tree over the documents whose id hashes to I) is served as one by
asking every part the same question and merging their passages by
``score``: every tree's score is a probability on one scale (the fitted,
calibrated P(relevant)), so the best passages of all parts are the best of
the merged list. ``serve.py`` runs it on Ray Serve; these functions are the
merge, tested alone.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

# What `treenav serve` answers a retrieval with, summed over the parts.
SUMMED = ("candidates_judged",)


def part_of(document_id: str, count: int) -> int:
    """The part (from 0) of ``count`` a document id belongs to: xxh3-64 of
    its UTF-8 bytes, mod the count (treenav_corpus::Part::of)."""
    import xxhash

    if count < 1:
        raise ValueError(f"the part count must be at least 1, got {count}")
    return xxhash.xxh3_64_intdigest(document_id.encode("utf-8")) % count


# The setting a query's search spends per tree: shared among the parts.
SHARED_BUDGET = "explore_budget"


def setting_default(openapi: Dict[str, Any], name: str) -> Optional[int]:
    """A navigator setting's default as a part's ``/openapi.json`` states it
    (the schema of that name with an integer ``default``), or None."""
    stack: List[Any] = [openapi]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            schema = node.get(name)
            if isinstance(schema, dict) and isinstance(schema.get("default"), int):
                return schema["default"]
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return None


def share_budget(request: Dict[str, Any], parts: int, default: int) -> Dict[str, Any]:
    """The request each part gets: the exploration's budget (the request's
    ``explore_budget``, else the servers' default) divided among the parts,
    rounded up, so a query over N parts scores as many vectors as one tree
    would. One tree's exploration stops where its budget ends; N parts each
    given the whole budget search N times as far and their merged list
    drifts towards exhaustive dense search (on SciFact, 1.0 point of
    nDCG@10 below the tree's own order). A value that is not a count is
    passed as given, for the part to refuse."""
    budget = request.get(SHARED_BUDGET, default)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        return request
    return {**request, SHARED_BUDGET: -(-budget // max(1, parts))}


def _add_usage(total: Dict[str, Any], usage: Dict[str, Any]) -> None:
    for key, value in usage.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        # Latency is the slowest part's (they run at once); the rest add up.
        if key == "latency_ms":
            total[key] = max(total.get(key, 0.0), value)
        else:
            total[key] = total.get(key, 0) + value


def merge_retrievals(answers: Sequence[Dict[str, Any]], top: Optional[int]) -> Dict[str, Any]:
    """One ``/v1/retrieve`` answer from every part's answer to the same request.

    The passages are merged by ``score`` (highest first; ties keep the parts'
    order, then each part's own order) and cut at ``top`` (when the request
    gave none, at the longest part's list: each part answered with the
    server's default). ``exhausted`` when fewer than that are left; usage and
    judged candidates add up, latency is the slowest part's, ``generation``
    is the highest and ``part_generations`` lists each part's, and a trace
    (when asked) holds each part's under ``parts``. A part's answer that is
    not ``treenav serve``'s raises KeyError, TypeError or ValueError."""
    if not answers:
        raise ValueError("no part answered")
    ranked: List[Tuple[float, int, int, Dict[str, Any]]] = []
    for p, answer in enumerate(answers):
        for i, passage in enumerate(answer.get("passages", [])):
            ranked.append((-float(passage["score"]), p, i, passage))
    ranked.sort(key=lambda t: t[:3])
    want = top if top is not None else max(len(a.get("passages", [])) for a in answers)
    merged = dict(answers[0])
    merged["passages"] = [t[3] for t in ranked[:want]]
    merged["exhausted"] = len(merged["passages"]) < want
    usage: Dict[str, Any] = {}
    for answer in answers:
        _add_usage(usage, answer.get("usage", {}))
    merged["usage"] = {**answers[0].get("usage", {}), **usage}
    for key in SUMMED:
        merged[key] = sum(a.get(key, 0) for a in answers)
    merged["latency_ms"] = max(a.get("latency_ms", 0.0) for a in answers)
    merged["generation"] = max(a.get("generation", 0) for a in answers)
    merged["part_generations"] = [a.get("generation", 0) for a in answers]
    if any("trace" in a for a in answers):
        merged["trace"] = {"parts": [a.get("trace") for a in answers]}
    return merged


COUNTS = ("documents", "passages", "clusters")


def merge_trees(answers: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """``GET /v1/trees`` over the parts: each tree once, with the first
    part's description, its counts summed over the parts, and each part's
    own entry under ``parts``."""
    by_name: Dict[str, Dict[str, Any]] = {}
    for answer in answers:
        for tree in answer.get("trees", []):
            entry = by_name.setdefault(tree.get("name"), {**tree, "parts": []})
            entry["parts"].append(tree)
            for key in COUNTS:
                entry[key] = sum(int(t.get(key, 0)) for t in entry["parts"])
    return {**(dict(answers[0]) if answers else {}), "trees": list(by_name.values())}


def first_error(answers: Sequence[Tuple[int, Dict[str, Any]]]) -> Optional[Tuple[int, Dict[str, Any]]]:
    """The first part's error (status, body) among (status, body) answers,
    the body's message naming the part; None when every part answered 200.
    A request one part refuses (a bad setting, a filter) every part refuses
    alike, so the first one's words are the answer's."""
    for p, (status, body) in enumerate(answers):
        if status != 200:
            error = dict(body.get("error") or {"code": "part_failed", "message": str(body)[:500]})
            error["message"] = f"part {p}: {error.get('message', '')}"
            return status, {"error": error}
    return None
