#!/usr/bin/env python3
"""Makes a pre-chunked corpus from SQuAD-format JSON: every sentence is a document of its own
under its article's title, and a question's gold is the sentence holding its answer.

    python3 scripts/sentence-split.py SQUAD.json OUT_FOLDER [--exclude OTHER_SQUAD.json] [--split test]

A proxy of a corpus imported pre-chunked (issue #65: WikiQA-style sets, a user's sentences
under their article's title), where every chunk of the right article looks alike to BM25's
document-level evidence and the embedding must tell them apart. Writes a BEIR folder
(`corpus.jsonl`, `queries.jsonl`, `qrels/SPLIT.tsv`) that `treenav build` and `treenav bench`
read. `--exclude` leaves out the paragraphs (by their text) and questions (by id) of another
SQuAD file, so a fitting set made from SQuAD dev shares nothing with XQuAD's test set.
A question whose answer spans two sentences is gold for both; one whose answer offset falls in
no sentence is left out (counted on stderr). Sentences are split on `.`, `?` or `!` followed by
whitespace and an upper-case letter or a digit, which keeps most abbreviations whole; a
fragment under four words joins the sentence before it.
"""
import argparse
import json
import os
import re
import sys

BOUNDARY = re.compile(r"(?<=[.?!])\s+(?=[A-Z0-9\"'(])")
MIN_WORDS = 4


def sentences(context):
    """(start, end) character spans of the context's sentences, in order."""
    spans, start = [], 0
    for m in BOUNDARY.finditer(context):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(context)))
    merged = []
    for s, e in spans:
        if merged and len(context[s:e].split()) < MIN_WORDS:
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    return merged


def load(path):
    with open(path) as f:
        return json.load(f)["data"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("squad")
    ap.add_argument("out")
    ap.add_argument("--exclude", help="a SQuAD file whose paragraphs and questions are left out")
    ap.add_argument("--split", default="test", help="the qrels file's name (default test)")
    args = ap.parse_args()
    skip_contexts, skip_ids = set(), set()
    if args.exclude:
        for article in load(args.exclude):
            for p in article["paragraphs"]:
                skip_contexts.add(p["context"].strip())
                skip_ids.update(q["id"] for q in p["qas"])
    os.makedirs(os.path.join(args.out, "qrels"), exist_ok=True)
    docs = qs = unplaced = 0
    with open(os.path.join(args.out, "corpus.jsonl"), "w") as corpus, \
            open(os.path.join(args.out, "queries.jsonl"), "w") as queries, \
            open(os.path.join(args.out, "qrels", f"{args.split}.tsv"), "w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for article in load(args.squad):
            title = article["title"].replace("_", " ")
            for pi, p in enumerate(article["paragraphs"]):
                context = p["context"]
                if context.strip() in skip_contexts:
                    continue
                spans = sentences(context)
                ids = []
                for si, (s, e) in enumerate(spans):
                    sid = f"{article['title']}#{pi}.{si}"
                    ids.append(sid)
                    corpus.write(json.dumps({"_id": sid, "title": title, "text": context[s:e].strip()}) + "\n")
                    docs += 1
                for q in p["qas"]:
                    if q["id"] in skip_ids or not q.get("answers"):
                        continue
                    a = q["answers"][0]
                    lo, hi = a["answer_start"], a["answer_start"] + len(a["text"])
                    gold = [ids[i] for i, (s, e) in enumerate(spans) if s < hi and lo < e]
                    if not gold:
                        unplaced += 1
                        continue
                    queries.write(json.dumps({"_id": q["id"], "text": q["question"]}) + "\n")
                    for g in gold:
                        qrels.write(f"{q['id']}\t{g}\t1\n")
                    qs += 1
    print(f"{args.out}: {docs} sentence documents, {qs} questions ({unplaced} whose answer is in no sentence, left out)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
