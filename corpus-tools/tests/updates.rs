//! `treenav add`, `remove` and `compact` as a user runs them, and an add
//! killed (SIGKILL) at random points: the tree is then as before or as
//! after, never a mix.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Instant;

fn treenav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .output()
        .expect("run treenav")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(args: &[&str]) -> String {
    let o = treenav(args);
    assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    text(&o.stdout)
}

/// `n` documents of six topics from `from`, ids `{prefix}{i}`, each with a
/// word of its own (`w{prefix}{i}`) and three passages.
fn write_corpus(path: &Path, prefix: &str, from: usize, n: usize) {
    let topics = [
        "insulin glucose diabetes pancreas",
        "striker goal league match",
        "volcano magma eruption lava",
        "violin symphony orchestra concerto",
        "galaxy telescope nebula orbit",
        "wheat harvest farmer tractor",
    ];
    let lines: Vec<String> = (from..from + n)
        .map(|i| {
            let t = topics[i % topics.len()];
            let body = format!("About {t} number {i}. The w{prefix}{i} word is here. {t} again. ").repeat(6);
            serde_json::json!({"_id": format!("{prefix}{i}"), "title": format!("{t} {i}"), "text": body})
                .to_string()
        })
        .collect();
    std::fs::write(path, lines.join("\n")).expect("write corpus");
}

fn inspect(tree: &str) -> serde_json::Value {
    serde_json::from_str(&ok(&["inspect", "--json", tree])).expect("inspect --json")
}

/// `inspect --json`'s `outer.inner` count.
fn count_in(tree: &str, outer: &str, inner: &str) -> usize {
    inspect(tree)[outer][inner].as_u64().expect(inner) as usize
}

/// The ids a query returns first (best-first, lexical judge).
fn first_id(tree: &str, q: &str) -> Option<String> {
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["query", tree, q, "--json", "--top", "1"])).expect("json");
    v["passages"][0]["document_id"].as_str().map(String::from)
}

#[test]
fn add_remove_and_compact_change_what_a_query_finds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base.jsonl");
    let more = dir.path().join("more.jsonl");
    write_corpus(&base, "d", 0, 120);
    write_corpus(&more, "n", 0, 30);
    let tree = dir.path().join("t.tree");
    let t = tree.to_str().expect("utf8");
    ok(&[
        "build",
        base.to_str().expect("utf8"),
        "--embedder",
        "tfidf",
        "--branching",
        "10",
        "-o",
        t,
    ]);
    assert_ne!(first_id(t, "wn7").as_deref(), Some("n7"));
    let v: serde_json::Value =
        serde_json::from_str(&ok(&["add", t, more.to_str().expect("utf8"), "--json"]))
            .expect("add --json");
    assert_eq!(
        (v["added"].as_u64(), v["generation"].as_u64()),
        (Some(30), Some(1))
    );
    assert_eq!(first_id(t, "wn7").as_deref(), Some("n7"));
    let i = inspect(t);
    assert_eq!(i["documents"], 150);
    assert_eq!(i["updates"]["added"], 30);
    assert!(i["drift"]["misplaced"].as_f64().is_some(), "{}", i["drift"]);

    let out = ok(&["remove", t, "n7", "d3", "missing-id"]);
    assert!(
        out.contains("2 removed") && out.contains("missing-id"),
        "{out}"
    );
    assert_ne!(first_id(t, "wn7").as_deref(), Some("n7"));
    let ids = dir.path().join("ids.txt");
    std::fs::write(&ids, "n8\n\nn9\n").expect("ids");
    ok(&["remove", t, "--ids-file", ids.to_str().expect("utf8")]);
    assert_eq!(inspect(t)["documents"], 146);

    let out = ok(&["compact", t]);
    assert!(out.contains("3 updates folded in"), "{out}");
    let i = inspect(t);
    assert_eq!(i["documents"], 146);
    assert!(i["updates"].is_null());
    assert_eq!(first_id(t, "wn20").as_deref(), Some("n20"));

    // Nothing to remove: a clear error, the tree unchanged.
    let o = treenav(&["remove", t]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no document ids"),
        "{}",
        text(&o.stderr)
    );
}

