#!/usr/bin/env python3
"""Makes a pre-chunked corpus of natural queries from QED's files: every Wikipedia sentence is a
document of its own under its article's title, and a query's gold is the sentence holding its
Natural Questions answer.

    python3 scripts/qed-sentences.py OUT_FOLDER --split test qed-dev.jsonlines
    python3 scripts/qed-sentences.py OUT_FOLDER --split train nq-train-0*-qed.jsonlines

QED (google-research-datasets/QED, CC BY-SA 3.0) gives each Natural Questions example its
paragraph, the paragraph's sentence offsets (`sentence_starts`) and the answer's offsets
(`answer_spans` in the first release's `nq-*-qed.jsonlines`, `original_nq_answers` in
`qed-dev.jsonlines`). This is the shape of a WikiQA-style set (issue #65): queries people typed
into a search engine, answered by one sentence among the article's others, so BM25 finds the
article by its title and every one of its sentences looks alike to it. Writes a BEIR folder
(`corpus.jsonl`, `queries.jsonl`, `qrels/SPLIT.tsv`) that `treenav build` and `treenav bench`
read; `nq-qed`'s query ids (`nq` + the example id, `-` written `m`), so the splits stay apart.
A query whose answer falls in no sentence, or that has no answer, is left out (counted on
stderr). Text is detokenised as `nq-qed` is (no space before `, . ; : ? ! )` or after `(`).
"""
import argparse
import ast
import hashlib
import json
import os
import re
import sys

NO_SPACE_BEFORE = re.compile(r" ([,.;:?!)])")
NO_SPACE_AFTER = re.compile(r"\( ")


def detokenise(text):
    text = text.replace("``", '"').replace("''", '"')
    return NO_SPACE_AFTER.sub("(", NO_SPACE_BEFORE.sub(r"\1", text)).strip()


def literal(value):
    """QED stores some fields as Python literals inside strings."""
    return ast.literal_eval(value) if isinstance(value, str) else value


def answer_starts(example):
    if "answer_spans" in example:
        return [s for s, _ in literal(example["answer_spans"])]
    starts = []
    for annotator in literal(example.get("original_nq_answers", "[]")):
        starts += [a["start"] for a in annotator]
    return starts


def sentence_spans(example):
    text = example["paragraph_text"]
    starts = literal(example["sentence_starts"])
    ends = starts[1:] + [len(text)]
    return [(s, e) for s, e in zip(starts, ends) if text[s:e].strip()]


def query_id(example):
    return "nq" + str(example["example_id"]).replace("-", "m")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("files", nargs="+", help="QED .jsonlines files")
    ap.add_argument("--split", default="test", help="the qrels file's name (default test)")
    args = ap.parse_args()
    os.makedirs(os.path.join(args.out, "qrels"), exist_ok=True)
    seen_docs, seen_queries, left_out = set(), set(), 0
    with open(os.path.join(args.out, "corpus.jsonl"), "w") as corpus, \
            open(os.path.join(args.out, "queries.jsonl"), "w") as queries, \
            open(os.path.join(args.out, "qrels", f"{args.split}.tsv"), "w") as qrels:
        qrels.write("query-id\tcorpus-id\tscore\n")
        for path in args.files:
            with open(path) as f:
                for line in f:
                    example = json.loads(line)
                    left_out += write_example(example, corpus, queries, qrels, seen_docs, seen_queries)
    print(f"{len(seen_docs)} sentences, {len(seen_queries)} queries, {left_out} left out",
          file=sys.stderr)


def write_example(example, corpus, queries, qrels, seen_docs, seen_queries):
    """Writes one example's sentences (once per paragraph) and its query; 1 if left out."""
    text, title = example["paragraph_text"], example["title_text"]
    spans = sentence_spans(example)
    paragraph = hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]
    ids = [f"qeds-{paragraph}-{i}" for i in range(len(spans))]
    for sid, (s, e) in zip(ids, spans):
        if sid not in seen_docs:
            seen_docs.add(sid)
            corpus.write(json.dumps({"_id": sid, "title": title, "text": detokenise(text[s:e])}) + "\n")
    gold = sorted({sid for a in answer_starts(example) for sid, (s, e) in zip(ids, spans) if s <= a < e})
    qid = query_id(example)
    if not gold or qid in seen_queries:
        return 1
    seen_queries.add(qid)
    queries.write(json.dumps({"_id": qid, "text": example["question_text"]}) + "\n")
    for sid in gold:
        qrels.write(f"{qid}\t{sid}\t1\n")
    return 0


if __name__ == "__main__":
    main()
