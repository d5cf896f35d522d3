"""``treenav-ray build CORPUS -o TREE --work DIR``: see ``treenav_ray.build``."""

from __future__ import annotations

import argparse
import sys

from .driver import build


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="treenav-ray", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build a tree on a Ray cluster")
    b.add_argument("corpus", help="the corpus, as `treenav build` reads it")
    b.add_argument("-o", "--output", required=True, help="the tree file to write")
    b.add_argument("--work", required=True, help="texts, vectors and plan (a folder every node sees)")
    b.add_argument("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS, else a local one)")
    b.add_argument("--shards", type=int, default=4, help="shard tasks (default 4)")
    b.add_argument("--actors", type=int, default=2, help="embedding actors (default 2)")
    b.add_argument("--threads", type=int, default=1, help="ONNX Runtime threads per actor (default 1)")
    b.add_argument("--batch", type=int, default=32, help="texts per forward pass (default 32)")
    b.add_argument("--model-dir", default=None, help="bge-small-en folder (default ~/.cache/treenav/models/bge-small-en)")
    b.add_argument("--treenav", default="treenav", help="the treenav binary on every node (default: on PATH)")
    b.add_argument("--branching", type=int, default=None, help="as `treenav build --branching`")
    b.add_argument("--json", action="store_true", help="print the report as JSON")
    args = p.parse_args(argv)

    import ray

    ray.init(address=args.address, log_to_driver=False)
    extra = ["--branching", str(args.branching)] if args.branching else []
    report = build(
        args.corpus, args.output, args.work, shards=args.shards, treenav=args.treenav,
        model_dir=args.model_dir, actors=args.actors, threads=args.threads, batch=args.batch,
        build_args=extra, texts_args=extra,
    )
    if args.json:
        print(report.to_json())
    else:
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in report.seconds.items())
        print(f"wrote {report.tree}: {report.documents} document rows, {report.passages} passages, {report.shards} shards ({steps})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
