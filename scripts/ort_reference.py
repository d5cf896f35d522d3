#!/usr/bin/env python3
"""Python ONNX Runtime reference for `cargo bench --bench judge`.

Scores the same (query, text) pairs with the same model file and tokenizer as
treenav's cross-encoder, the way a Python user does: a plain onnxruntime
session (default options), the tokenizer truncating to max_tokens and padding
each batch to its longest pair, batches in input order.

Usage: python ort_reference.py MODEL_DIR, then one JSON spec per line on
stdin ({"max_tokens", "batch", "seconds", "query", "texts"}); for each, one
JSON line on stdout: {"ort_version", "pairs", "mean_tokens", "pairs_per_s"}.
The session stays loaded between specs, so the bench can alternate short
windows of treenav and of this reference (the machines are noisy).

Needs onnxruntime, numpy and tokenizers: `bash scripts/fetch-models.sh
--reference` installs them (onnxruntime from the same wheel as the library
treenav loads) into ~/.cache/treenav/pyref.
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


def main() -> None:
    model_dir = sys.argv[1]
    tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    session = ort.InferenceSession(f"{model_dir}/model.onnx", providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def score(query: str, texts: list, batch: int) -> int:
        tokens = 0
        for start in range(0, len(texts), batch):
            encs = tok.encode_batch([(query, t) for t in texts[start : start + batch]])
            tokens += sum(len(e.ids) for e in encs)
            width = max(len(e.ids) for e in encs)
            ids = np.zeros((len(encs), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, e in enumerate(encs):
                ids[r, : len(e.ids)] = e.ids
                mask[r, : len(e.ids)] = e.attention_mask
                types[r, : len(e.ids)] = e.type_ids
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feed["token_type_ids"] = types
            session.run(None, feed)
        return tokens

    for line in sys.stdin:
        spec = json.loads(line)
        tok.enable_truncation(max_length=spec["max_tokens"])
        query, texts, batch = spec["query"], spec["texts"], spec["batch"]
        tokens = score(query, texts, batch)  # warm-up
        pairs, start = 0, time.perf_counter()
        while time.perf_counter() - start < spec["seconds"]:
            score(query, texts, batch)
            pairs += len(texts)
        elapsed = time.perf_counter() - start
        print(
            json.dumps(
                {
                    "ort_version": ort.__version__,
                    "pairs": pairs,
                    "mean_tokens": tokens / max(len(texts), 1),
                    "pairs_per_s": pairs / elapsed,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
