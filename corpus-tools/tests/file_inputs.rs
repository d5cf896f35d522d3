//! Every flag that takes a path to read, handed a FIFO, `/dev/zero`, a
//! folder and a sparse 80 GiB file: each command fails within seconds with
//! an error naming the flag or the file — never hangs on the FIFO, never
//! reads the device or the sparse file whole (issue 27, rows 4 and 5).
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longest a refusal may take; a hang or a whole read of 80 GiB takes far
/// longer, and the child is killed then.
const LIMIT: Duration = Duration::from_secs(60);

/// Runs treenav with `args`; `None` when it ran past [`LIMIT`] (killed).
fn run(args: &[String]) -> Option<(bool, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run treenav");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                std::io::Read::read_to_string(&mut e, &mut err).expect("stderr");
            }
            return Some((status.success(), err));
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn s(p: &Path) -> String {
    p.to_str().expect("utf8 path").to_string()
}

fn ok(args: &[String]) {
    let (success, err) = run(args).expect("a setup command finishes");
    assert!(success, "{args:?}: {err}");
}

/// The bad inputs: a FIFO, a device, a folder, a sparse 80 GiB file.
fn bad_inputs(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let fifo = dir.join("fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success(), "mkfifo");
    let sparse = dir.join("sparse.bin");
    std::fs::File::create(&sparse)
        .and_then(|f| f.set_len(80 << 30))
        .expect("a sparse file");
    let folder = dir.join("folder");
    std::fs::create_dir(&folder).expect("folder");
    vec![
        ("FIFO", fifo),
        ("device", PathBuf::from("/dev/zero")),
        ("folder", folder),
        ("sparse", sparse),
    ]
}

/// A copy of `from` (a file or a folder of files) at `to` with `entry`
/// (a file name inside) made a symlink to `bad`.
fn with_bad_entry(from: &Path, to: &Path, entry: &str, bad: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        if e.file_type().expect("type").is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    }
    let target = to.join(entry);
    let _ = std::fs::remove_file(&target);
    std::os::unix::fs::symlink(bad, &target).expect("symlink");
}

