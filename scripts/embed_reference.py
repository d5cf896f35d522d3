#!/usr/bin/env python3
"""Python ONNX Runtime reference for `cargo bench --bench embed`.

Embeds the same texts with the same model file and tokenizer as treenav's
bge-small embedder, the way a Python user does: a plain onnxruntime session
(2 intra-op threads, as treenav), texts sorted by length, batches padded to
their longest text, CLS pooling and L2 normalisation.

Usage: python embed_reference.py MODEL_DIR, then one JSON spec per line on
stdin ({"max_tokens", "batch", "seconds", "texts"}); for each, one JSON line
on stdout: {"ort_version", "texts_per_s", "mean_tokens"}. The session stays
loaded, so the bench alternates short windows of treenav and of this.

Needs onnxruntime, numpy and tokenizers: `bash scripts/fetch-models.sh
--reference` installs them into ~/.cache/treenav/pyref.
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
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(
        f"{model_dir}/model.onnx", options, providers=["CPUExecutionProvider"]
    )
    names = {i.name for i in session.get_inputs()}

    def embed(texts: list, batch: int) -> int:
        encs = tok.encode_batch(texts)
        tokens = sum(len(e.ids) for e in encs)
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))
        for start in range(0, len(order), batch):
            chunk = [encs[i] for i in order[start : start + batch]]
            width = max(len(e.ids) for e in chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, e in enumerate(chunk):
                ids[r, : len(e.ids)] = e.ids
                mask[r, : len(e.ids)] = e.attention_mask
                types[r, : len(e.ids)] = e.type_ids
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in names:
                feed["token_type_ids"] = types
            hidden = session.run(None, feed)[0]
            cls = hidden[:, 0, :]
            cls / np.linalg.norm(cls, axis=1, keepdims=True)
        return tokens

    for line in sys.stdin:
        spec = json.loads(line)
        tok.enable_truncation(max_length=spec["max_tokens"])
        texts, batch = spec["texts"], spec["batch"]
        tokens = embed(texts, batch)  # warm-up
        done, start = 0, time.perf_counter()
        while time.perf_counter() - start < spec["seconds"]:
            embed(texts, batch)
            done += len(texts)
        elapsed = time.perf_counter() - start
        print(
            json.dumps(
                {
                    "ort_version": ort.__version__,
                    "texts_per_s": done / elapsed,
                    "mean_tokens": tokens / max(len(texts), 1),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
