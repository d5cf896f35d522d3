#!/usr/bin/env python3
"""Embedding throughput, same model and texts: treenav in-process against
the Ray driver's actor pool (and a plain one-process ONNX Runtime session,
which is what each actor runs).

    python3 scripts/ray-embed-bench.py CORPUS [--treenav target/release/treenav]

Needs `pip install ./clients/ray` and `bash scripts/fetch-models.sh`.
Texts: the corpus's passages, as `treenav texts` writes them (what a
semantic build embeds for `T.passage-vectors`). treenav's in-process rate
is the difference between two builds of the corpus from the same document
vectors, one embedding the passages itself and one given them
(`--passage-embeddings`): the time of that embedding alone. Ray runs on a
local cluster of this machine's cores; its time includes starting the
actors. Prints one table (Markdown) with texts per second and the ratio
to treenav in-process."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients" / "ray" / "src"))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(*cmd: str) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus")
    p.add_argument("--treenav", default=str(ROOT / "target" / "release" / "treenav"))
    p.add_argument("--actors", type=int, default=os.cpu_count() or 2)
    args = p.parse_args()

    import numpy as np
    import ray

    from treenav_ray import BgeSmall, embed_texts

    work = Path(tempfile.mkdtemp(prefix="treenav-embed-bench-"))
    run(args.treenav, "texts", args.corpus, "-o", str(work / "texts"))
    passages = work / "texts" / "passages.jsonl"
    texts = [json.loads(line)["text"] for line in passages.read_text().splitlines()]
    n = len(texts)
    cores = os.cpu_count() or 2

    # The document vectors both treenav builds start from.
    docs = [json.loads(line)["text"] for line in (work / "texts" / "documents.jsonl").read_text().splitlines()]
    model = BgeSmall(threads=cores)
    np.save(work / "documents.npy", model(docs))

    one_process = timed(lambda: np.save(work / "passages.npy", model(texts)))

    # The workers import the package from this checkout too.
    src = str(ROOT / "clients" / "ray" / "src")
    ray.init(num_cpus=cores, log_to_driver=False, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": src}})
    pool = timed(lambda: embed_texts(passages, work / "ray.npy", actors=args.actors, threads=1))
    ray.shutdown()

    base = [args.treenav, "build", args.corpus, "--embedder", "bge-small",
            "--embeddings", str(work / "documents.npy")]
    given = timed(lambda: run(*base, "--passage-embeddings", str(work / "passages.npy"),
                              "-o", str(work / "given.tree")))
    itself = timed(lambda: run(*base, "-o", str(work / "itself.tree")))
    in_process = max(itself - given, 1e-9)

    rate = lambda s: n / s  # noqa: E731
    print(f"{n} passages of {args.corpus}, {cores} cores, bge-small-en (ONNX Runtime)\n")
    print("| embedder | seconds | texts/s | × treenav in-process |")
    print("|---|---:|---:|---:|")
    for name, s in [
        ("treenav in-process (build without − with `--passage-embeddings`)", in_process),
        (f"one ONNX Runtime session, {cores} threads (Python)", one_process),
        (f"Ray Data actor pool, {args.actors} actors × 1 thread (incl. start)", pool),
    ]:
        print(f"| {name} | {s:.1f} | {rate(s):.0f} | {in_process / s:.2f} |")
    print(f"\n(builds: {itself:.1f} s embedding the passages, {given:.1f} s given them; work in {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