/// A large add killed with SIGKILL at spread-out moments: each time the
/// tree opens, holds either every document of the add or none of them,
/// answers queries accordingly, and takes the next update.
#[test]
fn an_add_killed_at_any_point_leaves_the_tree_as_before_or_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = dir.path().join("base.jsonl");
    let more = dir.path().join("more.jsonl");
    write_corpus(&base, "d", 0, 300);
    write_corpus(&more, "n", 0, 1500);
    let tree = dir.path().join("t.tree");
    let t = tree.to_str().expect("utf8");
    let m = more.to_str().expect("utf8");
    ok(&[
        "build",
        base.to_str().expect("utf8"),
        "--embedder",
        "tfidf",
        "--branching",
        "20",
        "-o",
        t,
    ]);
    // How long a whole add takes here (on a copy).
    let copy = dir.path().join("c.tree");
    for f in std::fs::read_dir(dir.path()).expect("dir").flatten() {
        let name = f.file_name().to_string_lossy().into_owned();
        if let Some(rest) = name.strip_prefix("t.tree") {
            let to = dir.path().join(format!("c.tree{rest}"));
            if f.path().is_dir() {
                std::fs::create_dir_all(&to).expect("mkdir");
                for g in std::fs::read_dir(f.path()).expect("dir").flatten() {
                    std::fs::copy(g.path(), to.join(g.file_name())).expect("copy");
                }
            } else {
                std::fs::copy(f.path(), &to).expect("copy");
            }
        }
    }
    let started = Instant::now();
    ok(&["add", copy.to_str().expect("utf8"), m]);
    let whole = started.elapsed();
    let mut outcomes = (0, 0);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..10 {
        // Spread over the whole add, with a seeded jitter.
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let jitter = (state >> 33) as f64 / (1u64 << 31) as f64;
        let at = whole.mul_f64((round as f64 + jitter) / 10.0 * 1.1);
        let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
            .args(["add", t, m])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        let i = inspect(t);
        let documents = i["documents"].as_u64().expect("documents");
        match documents {
            300 => {
                outcomes.0 += 1;
                assert_ne!(first_id(t, "wn1234").as_deref(), Some("n1234"));
            }
            1800 => {
                outcomes.1 += 1;
                assert_eq!(first_id(t, "wn1234").as_deref(), Some("n1234"));
            }
            other => panic!("round {round} (killed after {at:?}): {other} documents, a mix"),
        }
        // The lock went with the process; the delta and the index agree.
        if documents == 1800 && round % 2 == 0 {
            ok(&["remove", t, "n0"]);
            ok(&["add", t, m]);
        }
    }
    assert!(outcomes.0 + outcomes.1 == 10, "{outcomes:?}");
    eprintln!(
        "killed adds: {} left the tree before, {} after",
        outcomes.0, outcomes.1
    );
}

/// #44 row 8: after adds, replacements that change a document's passage
/// count, removals and a compaction, `inspect` (text and JSON) counts what
/// the tree holds, as the updates' arithmetic gives it (each document of
/// `write_corpus` has the same passages; the replacements' count is what a
/// build of them alone holds).
#[test]
fn inspect_counts_what_the_tree_holds_after_updates_and_compact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (base, more, longer) = (
        dir.path().join("base.jsonl"),
        dir.path().join("more.jsonl"),
        dir.path().join("longer.jsonl"),
    );
    write_corpus(&base, "d", 0, 31);
    write_corpus(&more, "n", 0, 2);
    // Two documents replaced by ones of many passages.
    let long: Vec<String> = (3..5)
        .map(|i| {
            let text = format!("Replaced {i}: the quarterly budget review and its travel policy. ")
                .repeat(90);
            serde_json::json!({"_id": format!("d{i}"), "title": format!("replaced {i}"), "text": text})
                .to_string()
        })
        .collect();
    std::fs::write(&longer, long.join("\n")).expect("write");
    let count = |t: &str, key: &str| inspect(t)[key].as_u64().expect(key) as usize;
    let alone = dir.path().join("alone.tree");
    let alone = alone.to_str().expect("utf8");
    let l = longer.to_str().expect("utf8");
    ok(&["build", l, "--embedder", "tfidf", "-o", alone]);
    let tree = dir.path().join("t.tree");
    let t = tree.to_str().expect("utf8");
    ok(&[
        "build",
        base.to_str().expect("utf8"),
        "--embedder",
        "tfidf",
        "-o",
        t,
    ]);
    let each = count(t, "passages") / 31;
    let replaced = count(alone, "passages");
    assert!(each >= 1 && replaced > 2 * each, "{each} {replaced}");
    ok(&["add", t, more.to_str().expect("utf8")]);
    ok(&["add", t, l]);
    ok(&["remove", t, "d7", "d8"]);
    let expected = (31 + 2 - 2, (31 + 2 - 2 - 2) * each + replaced);
    for step in ["updated", "compacted"] {
        if step == "compacted" {
            ok(&["compact", t]);
        }
        let counted = (count(t, "documents"), count(t, "passages"));
        assert_eq!(counted, expected, "{step}");
        // Every count the text prints is what the tree holds (the corpus
        // line's too, once compacted).
        let text = ok(&["inspect", t]);
        let corpus = text
            .lines()
            .find(|l| l.starts_with("corpus"))
            .expect("corpus line");
        let counts = text
            .lines()
            .find(|l| l.starts_with("counts"))
            .expect("counts line");
        assert!(
            counts.contains(&format!(
                "· {} documents · {} passages",
                expected.0, expected.1
            )),
            "{counts}"
        );
        // Every document and passage, added ones included, has a vector.
        let vectors = text
            .lines()
            .find(|l| l.starts_with("vectors"))
            .expect("vectors line");
        assert_eq!(
            vectors,
            format!(
                "vectors   {0} of {0} documents · {1} of {1} passages",
                expected.0, expected.1
            ),
            "{step}"
        );
        assert_eq!(count_in(t, "vectors", "passages"), expected.1, "{step}");
        match step {
            "updated" => assert!(corpus.contains("when written; updated since"), "{corpus}"),
            _ => assert!(
                corpus.contains(&format!(
                    "{} documents, {} passages,",
                    expected.0, expected.1
                )),
                "{step}: {corpus}"
            ),
        }
        assert_eq!(
            inspect(t)["meta"]["corpus"]["documents"].as_u64(),
            Some(if step == "updated" {
                31
            } else {
                expected.0 as u64
            }),
            "{step}"
        );
    }
}
