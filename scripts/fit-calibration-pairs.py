# Collects (score, relevant) pairs of the top 10 of every query of a BEIR split from a running
# `treenav serve --tree t=T`: python3 scripts/fit-calibration-pairs.py 127.0.0.1:8080 queries.jsonl qrels/train.tsv train pairs.json
import json, sys, math, urllib.request, collections
addr, queries, qrels, split_filter, out = sys.argv[1:6]
gold = collections.defaultdict(set)
for i, line in enumerate(open(qrels)):
    if i == 0: continue
    q, d, s = line.split('\t'); 
    if int(s) > 0: gold[q].add(d)
qs = [json.loads(l) for l in open(queries)]
qs = [q for q in qs if q['_id'] in gold]
pairs = []
for q in qs:
    req = urllib.request.Request(f"http://{addr}/v1/retrieve", data=json.dumps({"tree":"t","query":q['text'],"top":10}).encode(), headers={"content-type":"application/json"})
    r = json.load(urllib.request.urlopen(req, timeout=60))
    for p in r['passages']:
        pairs.append((p['score'], 1 if p['document_id'] in gold[q['_id']] else 0))
json.dump(pairs, open(out, 'w'))
print(len(qs), "queries", len(pairs), "pairs")
