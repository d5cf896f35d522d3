//! A tree's files never end half-replaced: `add`, `remove` and `compact`
//! are failed (an I/O error, as a full disk gives) and killed (a panic
//! unwinding through the writer, which runs none of its clean-up: what a
//! SIGKILL leaves) at every write and rename they make, one step after
//! another; and run on a real small filesystem (tmpfs) that fills up.
//! Each time the tree must open at the old or the new generation, with
//! every document of that generation, and take the next update.
//!
//! Its own test binary: the fault point is process-wide.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use treenav_builder::update::{add, compact, remove};
use treenav_builder::{
    build_tree, Embedder, EmbedderOptions, NoProgress, Summarizer, SummarizerOptions, TreeParams,
};
use treenav_tree::corpus::{load_str, Corpus, Format, LoadOptions};
use treenav_tree::generation::FAULT_POINT;
use treenav_tree::{file, NodeKind};

const WORDS: [[&str; 3]; 4] = [
    ["insulin", "glucose", "pancreas"],
    ["volcano", "magma", "lava"],
    ["violin", "symphony", "concerto"],
    ["galaxy", "telescope", "nebula"],
];

fn corpus(range: std::ops::Range<usize>, prefix: &str) -> Corpus {
    let lines: Vec<String> = range
        .map(|i| {
            let w = WORDS[i % WORDS.len()];
            format!(
                r#"{{"_id":"{prefix}{i}","title":"{} note {i}","text":"The {} and the {} here. Unique{prefix}{i} marks it."}}"#,
                w[0], w[1], w[2]
            )
        })
        .collect();
    load_str(
        &lines.join("\n"),
        "c.jsonl",
        Format::Beir,
        &LoadOptions::default(),
    )
    .expect("corpus")
}

/// A saved tree of 60 documents with one update (20 added) in its delta.
async fn tree_with_a_delta(dir: &Path) -> PathBuf {
    let params = TreeParams::default().branching(6).check().expect("params");
    let embedder = Embedder::new(&EmbedderOptions::default(), params.seed()).expect("embedder");
    let summarizer = Summarizer::new(&SummarizerOptions::Extractive).expect("summarizer");
    let tree = build_tree(
        corpus(0..60, "d"),
        "c",
        &params,
        &embedder,
        &summarizer,
        &NoProgress,
    )
    .await
    .expect("build");
    std::fs::create_dir_all(dir).expect("dir");
    let path = dir.join("t.tree");
    file::save(&tree, &path).expect("save");
    add(&path, corpus(0..20, "n"), None, &NoProgress)
        .await
        .expect("add");
    path
}

