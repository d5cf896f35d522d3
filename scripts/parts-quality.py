#!/usr/bin/env python3
"""What serving a corpus in parts costs in quality: one tree against the same
corpus built in parts and merged by score, on a BEIR folder's queries.

    python3 scripts/parts-quality.py DATASET --whole T.tree --part P0.tree --part P1.tree … [--split test] [--top 20]
    python3 scripts/parts-quality.py DATASET --whole T.tree --router http://127.0.0.1:8000 --name NAME

Starts one `treenav serve` (`$TREENAV_BIN`, default `treenav`) holding the whole tree and every
part, asks each the same queries with the default settings (`/v1/retrieve/batch`), merges the
parts' answers exactly as `treenav-ray serve`'s router does (each part given its share of the
exploration's budget, `share_budget`; merged by `merge_retrievals`) and prints document nDCG@10 and Hit@1 of both (a document is relevant when the qrels say so;
passages count once per document, at their first place). With `--router`, the parts' answers come
from a running `treenav-ray serve` instead, one query at a time, and each side's latency is printed.
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "clients" / "ray" / "src"))
from treenav_ray.parts import SHARED_BUDGET, merge_retrievals, setting_default, share_budget  # noqa: E402

BATCH = 64


def load(dataset: Path, split: str):
    gold = {}
    qrels = dataset / "qrels" / f"{split}.tsv"
    for n, line in enumerate(qrels.read_text().splitlines()[1:], 2):
        fields = line.split("\t")
        if len(fields) != 3:
            sys.exit(f"{qrels}:{n}: expected query-id, corpus-id, score")
        if int(fields[2]) > 0:
            gold.setdefault(fields[0], set()).add(fields[1])
    queries = {}
    for line in (dataset / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        if q["_id"] in gold:
            queries[q["_id"]] = q["text"]
    return queries, gold


def start(trees):
    binary = os.environ.get("TREENAV_BIN", "treenav")
    command = [binary, "serve", "--addr", "127.0.0.1:0", "--max-concurrent", "4"]
    for name, path in trees.items():
        command += ["--tree", f"{name}={path}"]
    env = dict(os.environ, RUST_LOG=os.environ.get("RUST_LOG", "warn"))  # no line per request
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    for line in process.stdout:
        found = re.search(r"listening on (http://\S+)", line)
        if found:
            return process, found.group(1)
    sys.exit(f"`{' '.join(command)}` did not start")


def retrieve(url, tree, texts, top, parts=1, budget=None):
    requests = [{"tree": tree, "query": t, "top": top} for t in texts]
    if budget is not None:  # as the router asks a part: the budget shared
        requests = [share_budget(r, parts, budget) for r in requests]
    body = json.dumps({"requests": requests}).encode()
    request = urllib.request.Request(url + "/v1/retrieve/batch", data=body,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as reply:
        results = json.loads(reply.read())["results"]
    for r in results:
        if "error" in r:
            sys.exit(f"{tree}: {r['error']}")
    return results


def measure(answer, relevant, k=10):
    documents = []
    for p in answer["passages"]:
        if p["document_id"] not in documents:
            documents.append(p["document_id"])
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(documents[:k]) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal, float(bool(documents) and documents[0] in relevant)


def batched(url, tree, texts, top, parts=1, budget=None):
    """Every query's answer, 64 a request."""
    out = []
    for at in range(0, len(texts), BATCH):
        out += retrieve(url, tree, texts[at:at + BATCH], top, parts, budget)
    return out


def one_by_one(url, tree, texts, top):
    """Every query's answer, one request each, and each request's seconds."""
    answers, seconds = [], []
    for text in texts:
        body = json.dumps({"tree": tree, "query": text, "top": top}).encode()
        request = urllib.request.Request(url + "/v1/retrieve", data=body,
                                         headers={"content-type": "application/json"})
        start_at = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as reply:
            answers.append(json.loads(reply.read()))
        seconds.append(time.perf_counter() - start_at)
    return answers, seconds


def report(ids, gold, answers):
    """Prints nDCG@10 and Hit@1 of each system and the paired difference."""
    n, gaps, sums = len(ids), [], {}
    for name, listed in answers.items():
        scored = [measure(a, gold[q]) for q, a in zip(ids, listed)]
        sums[name] = [sum(x for x, _ in scored), sum(h for _, h in scored)]
        gaps.append([x for x, _ in scored])
        print(f"{name}: {n} queries, nDCG@10 {sums[name][0] / n:.4f}, Hit@1 {sums[name][1] / n:.4f}")
    diffs = [b - a for a, b in zip(*gaps)]
    mean = sum(diffs) / n
    se = math.sqrt(sum((d - mean) ** 2 for d in diffs) / max(1, n - 1) / n)
    print(f"parts − whole: nDCG@10 {mean * 100:+.2f} points (± {se * 100:.2f}, the paired "
          f"difference's standard error), Hit@1 {(sums['parts'][1] - sums['whole'][1]) / n * 100:+.2f}")


def percentiles(name, seconds):
    ordered = sorted(seconds)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    print(f"{name}: p50 {at(0.5):.1f} ms, p95 {at(0.95):.1f} ms over {len(ordered)} queries, one at a time")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dataset", type=Path, help="a BEIR folder (queries.jsonl, qrels/SPLIT.tsv)")
    p.add_argument("--whole", required=True, help="the tree over the whole corpus")
    p.add_argument("--part", action="append", default=[], help="a part's tree, once per part")
    p.add_argument("--router", help="ask a running `treenav-ray serve` (its URL) for the parts instead, "
                                    "one query at a time, and time it against the whole tree's")
    p.add_argument("--name", default="corpus", help="the tree's name at --router (default corpus)")
    p.add_argument("--split", default="test")
    p.add_argument("--top", type=int, default=20, help="passages asked of each (default 20)")
    args = p.parse_args()
    if not args.part and not args.router:
        sys.exit("give the parts' trees (--part, once per part) or a running router (--router URL)")
    queries, gold = load(args.dataset, args.split)
    trees = {"whole": args.whole, **{f"part{i}": t for i, t in enumerate(args.part)}}
    process, url = start(trees)
    try:
        ids, texts = list(queries), list(queries.values())
        if args.router:
            whole, whole_s = one_by_one(url, "whole", texts, args.top)
            parts, parts_s = one_by_one(args.router.rstrip("/"), args.name, texts, args.top)
            report(ids, gold, {"whole": whole, "parts": parts})
            percentiles("whole (treenav serve)", whole_s)
            percentiles("parts (the router)", parts_s)
            return
        with urllib.request.urlopen(url + "/openapi.json", timeout=60) as reply:
            budget = setting_default(json.loads(reply.read()), SHARED_BUDGET)
        n = len(args.part)
        each = [batched(url, f"part{i}", texts, args.top, n, budget) for i in range(n)]
        merged = [merge_retrievals([answers[j] for answers in each], args.top) for j in range(len(ids))]
        report(ids, gold, {"whole": batched(url, "whole", texts, args.top), "parts": merged})
    finally:
        process.terminate()


if __name__ == "__main__":
    main()
