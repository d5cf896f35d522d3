"""``treenav-ray build CORPUS -o TREE --work DIR`` (see ``treenav_ray.build``) and
``treenav-ray serve --part P0.tree --part P1.tree … --name NAME`` (see ``treenav_ray.serve``)."""

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
    _serve_parser(sub)
    _parts_parser(sub)
    args = p.parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "build-parts":
        return _build_parts(args)

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


def _parts_parser(sub) -> None:
    b = sub.add_parser("build-parts", help="build a corpus in parts (`treenav build --part I/N` as Ray tasks)")
    b.add_argument("corpus", help="the corpus, as `treenav build` reads it (a path every node sees)")
    b.add_argument("-o", "--output", required=True, help="the folder of the parts (part-I.tree), every node sees it")
    b.add_argument("--parts", type=int, required=True, help="how many parts")
    b.add_argument("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS, else a local one)")
    b.add_argument("--treenav", default="treenav", help="the treenav binary on every node (default: on PATH)")
    b.add_argument("--build-arg", action="append", default=[], metavar="ARG",
                   help="passed to each `treenav build` (repeat: --build-arg=--embedder --build-arg=bge-small)")


def _build_parts(args) -> int:
    import ray

    from .driver import build_parts, check_parts

    try:
        check_parts(args.parts)
    except ValueError as e:
        sys.exit(str(e))
    ray.init(address=args.address, log_to_driver=False)
    trees = build_parts(args.corpus, args.output, parts=args.parts, treenav=args.treenav,
                        build_args=args.build_arg)
    print("built " + " ".join(str(t) for t in trees))
    print("serve them: treenav-ray serve " + " ".join(f"--part {t}" for t in trees) + " --name NAME")
    return 0


def _serve_parser(sub) -> None:
    s = sub.add_parser("serve", help="serve a tree built in parts as one, on Ray Serve")
    s.add_argument("--part", action="append", required=True, metavar="TREE",
                   help="a part's tree file (`treenav build CORPUS --part I/N -o TREE`), once per part, in order")
    s.add_argument("--name", required=True, help="the tree's name in requests (`{\"tree\": NAME}`)")
    s.add_argument("--host", default="127.0.0.1", help="address of Serve's HTTP proxy (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="its port (default 8000)")
    s.add_argument("--replicas", type=int, default=1, help="replicas of each part (default 1)")
    s.add_argument("--address", default=None, help="Ray cluster address (default: RAY_ADDRESS, else a local one)")
    s.add_argument("--treenav", default="treenav", help="the treenav binary on every node (default: on PATH)")
    s.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                   help="passed to each part's `treenav serve` (repeat: --serve-arg=--judge --serve-arg=embedding)")
    s.add_argument("--allow-host", action="append", default=[], help="as `treenav serve --allow-host`")
    s.add_argument("--allow-origin", action="append", default=[], help="as `treenav serve --allow-origin`")


def _serve(args) -> int:
    import signal
    import threading

    import ray
    from ray import serve

    from .serve import run

    if not 1 <= args.replicas <= 1024:
        sys.exit(f"--replicas must be in 1..=1024, got {args.replicas}")
    if not 0 < args.port < 65536:
        sys.exit(f"--port must be in 1..=65535, got {args.port}")
    ray.init(address=args.address, log_to_driver=False)
    url = run(args.part, args.name, host=args.host, port=args.port, treenav=args.treenav,
              serve_args=args.serve_arg, replicas=args.replicas,
              allow_hosts=args.allow_host, allow_origins=args.allow_origin)
    print(f"listening on {url}: {len(args.part)} parts as `{args.name}`", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    serve.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
