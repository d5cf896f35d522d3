"""The driver: texts → embeddings on an actor pool → plan → shards as Ray
tasks → merge. Every step writes files in a work folder and skips what a
previous run finished (a rerun after a failure redoes only what is
missing); the binary ``treenav`` does the tree work."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from .embed import BgeSmall


@dataclass
class BuildReport:
    """What ``build()`` did, with the time of each step in seconds."""

    tree: Path
    documents: int
    passages: int
    shards: int
    seconds: Dict[str, float] = field(default_factory=dict)
    kept: List[str] = field(default_factory=list)

    def to_json(self) -> str:
        d = dict(self.__dict__)
        d["tree"] = str(self.tree)
        return json.dumps(d, indent=2)


def _die_once(marker: Optional[str], what: str) -> None:
    """Test-only fault injection (see ``build(fault_once=…)``)."""
    if not marker:
        return
    path = Path(f"{marker}.{what}")
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os._exit(17)


class _EmbedBatch:
    """The actor of the pool: one bge-small session per actor."""

    def __init__(
        self, model_dir: Optional[str], threads: int, batch: int, fault_once: Optional[str]
    ) -> None:
        self.model = BgeSmall(model_dir, threads=threads, batch=batch)
        self.fault = fault_once

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        _die_once(self.fault, "embed")
        vectors = self.model(list(batch["text"]))
        return {"row": batch["row"].astype(np.int64), "vector": vectors}


def embed_texts(
    texts: Path,
    out: Path,
    *,
    model_dir: Optional[str] = None,
    actors: int = 2,
    threads: int = 1,
    batch: int = 32,
    rows_per_task: int = 1024,
    fault_once: Optional[str] = None,
) -> int:
    """Embeds a ``treenav texts`` file (``{"row", "text"}`` lines) on an
    actor pool into a float32 ``.npy`` at ``out`` (row i = line i),
    written beside and renamed when complete; returns the row count. The
    rows stream into a memory-mapped file: the driver never holds the
    matrix."""
    import ray

    count = _count_lines(texts)
    # Reading is I/O: it claims no CPU, which the actors hold (else a pool
    # as large as the cluster waits forever for its input).
    ds = ray.data.read_json(str(texts), lines=True, num_cpus=0)
    embedded = ds.map_batches(
        _EmbedBatch,
        fn_constructor_kwargs={
            "model_dir": model_dir,
            "threads": threads,
            "batch": batch,
            "fault_once": fault_once,
        },
        batch_size=rows_per_task,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=threads,
    )
    tmp = out.with_name(out.name + ".partial")
    matrix = None
    seen = np.zeros(count, dtype=bool)
    for part in embedded.iter_batches(batch_size=None, batch_format="numpy"):
        rows, vectors = part["row"], part["vector"]
        if matrix is None:
            matrix = np.lib.format.open_memmap(
                tmp, mode="w+", dtype=np.float32, shape=(count, vectors.shape[1])
            )
        if rows.size and (rows.min() < 0 or rows.max() >= count):
            raise ValueError(f"{texts}: a row outside 0..{count}")
        matrix[rows] = vectors
        seen[rows] = True
    if matrix is None or not seen.all():
        raise RuntimeError(f"{texts}: {int((~seen).sum())} of {count} rows were not embedded")
    matrix.flush()
    del matrix
    os.replace(tmp, out)
    return count


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def _run(cmd: Sequence[str]) -> str:
    done = subprocess.run(list(cmd), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr.strip()}")
    return done.stdout


def _shard_task(treenav: str, plan: str, index: int, count: int, fault: Optional[str]) -> str:
    _die_once(fault, "shard")
    return _run([treenav, "build", "--plan", plan, "--shard", f"{index}/{count}"]).strip()


def _npy_rows(path: Path) -> Optional[int]:
    """Rows of a complete ``.npy`` file, or ``None``."""
    try:
        return int(np.load(path, mmap_mode="r").shape[0])
    except (OSError, ValueError):
        return None


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _vectors_current(lines: Path, npy: Path, stamp: Path, rows: int) -> bool:
    """Whether ``npy`` holds the embedding of exactly these texts: as many
    rows, and the texts' digest recorded when it was written."""
    try:
        recorded = stamp.read_text().strip()
    except OSError:
        return False
    return _npy_rows(npy) == rows and recorded == _digest(lines)


def _corpus_stamp(corpus: Path) -> List[List[object]]:
    """The corpus's files by path, size and modification time (a folder's
    every file): what a plan was made from besides its vectors."""
    files = sorted(p for p in corpus.rglob("*") if p.is_file()) if corpus.is_dir() else [corpus]
    out: List[List[object]] = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        out.append([str(f), st.st_size, st.st_mtime_ns])
    return out


def _plan_key(command: Sequence[str], corpus: Path, stamps: Sequence[Path]) -> str:
    """What a plan depends on: the plan command (its ``build_args``, model
    and paths), the corpus's files and the vectors' digests."""
    key = {
        "command": list(command),
        "corpus": _corpus_stamp(corpus),
        "vectors": [s.read_text().strip() if s.is_file() else "" for s in stamps],
    }
    return json.dumps(key, sort_keys=True)


def _plan_current(plan: Path, key: str) -> bool:
    """Whether ``plan`` holds a finished plan made for ``key``."""
    try:
        recorded = (plan / "plan.key").read_text()
    except OSError:
        return False
    return (plan / "plan.bin").is_file() and recorded == key