#[test]
fn every_path_flag_refuses_fifos_devices_folders_and_huge_files_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let beir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/beir");
    // A good tree (its own folder), and a good plan with its three shards.
    let good = d.join("good");
    std::fs::create_dir(&good).expect("mkdir");
    let tree = good.join("t.tree");
    ok(&["build".into(), "-o".into(), s(&tree)]);
    let plan = d.join("plan");
    ok(&[
        "build".into(),
        s(&sample),
        "--branching".into(),
        "4".into(),
        "--plan".into(),
        s(&plan),
    ]);
    for i in 0..2 {
        ok(&[
            "build".into(),
            "--plan".into(),
            s(&plan),
            "--shard".into(),
            format!("{i}/2"),
        ]);
    }
    let bads = bad_inputs(d);
    let mut failures = Vec::new();
    for (n, (label, bad)) in bads.iter().enumerate() {
        let b = s(bad);
        let out = d.join(format!("out-{n}"));
        let o = s(&out);
        // Trees, plans and shards whose one file is the bad input.
        let bad_tree = d.join(format!("tree-{n}"));
        with_bad_entry(&good, &bad_tree, "t.tree", bad);
        let bad_texts = d.join(format!("texts-{n}"));
        with_bad_entry(&good, &bad_texts, "t.tree.texts", bad);
        let bad_lexical = d.join(format!("lexical-{n}"));
        with_bad_entry(&good, &bad_lexical, "t.tree.lexical", bad);
        let mut cases: Vec<(String, Vec<String>)> = Vec::new();
        let mut case = |what: &str, args: &[&str]| {
            cases.push((
                what.to_string(),
                args.iter().map(|a| a.to_string()).collect(),
            ));
        };
        let t = s(&tree);
        let (bt, bx, bl) = (
            s(&bad_tree.join("t.tree")),
            s(&bad_texts.join("t.tree")),
            s(&bad_lexical.join("t.tree")),
        );
        if *label != "folder" {
            // A folder is a corpus (of Markdown and text files).
            case("build INPUT", &["build", &b, "-o", &o]);
            case(
                "merge --corpus",
                &["merge", "--plan", &s(&plan), "--corpus", &b, "-o", &o],
            );
        }
        case(
            "build --embeddings",
            &["build", &s(&sample), "--embeddings", &b, "-o", &o],
        );
        case(
            "build --model-dir",
            &[
                "build",
                &s(&sample),
                "--embedder",
                "bge-small",
                "--model-dir",
                &b,
                "-o",
                &o,
            ],
        );
        case("query TREE", &["query", &bt, "Tesla"]);
        case("query TREE.texts", &["query", &bx, "Tesla"]);
        case("query TREE.lexical", &["query", &bl, "Tesla"]);
        case("inspect TREE", &["inspect", &bt]);
        case(
            "query --judge-config",
            &["query", &t, "Tesla", "--judge-config", &b],
        );
        case(
            "query --model-dir",
            &[
                "query",
                &t,
                "Tesla",
                "--judge",
                "cross-encoder",
                "--model-dir",
                &b,
            ],
        );
        case(
            "query --ort-library",
            &[
                "query",
                &t,
                "Tesla",
                "--judge",
                "cross-encoder",
                "--ort-library",
                &b,
            ],
        );
        case(
            "prune --chunks",
            &["prune", "--question", "q", "--chunks", &b],
        );
        case(
            "prune --tokenizer",
            &[
                "prune",
                "--question",
                "q",
                "--chunks",
                &s(&sample),
                "--tokenizer",
                &b,
            ],
        );
        case(
            "serve --tree",
            &[
                "serve",
                "--tree",
                &format!("t={bt}"),
                "--addr",
                "127.0.0.1:0",
            ],
        );
        case(
            "serve --auth-token-file",
            &[
                "serve",
                "--tree",
                &format!("t={t}"),
                "--addr",
                "127.0.0.1:0",
                "--auth-token-file",
                &b,
            ],
        );
        case(
            "serve --tokenizer",
            &[
                "serve",
                "--tree",
                &format!("t={t}"),
                "--addr",
                "127.0.0.1:0",
                "--tokenizer",
                &b,
            ],
        );
        case("bench --dataset", &["bench", "--dataset", &b]);
        case(
            "bench --exclude-queries",
            &["bench", "--dataset", &s(&beir), "--exclude-queries", &b],
        );
        case(
            "bench --tree",
            &["bench", "--dataset", &s(&beir), "--tree", &bt],
        );
        for (entry, what) in [
            ("plan.bin", "build --plan (plan.bin)"),
            ("vectors.bin", "build --plan (vectors.bin)"),
        ] {
            let p = d.join(format!("plan-{entry}-{n}"));
            with_bad_entry(&plan, &p, entry, bad);
            // A shard not built yet: a built one (0/2) is kept without
            // reading the vectors.
            case(what, &["build", "--plan", &s(&p), "--shard", "0/3"]);
        }
        let p = d.join(format!("plan-shard-{n}"));
        with_bad_entry(&plan, &p, "shard-1-of-2.bin", bad);
        case(
            "merge --plan (shard)",
            &["merge", "--plan", &s(&p), "-o", &o],
        );
        for (what, args) in cases {
            match run(&args) {
                None => failures.push(format!(
                    "{what} with a {label}: still running after {LIMIT:?}"
                )),
                Some((true, _)) => failures.push(format!("{what} with a {label}: succeeded")),
                Some((false, err)) if err.contains("panicked") => {
                    failures.push(format!("{what} with a {label}: panicked: {err}"))
                }
                Some((false, err)) => {
                    // The error names the file: the bad input itself, or
                    // the tree, plan or shard entry that links to it.
                    let names = [
                        bad.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
                        "t.tree",
                        "plan.bin",
                        "vectors.bin",
                        "shard-1-of-2.bin",
                    ];
                    if !names.iter().any(|n| err.contains(n)) {
                        failures.push(format!(
                            "{what} with a {label}: the error names no file: {err}"
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 27 row 6: the plan's vectors are checked over their whole body,
/// not only their header: a flipped byte, or NaN in every row, stops a
/// shard before it builds another tree.
#[test]
fn a_corrupted_vectors_file_stops_the_shards() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let plan = dir.path().join("plan");
    ok(&["build".into(), s(&sample), "--plan".into(), s(&plan)]);
    let vectors = plan.join("vectors.bin");
    let good = std::fs::read(&vectors).expect("read");
    // The header: magic, version, reserved, hash, rows, dims (48 bytes).
    let header = 48;
    let shard = |expect: &str| {
        let (success, err) = run(&[
            "build".into(),
            "--plan".into(),
            s(&plan),
            "--shard".into(),
            "0/2".into(),
        ])
        .expect("finishes");
        assert!(!success && err.contains(expect), "{err}");
        assert!(err.contains("vectors.bin"), "{err}");
    };
    let mut flipped = good.clone();
    let last = flipped.len() - 2;
    flipped[last] ^= 0x01;
    std::fs::write(&vectors, &flipped).expect("write");
    shard("checksum mismatch");
    let mut nan = good.clone();
    for v in nan[header..].chunks_exact_mut(4) {
        v.copy_from_slice(&0x7fc0_0000u32.to_le_bytes());
    }
    std::fs::write(&vectors, &nan).expect("write");
    shard("NaN");
    std::fs::write(&vectors, &good).expect("write");
    ok(&[
        "build".into(),
        "--plan".into(),
        s(&plan),
        "--shard".into(),
        "0/2".into(),
    ]);
}
