"""A tree built in three parts, served as one on Ray Serve against a real
local Ray cluster (conftest.py's head and worker on 127.0.0.1): every
part a deployment running ``treenav serve`` over its tree, the router
merging their answers by score. The merge alone (no Ray) is tested too.

Needs ``TREENAV_BIN`` and ``ray[serve]``; ``corpus-tools/tests/ray_build.rs``
runs it."""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import free_port
from treenav_ray.parts import merge_retrievals, part_of, setting_default, share_budget

TREENAV = os.environ.get("TREENAV_BIN", "treenav")
PARTS = 3
TESLA = "Where did Tesla work after leaving Edison's company?"
SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "xquad-sample.json"


def treenav(*args: str) -> str:
    done = subprocess.run([TREENAV, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


TOKEN = "a-token-for-the-parts-test-0123456789"


def call(url: str, body=None, headers=None, method=None, token=TOKEN):
    data = None if body is None else json.dumps(body).encode()
    headers = dict(headers or {})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@pytest.fixture(scope="module")
def parts(cluster, tmp_path_factory):
    """The bundled sample in three parts built as Ray tasks (TF-IDF: a
    second each), and part 0 again in this process."""
    from treenav_ray import build_parts

    folder = tmp_path_factory.mktemp("parts")
    common = ["--embedder", "tfidf", "--branching", "4"]
    trees = build_parts(SAMPLE, folder, parts=PARTS, treenav=TREENAV, build_args=common)
    assert trees == [folder / f"part-{i}.tree" for i in range(PARTS)]
    treenav("build", str(SAMPLE), "--part", f"0/{PARTS}", *common, "-o", str(folder / "local.tree"))
    return trees


@pytest.fixture(scope="module")
def served(cluster, parts):
    from ray import serve

    from treenav_ray.serve import run

    token = parts[0].with_name("token")
    token.write_text(TOKEN + "\n")
    url = run([str(t) for t in parts], "sample", port=free_port(), treenav=TREENAV,
              serve_args=["--auth-token-file", str(token)])
    yield url
    serve.shutdown()


def query_part(tree: Path, question: str, top: int, budget: int):
    out = json.loads(treenav("query", str(tree), question, "--top", str(top), "--json",
                             "--explore-budget", str(budget)))
    return out["passages"]


def test_the_parts_hold_the_sample_once_and_are_served_as_one_tree(served, parts):
    status, trees = call(served + "/v1/trees")
    assert status == 200, trees
    (tree,) = trees["trees"]
    assert tree["name"] == "sample" and len(tree["parts"]) == PARTS
    assert (tree["documents"], tree["passages"]) == (48, 96), tree
    assert all(p["documents"] > 0 for p in tree["parts"])
    # A part built on the cluster is the one built here, byte for byte; a
    # rerun keeps the parts built.
    local = parts[0].with_name("local.tree")
    assert parts[0].read_bytes() == local.read_bytes()
    from treenav_ray import build_parts

    before = [t.stat().st_mtime_ns for t in parts]
    again = build_parts(SAMPLE, parts[0].parent, parts=PARTS, treenav=TREENAV,
                        build_args=["--embedder", "tfidf", "--branching", "4"])
    assert [t.stat().st_mtime_ns for t in again] == before
    status, ready = call(served + "/readyz")
    assert status == 200 and ready["ready"], ready


def test_a_query_asks_every_part_and_merges_their_passages_by_score(served, parts):
    status, got = call(served + "/v1/retrieve", {"tree": "sample", "query": TESLA, "top": 8})
    assert status == 200, got
    # What each part answers alone with its share of the exploration's
    # budget (the default 300 over 3 parts), merged by score by hand.
    alone = [(-p["score"], i, r, p["id"]) for i, t in enumerate(parts)
             for r, p in enumerate(query_part(t, TESLA, 8, 100))]
    expected = [t[3] for t in sorted(alone)[:8]]
    assert [p["id"] for p in got["passages"]] == expected
    # A budget the request gives is shared the same way (7 → 3 each).
    status, small = call(served + "/v1/retrieve", {"tree": "sample", "query": TESLA, "top": 8, "explore_budget": 7})
    assert status == 200, small
    alone = [(-p["score"], i, r, p["id"]) for i, t in enumerate(parts)
             for r, p in enumerate(query_part(t, TESLA, 8, 3))]
    assert [p["id"] for p in small["passages"]] == [t[3] for t in sorted(alone)[:8]]
    assert got["passages"][0]["title"] == "Nikola Tesla"
    scores = [p["score"] for p in got["passages"]]
    assert scores == sorted(scores, reverse=True)
    assert len({part_of(p["document_id"], PARTS) for p in got["passages"]}) > 1, "one part answered"
    assert got["exhausted"] is False and len(got["part_generations"]) == PARTS


def test_filters_settings_and_batches_pass_through_to_every_part(served):
    url = served + "/v1/retrieve"
    # Each part judges the filter (the sample's documents carry no metadata).
    status, bad = call(url, {"tree": "sample", "query": TESLA, "filter": {"lang": "de"}})
    assert status == 400 and bad["error"]["field"] == "filter", bad
    assert "part 0: " in bad["error"]["message"] and "no metadata" in bad["error"]["message"], bad
    status, bad = call(url, {"tree": "sample", "query": TESLA, "top": 0})
    assert status == 400 and bad["error"]["message"].startswith("part 0: "), bad
    assert bad["error"].get("field") == "top", bad
    questions = [TESLA, "What is the capital of Normandy?"]
    status, batch = call(url + "/batch", {"requests": [{"tree": "sample", "query": q, "top": 4} for q in questions]})
    assert status == 200, batch
    for question, item in zip(questions, batch["results"]):
        _, alone = call(url, {"tree": "sample", "query": question, "top": 4})
        assert [p["id"] for p in item["passages"]] == [p["id"] for p in alone["passages"]]


def test_a_cross_site_request_a_write_and_a_missing_token_are_refused(served):
    status, body = call(served + "/v1/retrieve", {"tree": "sample", "query": TESLA},
                        headers={"Origin": "https://evil.example", "content-type": "application/json"})
    assert status == 403 and body["error"]["code"] == "origin_not_allowed", body
    status, body = call(served + "/v1/retrieve", {"tree": "sample", "query": TESLA},
                        headers={"Host": "evil.example"})
    assert status == 403 and body["error"]["code"] == "host_not_allowed", body
    status, body = call(served + "/v1/trees/sample/documents", [{"id": "x", "text": "y"}],
                        headers={"content-type": "application/json"})
    assert status == 501 and body["error"]["code"] == "read_only_in_parts", body
    # The parts check the token the router passes on.
    for token in (None, "a-wrong-token-0123456789"):
        status, body = call(served + "/v1/retrieve", {"tree": "sample", "query": TESLA}, token=token)
        assert status == 401 and body["error"]["message"].startswith("part 0"), body


def test_a_part_whose_server_dies_is_replaced(served, parts):
    """Ray Serve's health check finds the dead `treenav serve` and starts
    another replica of that part; the tree answers whole again."""
    pids = subprocess.run(["pgrep", "-f", f"serve --tree sample={parts[1]}"],
                          capture_output=True, text=True).stdout.split()
    assert len(pids) == 1, pids
    os.kill(int(pids[0]), signal.SIGKILL)
    deadline, answer = time.monotonic() + 120, None
    while time.monotonic() < deadline:
        status, answer = call(served + "/v1/retrieve", {"tree": "sample", "query": TESLA, "top": 8})
        if status == 200:
            break
        time.sleep(2)
    assert status == 200, answer
    assert answer["passages"][0]["title"] == "Nikola Tesla"


def test_the_merge_keeps_the_best_scores_of_all_parts():
    a = {"passages": [{"id": "a1", "score": 0.9}, {"id": "a2", "score": 0.2}], "exhausted": False,
         "usage": {"calls": 2, "latency_ms": 5.0}, "candidates_judged": 10, "generation": 1}
    b = {"passages": [{"id": "b1", "score": 0.5}, {"id": "b2", "score": 0.2}], "exhausted": True,
         "usage": {"calls": 3, "latency_ms": 9.0}, "candidates_judged": 7, "generation": 0}
    merged = merge_retrievals([a, b], top=3)
    # Ties keep the parts' order: a2 (part 0) before b2.
    assert [p["id"] for p in merged["passages"]] == ["a1", "b1", "a2"]
    assert merged["usage"] == {"calls": 5, "latency_ms": 9.0}
    assert merged["candidates_judged"] == 17 and merged["part_generations"] == [1, 0]
    assert not merged["exhausted"]
    # No `top` asked: as many as the longest part's list (the server's default).
    assert [p["id"] for p in merge_retrievals([a, b], top=None)["passages"]] == ["a1", "b1"]
    assert merge_retrievals([a, b], top=5)["exhausted"], "four passages for five"
    # The exploration's budget is shared, rounded up; what is no count goes as given.
    assert share_budget({"query": "q"}, 3, 300)["explore_budget"] == 100
    assert share_budget({"explore_budget": 7}, 3, 300)["explore_budget"] == 3
    assert share_budget({"explore_budget": 0}, 3, 300)["explore_budget"] == 0
    for odd in ("7", -1, True, None):
        assert share_budget({"explore_budget": odd}, 3, 300) == {"explore_budget": odd}
    openapi = {"components": {"schemas": {"R": {"properties": {"explore_budget": {"type": "integer", "default": 300}}}}}}
    assert setting_default(openapi, "explore_budget") == 300
    assert setting_default(openapi, "judge_budget") is None
    # treenav_corpus::Part::of pins xxh3-64("doc-7") = 4062204581482224284.
    assert part_of("doc-7", 3) == 4062204581482224284 % 3
    with pytest.raises(ValueError):
        part_of("doc-7", 0)


def test_the_command_line_refuses_bad_numbers_before_starting_ray():
    from treenav_ray.__main__ import main

    for argv, says in [
        (["serve", "--part", "p.tree", "--name", "n", "--replicas", "0"], "--replicas must be in 1..=1024"),
        (["serve", "--part", "p.tree", "--name", "n", "--port", "70000"], "--port must be in 1..=65535"),
        (["build-parts", "c.jsonl", "-o", "out", "--parts", "0"], "--parts must be in 1..=4096"),
    ]:
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert says in str(stop.value), (argv, stop.value)


def test_hosts_and_long_replies_are_read_as_treenav_serve_reads_them():
    import asyncio

    from treenav_ray.serve import _host_allowed, _read_bounded

    for host in ("127.0.0.1:8000", "127.0.0.1", "[::1]:8000", "[::1]", "localhost:80", "proxy.internal"):
        assert _host_allowed(host, ["proxy.internal"]), host
    for host in ("evil.example", "evil.example:80", "", "[::1", "127.0.0.1.evil.example"):
        assert not _host_allowed(host, []), host

    class Trickle:
        """A stream that hands out a few bytes a read, as a socket does."""

        def __init__(self, data: bytes):
            self.data = data

        async def read(self, n: int) -> bytes:
            out, self.data = self.data[:min(n, 7)], self.data[min(n, 7):]
            return out

    body = json.dumps({"passages": ["x" * 100] * 50}).encode()
    assert asyncio.run(_read_bounded(Trickle(body), len(body))) == body
    assert asyncio.run(_read_bounded(Trickle(body), len(body) - 1)) is None


def test_a_malformed_part_reply_is_a_502_not_a_crash():
    """The router over stand-ins for the parts' Ray handles: a real part
    (treenav serve) never answers 200 with these bodies, so no real peer
    can send them."""
    import asyncio

    from treenav_ray.serve import Router

    class Remote:
        def __init__(self, reply):
            self.reply = reply

        async def remote(self, *args):
            return self.reply

    class Part:
        def __init__(self, reply):
            self.forward = Remote(reply)

    class Request:
        method, headers = "POST", {"host": "127.0.0.1:8000", "content-length": "2"}

        class url:
            path = "/v1/retrieve"

        async def body(self):
            return b'{"tree": "t", "query": "q", "explore_budget": 6}'

    for reply in ((200, {"passages": [{"id": "x"}]}), (200, {"passages": [{"score": "high"}]}), (200, [])):
        router = Router(Part(reply), Part((200, {"passages": []})))
        router.budget = 300
        answer = asyncio.run(router(Request()))
        assert answer.status_code == 502, (reply, answer.body)
        assert json.loads(answer.body)["error"]["code"] == "part_reply_malformed"