def build(
    corpus: os.PathLike,
    output: os.PathLike,
    work: os.PathLike,
    *,
    shards: int = 4,
    treenav: str = "treenav",
    model_dir: Optional[str] = None,
    actors: int = 2,
    threads: int = 1,
    batch: int = 32,
    build_args: Sequence[str] = (),
    texts_args: Sequence[str] = (),
    fault_once: Optional[str] = None,
) -> BuildReport:
    """Builds the tree of ``corpus`` at ``output`` on the Ray cluster
    ``ray.init()`` connected to (call it first; ``address="auto"`` joins a
    running one). ``work`` holds the texts, the vectors and the plan; on a
    real cluster it must be a folder every node sees. ``build_args`` go to
    ``treenav build --plan`` (e.g. ``["--branching", "50"]``);
    ``texts_args`` to ``treenav texts`` and must agree with them
    (``--branching``, ``--embed-sentences``, ``--format``,
    ``--passage-words``).

    ``fault_once`` is for tests: a path prefix; the first embedding batch
    and the first shard task create ``PREFIX.embed`` / ``PREFIX.shard`` and
    kill their own worker process (``os._exit``), so that Ray's restart of
    the actor and retry of the task are exercised for real."""
    import ray

    if shards < 1:
        raise ValueError("shards must be at least 1")
    corpus, output, work = Path(corpus), Path(output), Path(work)
    work.mkdir(parents=True, exist_ok=True)
    texts, plan = work / "texts", work / "plan"
    report = BuildReport(tree=output, documents=0, passages=0, shards=shards)

    def timed(step: str, fn):
        start = time.perf_counter()
        value = fn()
        report.seconds[step] = round(time.perf_counter() - start, 3)
        return value

    timed("texts", lambda: _run([treenav, "texts", str(corpus), "-o", str(texts), *texts_args]))
    vectors = {}
    for kind in ("documents", "passages"):
        lines, npy = texts / f"{kind}.jsonl", work / f"{kind}.npy"
        rows = _count_lines(lines)
        stamp = work / f"{kind}.npy.sha256"
        if _vectors_current(lines, npy, stamp, rows):
            report.kept.append(str(npy))
        else:
            stamp.unlink(missing_ok=True)
            timed(
                f"embed {kind}",
                lambda: embed_texts(
                    lines,
                    npy,
                    model_dir=model_dir,
                    actors=actors,
                    threads=threads,
                    batch=batch,
                    fault_once=fault_once,
                ),
            )
            stamp.write_text(_digest(lines) + "\n")
            # New vectors make a kept plan (and its shards) stale.
            shutil.rmtree(plan, ignore_errors=True)
        vectors[kind] = npy
        setattr(report, kind, rows)
    model = ["--model-dir", model_dir] if model_dir else []
    plan_command = [treenav, "build", str(corpus), "--plan", str(plan), "--embedder", "bge-small",
                    *model, "--embeddings", str(vectors["documents"]),
                    "--passage-embeddings", str(vectors["passages"]), *build_args]
    key = _plan_key(plan_command, corpus, [work / f"{k}.npy.sha256" for k in ("documents", "passages")])
    if _plan_current(plan, key):
        report.kept.append(str(plan / "plan.bin"))
    else:
        # Another command, corpus or vectors: the kept plan and its shards
        # are another build's.
        shutil.rmtree(plan, ignore_errors=True)
        timed("plan", lambda: _run(plan_command))
        (plan / "plan.key").write_text(key)
    task = ray.remote(num_cpus=1, max_retries=3)(_shard_task)
    refs = [task.remote(treenav, str(plan), i, shards, fault_once) for i in range(shards)]
    timed("shards", lambda: ray.get(refs))
    timed("merge", lambda: _run([treenav, "merge", "--plan", str(plan), "-o", str(output)]))
    return report


MAX_PARTS = 4096  # treenav_corpus::part::MAX_PARTS


def check_parts(parts: int) -> None:
    """Refuses a part count `treenav build --part` would refuse."""
    if not 1 <= parts <= MAX_PARTS:
        raise ValueError(f"--parts must be in 1..={MAX_PARTS}, got {parts}")


def build_parts(
    corpus: os.PathLike,
    out_dir: os.PathLike,
    *,
    parts: int,
    treenav: str = "treenav",
    build_args: Sequence[str] = (),
) -> List[Path]:
    """Builds a corpus in ``parts`` parts, each a Ray task running ``treenav
    build CORPUS --part I/N`` (a complete tree over the documents whose id
    hashes to I) into ``out_dir/part-I.tree``; returns their paths, in order.
    A part already built by the same command from the same corpus files is
    kept (``part-I.tree.key``); a task whose worker dies is retried."""
    import ray

    check_parts(parts)
    corpus, out = Path(corpus).resolve(), Path(out_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    task = ray.remote(num_cpus=1, max_retries=3)(_run)
    trees, pending = [], []
    for i in range(parts):
        tree = out / f"part-{i}.tree"
        command = [treenav, "build", str(corpus), "--part", f"{i}/{parts}", *build_args, "-o", str(tree)]
        key, stamp = _plan_key(command, corpus, []), out / f"part-{i}.tree.key"
        trees.append(tree)
        try:
            if tree.is_file() and stamp.read_text() == key:
                continue
        except OSError:
            pass
        pending.append((task.remote(command), stamp, key))
    for ref, stamp, key in pending:
        ray.get(ref)
        partial = stamp.with_name(stamp.name + ".partial")
        partial.write_text(key)
        os.replace(partial, stamp)
    return trees


def remove_work(work: os.PathLike) -> None:
    """Deletes a work folder (texts, vectors, plan and shards)."""
    shutil.rmtree(work, ignore_errors=True)
