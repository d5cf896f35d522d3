"""The Ray driver against a real local Ray cluster on 127.0.0.1 (a head
and one worker node, started here with ``ray start``): the tree it builds
is byte for byte the one-process build's from the same vectors, and a
worker process killed mid-build (an embedding actor and a shard task kill
themselves once) is retried by Ray into the same tree.

Needs ``TREENAV_BIN`` (the treenav binary), ``ray``, ``onnxruntime`` and
``tokenizers``, and bge-small-en in the model cache
(``scripts/fetch-models.sh``); ``corpus-tools/tests/ray_build.rs`` runs
it with all of them."""

import json
import os
import subprocess
from pathlib import Path

import numpy as np

from treenav_ray import BgeSmall, build

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "samples" / "xquad-sample.json"
TREENAV = os.environ.get("TREENAV_BIN", "treenav")
SIDE_FILES = ["", ".texts", ".lexical", ".vectors", ".passage-vectors"]


def run(*args: str) -> None:
    done = subprocess.run([TREENAV, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def same_files(a: Path, b: Path) -> None:
    for suffix in SIDE_FILES:
        left, right = Path(f"{a}{suffix}"), Path(f"{b}{suffix}")
        assert left.is_file(), f"{left} was not written"
        assert left.read_bytes() == right.read_bytes(), f"{suffix or 'the tree file'} differs"


def one_process_build(work: Path, out: Path) -> None:
    run("build", str(SAMPLE), "--branching", "4", "--embedder", "bge-small",
        "--embeddings", str(work / "documents.npy"),
        "--passage-embeddings", str(work / "passages.npy"), "-o", str(out))


def test_the_ray_build_is_the_one_process_build(cluster, tmp_path):
    work, tree = tmp_path / "work", tmp_path / "ray.tree"
    branching = ["--branching", "4"]
    report = build(SAMPLE, tree, work, shards=3, treenav=TREENAV,
                   build_args=branching, texts_args=branching)
    assert (report.documents, report.passages) == (48, 96)
    one_process_build(work, tmp_path / "single.tree")
    same_files(tree, tmp_path / "single.tree")

    # The actors embed as treenav's own bge-small does (texts sorted by
    # length, batches padded to their longest, CLS, L2): the same texts
    # through one in-process session give the same rows. The model's
    # activations are quantised per batch, so one text alone differs in
    # the third decimal.
    vectors = np.load(work / "passages.npy")
    assert vectors.shape == (96, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    model = BgeSmall()
    lines = (work / "texts" / "passages.jsonl").read_text().splitlines()
    texts = [json.loads(line)["text"] for line in lines]
    assert float(np.min(np.sum(model(texts) * vectors, axis=1))) > 0.9999
    assert float(model(texts[:1])[0] @ vectors[0]) > 0.99

    # A rerun keeps what is done: the vectors, the plan and every shard.
    again = build(SAMPLE, tree, work, shards=3, treenav=TREENAV,
                  build_args=branching, texts_args=branching)
    assert any(k.endswith("passages.npy") for k in again.kept), again.kept
    assert "embed passages" not in again.seconds
    same_files(tree, tmp_path / "single.tree")


def test_a_killed_worker_is_retried_into_the_same_tree(cluster, tmp_path):
    work, tree = tmp_path / "work", tmp_path / "ray.tree"
    fault = tmp_path / "fault"
    branching = ["--branching", "4"]
    build(SAMPLE, tree, work, shards=3, treenav=TREENAV, build_args=branching,
          texts_args=branching, fault_once=str(fault))
    # Each fault fired once: an embedding actor and a shard task died.
    assert Path(f"{fault}.embed").exists() and Path(f"{fault}.shard").exists()
    one_process_build(work, tmp_path / "single.tree")
    same_files(tree, tmp_path / "single.tree")


def test_vectors_are_kept_only_for_the_texts_they_embed(tmp_path):
    from treenav_ray.driver import _digest, _vectors_current

    lines, npy, stamp = tmp_path / "t.jsonl", tmp_path / "t.npy", tmp_path / "t.npy.sha256"
    lines.write_text('{"row": 0, "text": "a"}\n{"row": 1, "text": "b"}\n')
    np.save(npy, np.zeros((2, 4), dtype=np.float32))
    assert not _vectors_current(lines, npy, stamp, 2), "no stamp: embedded by someone else"
    stamp.write_text(_digest(lines) + "\n")
    assert _vectors_current(lines, npy, stamp, 2)
    assert not _vectors_current(lines, npy, stamp, 3), "another row count"
    lines.write_text('{"row": 0, "text": "a"}\n{"row": 1, "text": "c"}\n')
    assert not _vectors_current(lines, npy, stamp, 2), "same count, other texts"
    npy.write_bytes(b"\x93NUMPY truncated")
    stamp.write_text(_digest(lines) + "\n")
    assert not _vectors_current(lines, npy, stamp, 2), "a broken .npy"


def test_a_plan_is_kept_only_for_the_command_and_inputs_it_was_made_from(tmp_path):
    """#66 row 12: the plan was kept when ``build_args`` changed."""
    from treenav_ray.driver import _plan_current, _plan_key

    corpus, plan = tmp_path / "corpus.jsonl", tmp_path / "plan"
    corpus.write_text('{"id": "a", "text": "x"}\n')
    stamp = tmp_path / "passages.npy.sha256"
    stamp.write_text("abc\n")
    command = ["treenav", "build", str(corpus), "--plan", str(plan), "--branching", "4"]
    key = _plan_key(command, corpus, [stamp])
    plan.mkdir()
    (plan / "plan.bin").write_bytes(b"plan")
    assert not _plan_current(plan, key), "no key recorded: another driver's plan"
    (plan / "plan.key").write_text(key)
    assert _plan_current(plan, key)
    assert not _plan_current(plan, _plan_key(command[:-1] + ["8"], corpus, [stamp])), "other build_args"
    stamp.write_text("abd\n")
    assert not _plan_current(plan, _plan_key(command, corpus, [stamp])), "other vectors"
    stamp.write_text("abc\n")
    corpus.write_text('{"id": "a", "text": "x", "year": 2020}\n')
    assert not _plan_current(plan, _plan_key(command, corpus, [stamp])), "another corpus"
