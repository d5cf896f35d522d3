//! The `treenav` binary as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn treenav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .output()
        .expect("run treenav")
}

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(rel)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn builds_the_bundled_sample_and_inspects_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sample.tree");
    let o = treenav(&["build", "-o", out.to_str().expect("utf8 path")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("48 documents, 96 passages"),
        "{}",
        text(&o.stdout)
    );

    let o = treenav(&["inspect", out.to_str().expect("utf8 path")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains("sample clusters") && stdout.contains("document"),
        "{stdout}"
    );

    let o = treenav(&["inspect", "--json", out.to_str().expect("utf8 path")]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("inspect --json is JSON");
    assert_eq!(v["documents"], 48);
    assert_eq!(v["passages"], 96);
    assert_eq!(v["levels"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["meta"]["branching"], 100);
}

#[test]
fn bad_input_stops_with_file_and_line_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("bad.tree");
    let bad = fixture("bad/corpus.jsonl");
    let o = treenav(&[
        "build",
        bad.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
    ]);
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("corpus.jsonl:3: malformed JSON"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error:")).count(),
        1,
        "{err}"
    );
    assert!(!out.exists(), "nothing is written when the build fails");
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);

    let o = treenav(&[
        "build",
        bad.to_str().expect("utf8"),
        "-o",
        out.to_str().expect("utf8"),
        "--skip-bad",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["documents"], 2);
    assert_eq!(v["skipped"].as_array().map(Vec::len), Some(3));
    assert!(out.exists());
}

#[test]
fn options_are_checked_before_work() {
    let o = treenav(&["build", "-o", "/tmp/never.tree", "--embedder", "openai"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--endpoint"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav(&["build", "-o", "/tmp/never.tree", "--branching", "1"]);
    assert!(
        text(&o.stderr).contains("branching must be in 2..=10000"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav(&["build", "-o", "/nonexistent-dir/x.tree"]);
    assert!(
        text(&o.stderr).contains("output folder /nonexistent-dir does not exist"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav(&[
        "build",
        fixture("beir").to_str().expect("utf8"),
        "-o",
        "/tmp/never.tree",
        "--format",
        "xml",
    ]);
    assert!(
        text(&o.stderr).contains("unknown format `xml`"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn inspect_rejects_a_foreign_file() {
    let o = treenav(&["inspect", fixture("squad.json").to_str().expect("utf8")]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not a treenav tree file"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn builds_every_fixture_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (input, docs) in [
        ("beir", 3),
        ("squad.json", 2),
        ("passages.jsonl", 3),
        ("psgs.tsv", 2),
        ("docs", 2),
    ] {
        let out = dir.path().join(format!("{input}.tree"));
        let o = treenav(&[
            "build",
            fixture(input).to_str().expect("utf8"),
            "-o",
            out.to_str().expect("utf8"),
            "--json",
        ]);
        assert!(o.status.success(), "{input}: {}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(v["documents"], docs, "{input}");
    }
}

#[test]
fn bench_prints_a_table_and_writes_the_json_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("results.json");
    let o = treenav(&[
        "bench",
        "--dataset",
        fixture("beir").to_str().expect("utf8 path"),
        "--systems",
        "tree,bm25,rerank,flat",
        "--quiet",
        "--json",
        json.to_str().expect("utf8 path"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    for row in ["| tree |", "| bm25 |", "| rerank |", "| flat |"] {
        assert!(stdout.contains(row), "{stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written"))
            .expect("valid JSON");
    assert_eq!(report["schema"], "treenav-bench/1");
    assert_eq!(report["dataset"]["gold"], "document");
    assert_eq!(report["dataset"]["queries"], 1);
    // The fixture's one query ("what does insulin do") has its gold first.
    assert_eq!(report["systems"]["bm25"]["document"]["hit_at_1"], 1.0);
    assert!(report["systems"]["tree"]["navigation"]["levels"].is_array());
    assert_eq!(report["config"]["rerank_n"], 100);
}

#[test]
fn bench_checks_its_options_first() {
    let o = treenav(&[
        "bench",
        "--dataset",
        fixture("beir").to_str().expect("utf8 path"),
        "--systems",
        "tree,vector",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("unknown system `vector`"),
        "{}",
        text(&o.stderr)
    );

    let o = treenav(&[
        "bench",
        "--dataset",
        fixture("beir").to_str().expect("utf8 path"),
        "--systems",
        "hybrid",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--embedder"),
        "{}",
        text(&o.stderr)
    );

    let o = treenav(&[
        "bench",
        "--dataset",
        fixture("psgs.tsv").to_str().expect("utf8 path"),
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("not a dataset"),
        "{}",
        text(&o.stderr)
    );
}
