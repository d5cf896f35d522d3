#!/usr/bin/env python3
"""Soak `treenav serve` with updates interleaved with queries.

Builds a tree of the bundled sample, serves it, then for --minutes runs
--clients threads of queries (and a few slow sockets that send half a
request and stall) while one thread adds documents, removes them and
compacts the tree through the HTTP routes. Reports every failed valid
request, and the server's resident memory (VmRSS, and its heap part RssAnon) sampled every 5 s:
its growth after the first minute, as the trend line through the samples
says it (the allocator's level swings too much for two samples).

    python3 scripts/soak.py --treenav target/release/treenav --minutes 10

Exit status 1 when a valid request failed or RSS grew more than --max-growth.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

QUERIES = [
    "Where did Tesla work after leaving Edison's company?",
    "Who were the Normans?",
    "What is the alternating current motor?",
    "oxygen from photosynthesis",
    "Which river flows through the city?",
]


def call(base: str, method: str, route: str, body=None, timeout: float = 60.0):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + route, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.status, json.loads(r.read() or b"null")


def trend(samples: list[tuple[float, int]]) -> float:
    """RSS growth after minute 1 as the least-squares line through the
    samples says it (its rise over the span, against its mean): the
    allocator's level swings by a third from one sample to the next, so
    two single samples would measure the swing, not a leak."""
    if len(samples) < 2:
        return 0.0
    n = len(samples)
    mt = sum(t for t, _ in samples) / n
    mr = sum(r for _, r in samples) / n
    var = sum((t - mt) ** 2 for t, _ in samples)
    slope = sum((t - mt) * (r - mr) for t, r in samples) / var if var else 0.0
    span = samples[-1][0] - samples[0][0]
    return slope * span / max(mr, 1.0)


def rss_kib(pid: int, field: str = "VmRSS") -> int:
    """A /proc status memory field in KiB: VmRSS, or its parts RssAnon
    (the heap) and RssFile (mapped tree files)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def floors(samples: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """The lowest sample of each minute: what the process keeps, without
    the transient peaks of a compaction caught mid-way."""
    by_minute: dict[int, tuple[float, int]] = {}
    for t, r in samples:
        m = int(t // 60)
        if m not in by_minute or r < by_minute[m][1]:
            by_minute[m] = (t, r)
    return [by_minute[m] for m in sorted(by_minute)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--treenav", default="target/release/treenav")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--slow-sockets", type=int, default=4)
    ap.add_argument("--max-growth", type=float, default=0.05)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="treenav-soak-")
    tree = os.path.join(work, "sample.tree")
    subprocess.run([args.treenav, "build", "--embedder", "tfidf", "-o", tree], check=True,
                   stdout=subprocess.DEVNULL)
    server = subprocess.Popen(
        [args.treenav, "serve", "--addr", "127.0.0.1:0", "--tree", f"sample={tree}"],
        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "serve.log"), "w"), text=True)
    line = server.stdout.readline().strip()
    base = line.removeprefix("listening on ")
    print(f"serving {tree} at {base} (pid {server.pid}); log in {work}/serve.log", flush=True)

    stop = time.monotonic() + args.minutes * 60
    failures: list[str] = []
    counts = {"queries": 0, "adds": 0, "removes": 0, "compacts": 0}
    lock = threading.Lock()

    def fail(what: str) -> None:
        with lock:
            failures.append(what)
            if len(failures) <= 10:
                print(f"FAILED {what}", flush=True)

    def querier(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop:
            q = rng.choice(QUERIES)
            try:
                status, body = call(base, "POST", "/v1/retrieve", {"tree": "sample", "query": q})
                if status != 200 or not body.get("passages"):
                    fail(f"retrieve {q!r}: {status}")
            except (urllib.error.URLError, OSError, ValueError) as e:
                fail(f"retrieve {q!r}: {e}")
            with lock:
                counts["queries"] += 1

    def updater() -> None:
        batch = 0
        while time.monotonic() < stop:
            docs = [{"id": f"soak-{batch}-{i}", "doc_id": f"soak-{batch}-{i}", "title": f"Soak note {batch} {i}",
                     "text": f"A note about rivers, engines and currents, batch {batch}, number {i}."}
                    for i in range(20)]
            try:
                call(base, "POST", "/v1/trees/sample/documents", docs)
                with lock:
                    counts["adds"] += 1
                if batch >= 2:
                    old = [f"soak-{batch - 2}-{i}" for i in range(20)]
                    call(base, "DELETE", "/v1/trees/sample/documents", {"ids": old})
                    with lock:
                        counts["removes"] += 1
                if batch % 5 == 4:
                    call(base, "POST", "/v1/trees/sample/compact")
                    with lock:
                        counts["compacts"] += 1
            except (urllib.error.URLError, OSError, ValueError) as e:
                fail(f"update batch {batch}: {e}")
            batch += 1
            time.sleep(1.0)

    def slow_socket() -> None:
        host, port = base.removeprefix("http://").split(":")
        while time.monotonic() < stop:
            try:
                s = socket.create_connection((host, int(port)), timeout=5)
                s.sendall(b"POST /v1/retrieve HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"tr")
                time.sleep(5)
                s.close()
            except OSError:
                time.sleep(1)

    threads = [threading.Thread(target=querier, args=(i,)) for i in range(args.clients)]
    threads.append(threading.Thread(target=updater))
    threads += [threading.Thread(target=slow_socket, daemon=True) for _ in range(args.slow_sockets)]
    for t in threads:
        t.start()
    started = time.monotonic()
    samples: list[tuple[float, int]] = []
    anon: list[tuple[float, int]] = []
    next_report = 60.0
    while time.monotonic() < stop:
        now = time.monotonic() - started
        samples.append((now, rss_kib(server.pid)))
        anon.append((now, rss_kib(server.pid, "RssAnon")))
        if samples[-1][0] >= next_report:
            file_kib = rss_kib(server.pid, "RssFile")
            print(f"minute {next_report / 60:.0f}: rss {samples[-1][1]} KiB (anon {anon[-1][1]}, file {file_kib}), {counts}", file=sys.stderr, flush=True)
            next_report += 60.0
        time.sleep(5)
    for t in threads:
        if not t.daemon:
            t.join()
    server.terminate()
    server.wait(timeout=30)

    at_minute = next((r for t, r in samples if t >= 60), samples[0][1])
    after = [(t, r) for t, r in samples if t >= 60] or samples[-1:]
    peak_after = max(r for _, r in after)
    last = samples[-1][1]
    growth = trend(after)
    print(json.dumps({
        "minutes": args.minutes, **counts, "failed": len(failures),
        "rss_kib_at_1_min": at_minute, "rss_kib_last": last, "rss_kib_peak_after_1_min": peak_after,
        "growth_after_1_min": round(growth, 4),
        "anon_growth_after_1_min": round(trend([(t, r) for t, r in anon if t >= 60] or anon[-1:]), 4),
        "floor_growth_after_1_min": round(trend(floors(after)), 4),
    }))
    return 0 if not failures and growth <= args.max_growth else 1


if __name__ == "__main__":
    sys.exit(main())
