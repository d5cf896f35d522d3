//! Hostile round 5, as a user runs the binary: a FIFO planted as the lock,
//! outputs pointed at inputs, ids and titles that would forge output or
//! break JSON, a damaged index, a compaction killed at every point.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn treenav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run treenav")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// A tree of three documents whose title and ids carry a newline that
/// would forge an output line and a bidi override.
fn hostile_tree(dir: &Path) -> String {
    let corpus = dir.join("hostile.jsonl");
    let records = [
        serde_json::json!({"id": "p1", "doc_id": "evil\u{202e}id", "title": "Volcano notes\nerror: forged line", "text": "Magma rises and the volcano erupts lava.\u{7f} \u{85}"}),
        serde_json::json!({"id": "p2", "doc_id": "calm", "title": "Orchestra", "text": "The violin plays the concerto with the symphony."}),
        serde_json::json!({"id": "p3", "doc_id": "sky", "title": "Telescope", "text": "A galaxy and a nebula seen through the telescope."}),
    ];
    let lines: Vec<String> = records.iter().map(|r| r.to_string()).collect();
    std::fs::write(&corpus, lines.join("\n")).expect("write");
    let tree = dir.join("h.tree");
    let o = treenav(&[
        "build",
        corpus.to_str().expect("utf8"),
        "--embedder",
        "tfidf",
        "-o",
        tree.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    tree.to_string_lossy().into_owned()
}

#[test]
fn hostile_ids_and_titles_neither_break_json_nor_forge_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = hostile_tree(dir.path());
    let o = treenav(&["query", &tree, "volcano magma", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("query --json is not JSON ({e}): {}", text(&o.stdout)));
    let first = &json["passages"][0];
    assert_eq!(first["title"], "Volcano notes\nerror: forged line");
    // DEL and a C1 control (mis-decoded cp1252) stay valid JSON, escaped.
    assert!(
        first["text"]
            .as_str()
            .is_some_and(|t| t.ends_with("\u{7f} \u{85}")),
        "{first}"
    );
    assert!(text(&o.stdout).contains("\\u0085"), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("\\u202e"), "{}", text(&o.stdout));
    let o = treenav(&["query", &tree, "volcano magma"]);
    let out = text(&o.stdout);
    assert!(
        !out.lines().any(|l| l.starts_with("error: forged")),
        "a title forged a line:\n{out}"
    );
    assert!(!out.contains('\u{202e}'), "{out}");
    let o = treenav(&[
        "remove",
        &tree,
        "evil\u{202e}id",
        "gone\nerror: forged",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("remove --json is not JSON ({e}): {}", text(&o.stdout)));
    assert_eq!(json["removed"], 1);
    let o = treenav(&["remove", &tree, "gone\nerror: forged"]);
    assert!(
        !text(&o.stdout)
            .lines()
            .any(|l| l.starts_with("error: forged")),
        "{}",
        text(&o.stdout)
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_planted_as_the_lock_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = hostile_tree(dir.path());
    let lock = format!("{tree}.lock");
    let _ = std::fs::remove_file(&lock);
    assert!(Command::new("mkfifo")
        .arg(&lock)
        .status()
        .expect("mkfifo")
        .success());
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(["remove", &tree, "calm"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    while child.try_wait().expect("wait").is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("`treenav remove` hangs on a FIFO lock");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().expect("output");
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("FIFO"), "{}", text(&o.stderr));
}

#[test]
fn outputs_pointed_at_inputs_are_refused_and_the_inputs_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("beir");
    std::fs::create_dir(&data).expect("dir");
    for entry in std::fs::read_dir(fixture("beir"))
        .expect("fixture")
        .flatten()
    {
        let to = data.join(entry.file_name());
        if entry.path().is_dir() {
            std::fs::create_dir(&to).expect("dir");
            for inner in std::fs::read_dir(entry.path()).expect("dir").flatten() {
                std::fs::copy(inner.path(), to.join(inner.file_name())).expect("copy");
            }
        } else {
            std::fs::copy(entry.path(), &to).expect("copy");
        }
    }
    let corpus = data.join("corpus.jsonl");
    let before = std::fs::read(&corpus).expect("read");
    let tree = hostile_tree(dir.path());
    let tree_bytes = std::fs::read(&tree).expect("read");
    let d = data.to_str().expect("utf8");
    let texts = format!("{tree}.texts");
    for (flag, target) in [
        ("--json", corpus.to_str().expect("utf8")),
        ("--json", tree.as_str()),
        ("--json", texts.as_str()),
        ("--curve-csv", corpus.to_str().expect("utf8")),
        ("--evidence", corpus.to_str().expect("utf8")),
        ("--evidence", tree.as_str()),
    ] {
        // --evidence needs the tree system (a bm25-only run is refused).
        let systems = if flag == "--evidence" {
            "bm25,tree"
        } else {
            "bm25"
        };
        let o = treenav(&[
            "bench",
            "--dataset",
            d,
            "--systems",
            systems,
            "--tree",
            &tree,
            flag,
            target,
        ]);
        assert!(!o.status.success(), "{flag} {target} accepted");
        assert!(
            text(&o.stderr).contains("overwrite an input"),
            "{flag} {target}: {}",
            text(&o.stderr)
        );
    }
    assert_eq!(std::fs::read(&corpus).expect("read"), before);
    assert_eq!(std::fs::read(&tree).expect("read"), tree_bytes);
}

#[test]
fn a_damaged_index_is_an_error_never_a_panic_and_verify_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("s.tree");
    let t = tree.to_str().expect("utf8");
    let o = treenav(&["build", "--embedder", "tfidf", "-o", t]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = treenav(&["inspect", t, "--verify"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let folder = format!("{t}.tantivy");
    let files: Vec<std::path::PathBuf> = std::fs::read_dir(&folder)
        .expect("folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|x| x == "fieldnorm" || x == "idx")
        })
        .collect();
    assert!(!files.is_empty());
    let mut found = 0;
    for file in &files {
        let pristine = std::fs::read(file).expect("read");
        for at in (0..pristine.len()).step_by((pristine.len() / 8).max(1)) {
            let mut bytes = pristine.clone();
            bytes[at] ^= 0x5a;
            std::fs::write(file, &bytes).expect("write");
            let o = treenav(&[
                "query",
                t,
                "Tesla alternating current",
                "--judge",
                "lexical",
            ]);
            let err = text(&o.stderr);
            // tantivy's panics are caught (the hook may print one), never
            // the process's exit.
            assert!(o.status.code() != Some(101), "a panic's exit: {err}");
            let v = treenav(&["inspect", t, "--verify"]);
            // A damaged header fails the open; any other damage, the
            // checksums: either way the error names the index folder.
            if !v.status.success() {
                assert!(text(&v.stderr).contains(".tantivy"), "{}", text(&v.stderr));
                found += 1;
            }
            std::fs::write(file, &pristine).expect("restore");
        }
    }
    assert!(found > 0, "no damage was found");
    let v = treenav(&["inspect", t, "--verify"]);
    assert!(v.status.success(), "{}", text(&v.stderr));
}

/// `treenav compact` killed (SIGKILL) at random points: the tree opens
/// every time, with every document.
#[test]
fn a_compaction_killed_at_any_point_leaves_a_tree_that_opens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("s.tree");
    let t = tree.to_str().expect("utf8");
    let o = treenav(&["build", "--embedder", "tfidf", "-o", t]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = treenav(&["remove", t, "Tesla"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let docs = |o: &Output| -> serde_json::Value {
        serde_json::from_slice::<serde_json::Value>(&o.stdout)
            .map_or(serde_json::Value::Null, |v| v["documents"].clone())
    };
    let expected = docs(&treenav(&["inspect", t, "--json"]));
    assert!(expected.is_number(), "inspect --json has documents");
    // Timed from a full compaction, then cut at points across it.
    let started = Instant::now();
    let o = treenav(&["compact", t]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let full = started.elapsed();
    for step in 1..=12u32 {
        let o = treenav(&["remove", t, &format!("nothing-{step}")]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
            .args(["compact", t])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(full * step / 12);
        let _ = child.kill();
        let _ = child.wait();
        let o = treenav(&["inspect", t, "--json"]);
        assert!(o.status.success(), "step {step}: {}", text(&o.stderr));
        assert_eq!(docs(&o), expected, "step {step}");
    }
}

/// `treenav texts x/documents.jsonl -o x` would write `x/documents.jsonl`
/// over its input (#66 row 2): refused, the corpus kept.
#[test]
fn texts_never_writes_over_its_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("documents.jsonl");
    let lines = [
        r#"{"id": "a", "text": "Magma rises and the volcano erupts."}"#,
        r#"{"id": "b", "text": "The violin plays the concerto."}"#,
    ];
    std::fs::write(&corpus, lines.join("\n")).expect("write");
    let before = std::fs::read(&corpus).expect("read");
    let folder = dir.path().to_str().expect("utf8");
    let o = treenav(&["texts", corpus.to_str().expect("utf8"), "-o", folder]);
    assert!(!o.status.success(), "accepted: {}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("overwrite an input"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read(&corpus).expect("read"), before);
    assert!(!dir.path().join("passages.jsonl").exists(), "half written");
    let elsewhere = dir.path().join("out");
    let o = treenav(&[
        "texts",
        corpus.to_str().expect("utf8"),
        "-o",
        elsewhere.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(elsewhere.join("documents.jsonl").is_file());
}

/// Side files of another generation (#66 row 6): an older tree's passage
/// vectors copied in were dropped silently (rc 0, another top 5, `inspect`
/// saying "0 of 98 passages"). Now `query` and `inspect --verify` refuse
/// the tree, naming the file and the fix.
#[test]
fn vectors_of_another_generation_are_refused_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = hostile_tree(dir.path());
    let other_dir = dir.path().join("other");
    std::fs::create_dir(&other_dir).expect("dir");
    let other = hostile_tree(&other_dir);
    // The same corpus built again is the same payload: change it first.
    let o = treenav(&["remove", &other, "calm"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = treenav(&["compact", &other]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for suffix in ["passage-vectors", "vectors"] {
        let (from, to) = (format!("{other}.{suffix}"), format!("{tree}.{suffix}"));
        let kept = std::fs::read(&to).expect("read");
        std::fs::copy(&from, &to).expect("copy");
        for args in [
            vec!["query", tree.as_str(), "volcano"],
            vec!["inspect", tree.as_str(), "--verify"],
        ] {
            let o = treenav(&args);
            let said = text(&o.stderr);
            assert!(
                !o.status.success(),
                "{args:?} with another tree's {suffix}: rc 0"
            );
            assert!(
                said.contains(&format!(".{suffix}")) && said.contains("another tree file"),
                "{args:?}: {said}"
            );
        }
        std::fs::write(&to, kept).expect("restore");
        let o = treenav(&["query", &tree, "volcano"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
}