/// The documents the tree at `path` opens with, checked against its
/// lexical index.
fn documents(path: &Path) -> BTreeSet<String> {
    let tree = file::load(path).unwrap_or_else(|e| panic!("the tree does not open: {e}"));
    let ids: BTreeSet<String> = tree
        .documents()
        .filter_map(|d| match &tree.get(d)?.kind {
            NodeKind::Document { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    let indexed = tree.lexical().map_or(0, |l| l.index.len());
    assert_eq!(indexed, ids.len(), "the index and the tree disagree");
    ids
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Add,
    Remove,
    Compact,
}

/// Runs `op` on the tree at `path` on a task of its own: `Err` for an
/// error or a panic.
async fn run(op: Op, path: &Path) -> Result<(), String> {
    let path = path.to_path_buf();
    let task = tokio::spawn(async move {
        match op {
            Op::Add => add(&path, corpus(20..30, "n"), None, &NoProgress)
                .await
                .map(|_| ()),
            Op::Remove => {
                let ids: Vec<String> = (0..10).map(|i| format!("d{i}")).collect();
                remove(&path, &ids, None).await.map(|_| ())
            }
            Op::Compact => compact(&path).map(|_| ()),
        }
        .map_err(|e| e.to_string())
    });
    match task.await {
        Ok(result) => result,
        Err(e) => Err(format!("panicked: {e}")),
    }
}

fn copy_folder(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_folder(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy");
        }
    }
}

/// How many fault-point steps `op` passes on a fresh copy of `pristine`.
async fn steps_of(op: Op, pristine: &Path, work: &Path) -> usize {
    copy_folder(pristine.parent().expect("dir"), work);
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    fail::cfg_callback(FAULT_POINT, move || {
        seen.fetch_add(1, Ordering::SeqCst);
    })
    .expect("cfg");
    let done = run(op, &work.join("t.tree")).await;
    fail::remove(FAULT_POINT);
    done.expect("the operation without a fault");
    count.load(Ordering::SeqCst)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_or_a_kill_at_any_step_leaves_the_old_or_the_new_generation() {
    let scenario = fail::FailScenario::setup();
    let dir = tempfile::tempdir().expect("tempdir");
    let pristine = tree_with_a_delta(&dir.path().join("pristine")).await;
    let old = documents(&pristine);
    let work = dir.path().join("work");
    let tree = work.join("t.tree");
    for op in [Op::Add, Op::Remove, Op::Compact] {
        let steps = steps_of(op, &pristine, &work).await;
        let new = documents(&tree);
        assert!(steps >= 4, "{op:?} passes only {steps} steps");
        for action in ["return", "panic"] {
            for n in 0..steps {
                copy_folder(pristine.parent().expect("dir"), &work);
                fail::cfg(FAULT_POINT, &format!("{n}*off->1*{action}->off")).expect("cfg");
                let failed = run(op, &tree).await;
                fail::remove(FAULT_POINT);
                assert!(
                    failed.is_err(),
                    "{op:?}: the {action} at step {n} went unnoticed"
                );
                let now = documents(&tree);
                assert!(
                    now == old || now == new,
                    "{op:?}, {action} at step {n} of {steps}: {} documents, neither the old {} nor the new {}",
                    now.len(),
                    old.len(),
                    new.len()
                );
                // The tree takes the next update, and it lands.
                run(Op::Compact, &tree)
                    .await
                    .unwrap_or_else(|e| panic!("{op:?}, {action} at step {n}: compact after: {e}"));
                assert_eq!(documents(&tree), now);
            }
        }
    }
    scenario.teardown();
}

/// Mounts a tmpfs of `bytes` at `at`; `false` when this machine does not
/// let the test mount one (not root, or no mount in a container).
fn mount_tmpfs(at: &Path, bytes: u64) -> bool {
    std::fs::create_dir_all(at).expect("dir");
    std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={bytes}")])
        .arg("tmpfs")
        .arg(at)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn unmount(at: &Path) {
    let _ = std::process::Command::new("umount").arg(at).status();
}

/// The bytes a folder takes on a tmpfs (each file in whole pages).
fn folder_bytes(dir: &Path) -> u64 {
    const PAGE: u64 = 4096;
    std::fs::read_dir(dir)
        .expect("read_dir")
        .flatten()
        .map(|e| match e.file_type().expect("type").is_dir() {
            true => PAGE + folder_bytes(&e.path()),
            false => e.metadata().map_or(0, |m| m.len().div_ceil(PAGE) * PAGE),
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_up_during_an_update_or_a_compaction_loses_nothing() {
    let scenario = fail::FailScenario::setup();
    let dir = tempfile::tempdir().expect("tempdir");
    let pristine = tree_with_a_delta(&dir.path().join("pristine")).await;
    let old = documents(&pristine);
    let size = folder_bytes(pristine.parent().expect("dir"));
    let mount = dir.path().join("small");
    if !mount_tmpfs(&mount, size * 3) {
        println!("SKIPPED full-disk test: cannot mount a tmpfs here (needs root); the fault-point test covers ENOSPC by injection");
        return;
    }
    unmount(&mount);
    let mut full = 0;
    // From just room for the copy to room for it twice over: the disk
    // fills at a different write each time.
    let step = (size / 12).max(4096);
    for room in (0..=12).map(|k| size + 4096 + k * step) {
        for op in [Op::Compact, Op::Add, Op::Remove] {
            assert!(mount_tmpfs(&mount, room), "mount");
            let tree = mount.join("t.tree");
            copy_folder(pristine.parent().expect("dir"), &mount);
            let done = run(op, &tree).await;
            if let Err(e) = &done {
                assert!(e.contains("space"), "{op:?} with {room} bytes: {e}");
                full += 1;
            }
            let now = documents(&tree);
            if matches!(op, Op::Compact) || done.is_err() {
                assert_eq!(now, old, "{op:?} with {room} bytes");
            }
            unmount(&mount);
        }
    }
    assert!(
        full >= 3,
        "the disk filled only {full} times: the sizes miss"
    );
    scenario.teardown();
}
