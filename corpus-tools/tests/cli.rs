//! The `treenav` binary as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn treenav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .output()
        .expect("run treenav")
}

/// The bundled sample built into `dir` as `sample.tree`; its path.
fn built_sample(dir: &Path) -> PathBuf {
    let out = dir.join("sample.tree");
    let o = treenav(&["build", "-o", out.to_str().expect("utf8 path")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    out
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
    // The lexical side: tantivy's folder beside the tree, and its analyzer.
    assert_eq!(v["analyzer"], "en-stem");
    let files = v["files"].as_array().expect("files");
    assert!(
        files.iter().any(|f| f["file"]
            .as_str()
            .is_some_and(|p| p.ends_with("sample.tree.tantivy"))),
        "{files:?}"
    );
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
        text(&o.stderr).contains("invalid value 'xml' for '--format")
            && text(&o.stderr).contains("possible values: beir, squad"),
        "{}",
        text(&o.stderr)
    );
}

/// `build corpus.jsonl -o corpus.jsonl` used to replace the corpus with a
/// tree: an output that is (or is inside) an input is refused, the input
/// left byte for byte.
#[test]
fn build_never_writes_over_its_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let beir = dir.path().join("beir");
    std::fs::create_dir(&beir).expect("mkdir");
    for f in ["corpus.jsonl", "queries.jsonl"] {
        std::fs::copy(fixture("beir").join(f), beir.join(f)).expect("copy");
    }
    let corpus = beir.join("corpus.jsonl");
    let before = std::fs::read(&corpus).expect("read");
    let c = corpus.to_str().expect("utf8");
    let b = beir.to_str().expect("utf8");
    for (input, output, says) in [
        (c, c, "is the input"),
        (b, c, "is inside the input"),
        (
            b,
            &*format!("{b}/../beir/corpus.jsonl"),
            "is inside the input",
        ),
    ] {
        let o = treenav(&["build", input, "-o", output, "--format", "beir"]);
        assert!(!o.status.success(), "{input} -o {output}");
        assert!(text(&o.stderr).contains(says), "{}", text(&o.stderr));
    }
    assert_eq!(std::fs::read(&corpus).expect("read"), before);
}

/// A dataset with a duplicate document id stops the bench naming the line;
/// with `--skip-bad` (as `build` has) it runs and lists what it skipped.
#[test]
fn bench_skips_bad_records_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let beir = dir.path().join("beir");
    std::fs::create_dir_all(beir.join("qrels")).expect("mkdir");
    for f in ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"] {
        std::fs::copy(fixture("beir").join(f), beir.join(f)).expect("copy");
    }
    let mut corpus = std::fs::read_to_string(beir.join("corpus.jsonl")).expect("read");
    corpus.push_str("{\"_id\": \"d1\", \"title\": \"Again\", \"text\": \"A duplicate id.\"}\n");
    std::fs::write(beir.join("corpus.jsonl"), &corpus).expect("write");
    let dataset = beir.to_str().expect("utf8");
    let o = treenav(&[
        "bench",
        "--dataset",
        dataset,
        "--systems",
        "bm25",
        "--quiet",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("corpus.jsonl"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav(&[
        "bench",
        "--dataset",
        dataset,
        "--systems",
        "bm25",
        "--skip-bad",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("skipped 1 bad corpus records"),
        "{}",
        text(&o.stderr)
    );
    assert!(text(&o.stdout).contains("| bm25 |"));
}

/// Titles with terminal escapes are printed escaped by `query` and
/// `inspect`, never sent raw to the terminal.
#[test]
fn query_and_inspect_escape_control_characters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("evil.jsonl");
    std::fs::write(
        &corpus,
        "{\"id\": \"p1\", \"title\": \"Clear\\u001b[2J\\u001b]0;pwned\\u0007\", \"text\": \"Tesla worked for Westinghouse.\"}\n\
         {\"id\": \"p2\", \"title\": \"Other\", \"text\": \"Edison ran a company.\"}\n",
    )
    .expect("write");
    let tree = dir.path().join("evil.tree");
    let o = treenav(&[
        "build",
        corpus.to_str().expect("utf8"),
        "-o",
        tree.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for args in [
        vec![
            "query",
            tree.to_str().expect("utf8"),
            "Tesla Westinghouse",
            "--trace",
        ],
        vec!["inspect", tree.to_str().expect("utf8")],
    ] {
        let o = treenav(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            !o.stdout.contains(&0x1b) && !o.stdout.contains(&0x07),
            "{args:?}"
        );
    }
    let o = treenav(&["query", tree.to_str().expect("utf8"), "Tesla Westinghouse"]);
    assert!(text(&o.stdout).contains("\\x1b[2J"), "{}", text(&o.stdout));
}

/// Errors and skipped-record lists quote ids from the data: on stderr they
/// are escaped too (they were printed raw), and logs carry no colour codes
/// when stderr is not a terminal.
#[test]
fn stderr_escapes_data_and_logs_have_no_colour_off_a_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = dir.path().join("dup.jsonl");
    std::fs::write(
        &corpus,
        "{\"id\": \"x\\u001b[2J\", \"text\": \"Tesla worked for Westinghouse.\"}\n\
         {\"id\": \"x\\u001b[2J\", \"text\": \"Edison ran a company.\"}\n\
         {\"id\": \"y\", \"text\": \"Edison ran a company.\"}\n",
    )
    .expect("write");
    let tree = dir.path().join("dup.tree");
    let (corpus, tree) = (corpus.to_str().expect("utf8"), tree.to_str().expect("utf8"));
    let strict = treenav(&["build", corpus, "-o", tree]);
    assert!(!strict.status.success());
    let skipping = treenav(&["-v", "build", corpus, "-o", tree, "--skip-bad"]);
    assert!(skipping.status.success(), "{}", text(&skipping.stderr));
    for o in [&strict, &skipping] {
        assert!(!o.stderr.contains(&0x1b), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("duplicate id `x\\x1b[2J`"),
            "{}",
            text(&o.stderr)
        );
    }
    // A warning is logged (a skipped symbolic link), without colour codes.
    #[cfg(unix)]
    {
        let docs = dir.path().join("docs");
        std::fs::create_dir(&docs).expect("mkdir");
        std::fs::write(docs.join("a.txt"), "Tesla worked for Westinghouse.").expect("write");
        std::os::unix::fs::symlink(&docs, docs.join("loop")).expect("symlink");
        let o = treenav(&["build", docs.to_str().expect("utf8"), "-o", tree]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("WARN"), "{}", text(&o.stderr));
        assert!(!o.stderr.contains(&0x1b), "{}", text(&o.stderr));
    }
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
        "--strategy",
        "levels",
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
    assert_eq!(report["schema"], "treenav-bench/3");
    assert_eq!(report["dataset"]["gold"], "document");
    assert_eq!(report["dataset"]["queries"], 1);
    // The fixture's one query ("what does insulin do") has its gold first.
    assert_eq!(report["systems"]["bm25"]["document"]["hit_at_1"], 1.0);
    assert!(report["systems"]["tree"]["navigation"]["levels"].is_array());
    assert_eq!(report["config"]["rerank_n"], 100);
}

/// `--exclude-queries FILE` leaves its queries out before `--limit`
/// samples: the run files name only the queries left, and a file listing
/// them all is refused.
#[test]
fn bench_leaves_out_the_queries_a_file_lists() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let squad: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&sample).expect("sample")).expect("json");
    let mut ids: Vec<String> = Vec::new();
    for article in squad["data"].as_array().expect("data") {
        for paragraph in article["paragraphs"].as_array().expect("paragraphs") {
            for qa in paragraph["qas"].as_array().expect("qas") {
                ids.push(qa["id"].as_str().expect("id").to_string());
            }
        }
    }
    assert!(ids.len() > 10, "{}", ids.len());
    let kept: Vec<String> = ids[..3].to_vec();
    let listed = dir.path().join("fitted.ids");
    std::fs::write(&listed, format!("{}\nnot-a-query\n", ids[3..].join("\n"))).expect("ids");
    let (json, runs) = (dir.path().join("r.json"), dir.path().join("runs"));
    let bench = |ids_file: &Path| {
        treenav(&[
            "bench",
            "--dataset",
            sample.to_str().expect("utf8"),
            "--systems",
            "bm25",
            "--limit",
            "2",
            "--exclude-queries",
            ids_file.to_str().expect("utf8"),
            "--json",
            json.to_str().expect("utf8"),
            "--run-dir",
            runs.to_str().expect("utf8"),
        ])
    };
    let o = bench(&listed);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    let said = format!("left out {} queries listed in", ids.len() - 3);
    assert!(stderr.contains(&said), "{stderr}");
    assert!(
        stderr.contains("(1 of its ids name no query of the set)"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("valid");
    assert_eq!(report["dataset"]["queries"], 2);
    let mut named = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&runs).expect("run dir") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "run") {
            continue;
        }
        let run = std::fs::read_to_string(path).expect("run");
        named.extend(
            run.lines()
                .filter_map(|l| l.split_whitespace().next())
                .map(String::from),
        );
    }
    assert_eq!(named.len(), 2, "{named:?}");
    assert!(
        named.iter().all(|q| kept.contains(q)),
        "{named:?} not in {kept:?}"
    );
    // A file listing every query leaves nothing to measure.
    let all = dir.path().join("all.ids");
    std::fs::write(&all, ids.join("\n")).expect("ids");
    let o = bench(&all);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("it lists every query of the set"),
        "{}",
        text(&o.stderr)
    );
}

/// A tree built without one of the dataset's documents, then given it by
/// `add` and compacted, holds the dataset (in another order): the bench
/// takes it (before, the compacted tree kept its build's fingerprint and
/// was refused as another corpus).
#[test]
fn the_bench_takes_a_compacted_tree_that_holds_the_dataset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = std::fs::read_to_string(fixture("beir/corpus.jsonl")).expect("corpus");
    let lines: Vec<&str> = corpus.lines().filter(|l| !l.trim().is_empty()).collect();
    let (first, last) = lines.split_at(lines.len() - 1);
    let (part, rest) = (dir.path().join("part.jsonl"), dir.path().join("rest.jsonl"));
    std::fs::write(&part, first.join("\n")).expect("write");
    std::fs::write(&rest, last.join("\n")).expect("write");
    let tree = dir.path().join("t.tree");
    let t = tree.to_str().expect("utf8 path");
    let run = |args: &[&str]| {
        let o = treenav(args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
    };
    run(&[
        "build",
        part.to_str().expect("utf8"),
        "-o",
        t,
        "--embedder",
        "tfidf",
    ]);
    run(&["add", t, rest.to_str().expect("utf8")]);
    run(&["compact", t]);
    let beir = fixture("beir");
    let args = [
        "bench",
        "--dataset",
        beir.to_str().expect("utf8"),
        "--tree",
        t,
    ];
    run(&[&args[..], &["--systems", "tree,bm25", "--quiet"]].concat());
}

/// `--no-passage-vectors` leaves out `T.passage-vectors` (the rest of the
/// tree as usual), and the tree still answers.
#[test]
fn a_build_can_keep_no_passage_vectors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("t.tree");
    let t = tree.to_str().expect("utf8 path");
    let o = treenav(&[
        "build",
        "-o",
        t,
        "--embedder",
        "tfidf",
        "--no-passage-vectors",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(dir.path().join("t.tree.vectors").is_file());
    assert!(!dir.path().join("t.tree.passage-vectors").exists());
    assert!(
        !text(&o.stdout).contains("passage-vectors"),
        "{}",
        text(&o.stdout)
    );
    let o = treenav(&["query", t, "Who were the Normans?", "--top", "1"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("Normans"), "{}", text(&o.stdout));
}

/// The sweep's `tree` row is what `treenav query` returns with the same
/// flags (the navigator's fusion included), query for query; the judge's
/// own order is the named variant `tree+judge`.
#[test]
fn the_sweeps_tree_row_is_what_query_returns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("t.tree");
    let runs = dir.path().join("runs");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let sample = sample.to_str().expect("utf8 path");
    let t = tree.to_str().expect("utf8 path");
    let o = treenav(&["build", sample, "-o", t, "--embedder", "tfidf"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let flags = ["--judge", "lexical", "--fusion", "4"];
    let mut args = vec![
        "bench",
        "--dataset",
        sample,
        "--tree",
        t,
        "--systems",
        "bm25",
    ];
    args.extend([
        "--judge-budgets",
        "20",
        "--limit",
        "12",
        "--quiet",
        "--run-dir",
    ]);
    args.push(runs.to_str().expect("utf8 path"));
    args.extend(flags);
    let o = treenav(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("| 20 | tree+judge |"),
        "{}",
        text(&o.stdout)
    );
    let run = std::fs::read_to_string(runs.join("tree@20.passages.run")).expect("run file");
    let mut ranked: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    for line in run.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        ranked.entry(f[0]).or_default().push(f[2]);
    }
    let squad: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sample).expect("sample")).expect("json");
    let questions: std::collections::HashMap<String, String> = squad["data"]
        .as_array()
        .expect("data")
        .iter()
        .flat_map(|a| a["paragraphs"].as_array().expect("paragraphs").iter())
        .flat_map(|p| p["qas"].as_array().expect("qas").iter())
        .map(|q| {
            (
                q["id"].as_str().expect("id").into(),
                q["question"].as_str().expect("q").into(),
            )
        })
        .collect();
    assert_eq!(ranked.len(), 12);
    for (qid, run_ids) in &ranked {
        let question = &questions[*qid];
        let mut args = vec!["query", t, question, "--judge-budget", "20", "--no-widen"];
        args.extend(["--top", "10", "--json"]);
        args.extend(flags);
        let o = treenav(&args);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let ids: Vec<&str> = v["passages"]
            .as_array()
            .expect("passages")
            .iter()
            .map(|p| p["id"].as_str().expect("id"))
            .collect();
        let n = ids.len().min(run_ids.len());
        assert!(n > 0, "{question}");
        assert_eq!(ids[..n], run_ids[..n], "{question}");
    }
}

#[test]
fn bench_sweeps_judgment_budgets_on_the_bundled_sample() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("sweep.json");
    let svg = dir.path().join("sweep.svg");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let o = treenav(&[
        "bench",
        "--dataset",
        sample.to_str().expect("utf8 path"),
        "--systems",
        "bm25",
        "--judge-budgets",
        "10,30",
        "--limit",
        "30",
        "--quiet",
        "--json",
        json.to_str().expect("utf8 path"),
        "--curve-svg",
        svg.to_str().expect("utf8 path"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    for row in [
        "| 10 | tree |",
        "| 10 | tree+judge |",
        "| 10 | rerank |",
        "| 30 | tree+clusters |",
    ] {
        assert!(stdout.contains(row), "{stdout}");
    }
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json written"))
            .expect("valid JSON");
    assert_eq!(report["schema"], "treenav-bench/3");
    let budgets = report["judge_budgets"].as_array().expect("judge_budgets");
    assert_eq!(budgets.len(), 2);
    for (entry, budget) in budgets.iter().zip([10.0, 30.0]) {
        assert_eq!(entry["budget"].as_f64(), Some(budget));
        for system in ["tree", "rerank", "tree+clusters"] {
            let s = &entry["systems"][system];
            let judged = s["candidates_judged"].as_f64().expect("judged");
            assert!(
                judged > 0.0 && judged <= budget,
                "{system}@{budget}: {judged}"
            );
            let recall = s["document"]["judged_recall"]
                .as_f64()
                .expect("judged_recall");
            assert!((0.0..=1.0).contains(&recall), "{recall}");
            assert!(s["rounds"].as_f64().expect("rounds") >= 1.0);
            assert!(s["passage"]["hit_at_1"].as_f64().is_some());
        }
    }
    assert_svg_with(
        &svg,
        &["document Hit@1", "candidates judged per query", "tree"],
    );
    // A budget that leaves nothing beside the shortlist is refused up front.
    let o = treenav(&[
        "bench",
        "--dataset",
        sample.to_str().expect("utf8 path"),
        "--judge-budgets",
        "5",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("--judge-budgets"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn query_walks_best_first_and_prints_its_rounds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sample.tree");
    let o = treenav(&["build", "-o", out.to_str().expect("utf8 path")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = treenav(&[
        "query",
        out.to_str().expect("utf8 path"),
        "Where did Tesla work after leaving Edison's company?",
        "--strategy",
        "best-first",
        "--judge-budget",
        "30",
        "--trace",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("round 1:"), "{stdout}");
    assert!(stdout.contains("Tesla"), "{stdout}");
    // The trace explains the answer: the top passage's line in the rounds
    // carries the score the answer printed, what made it, and its route in
    // words (issue #67: it showed the embedding's 0.008 beside an answer
    // of 0.136, and route names like `lexical_document`).
    let top = stdout
        .lines()
        .find_map(|l| l.strip_prefix(" 1. ["))
        .and_then(|l| l.split(']').next())
        .expect("the top answer's score");
    let line = format!("kept {top} ← ");
    assert!(stdout.contains(&line), "no `{line}` in {stdout}");
    assert!(stdout.contains("BM25's list of passages"), "{stdout}");
    assert!(!stdout.contains(" lexical_document "), "{stdout}");
    let o = treenav(&[
        "query",
        out.to_str().expect("utf8 path"),
        "Tesla",
        "--strategy",
        "sideways",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("possible values: best-first, levels"),
        "{}",
        text(&o.stderr)
    );
}

/// Hostile numbers and empty queries are refused with a message, never a
/// panic (exit 101): an empty query is a usage error (exit 2); deadlines and
/// timeouts too long for a `Duration` are out of range.
#[test]
fn query_refuses_empty_queries_and_absurd_waits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sample.tree");
    let o = treenav(&["build", "-o", out.to_str().expect("utf8 path")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let tree = out.to_str().expect("utf8 path");
    for q in ["", "   "] {
        let o = treenav(&["query", tree, q]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("the query is empty"),
            "{}",
            text(&o.stderr)
        );
    }
    for (flag, says) in [
        ("--deadline=1e300", "--deadline must be in"),
        ("--timeout=1e300", "--timeout must be in"),
        ("--deadline=-1", "--deadline must be in"),
        ("--top=0", "--top must be in 1..=1000, got 0"),
        ("--price=nan", "--price must be in"),
        ("--price=-1", "--price must be in"),
    ] {
        let o = treenav(&["query", tree, "Tesla", flag]);
        assert_eq!(o.status.code(), Some(1), "{flag}: {}", text(&o.stderr));
        assert!(text(&o.stderr).contains(says), "{}", text(&o.stderr));
    }
    // A judge failure says its typed cause by default, once, with no password.
    let o = treenav(&[
        "query",
        tree,
        "Tesla",
        "--judge",
        "systemone",
        "--endpoint",
        "http://user:hunter2@127.0.0.1:9",
        "--model",
        "m",
        "--timeout",
        "1",
    ]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("judging level 1") && err.contains("network error"),
        "{err}"
    );
    assert_eq!(err.matches("network error").count(), 1, "{err}");
    assert!(!err.contains("hunter2"), "{err}");
    let config = dir.path().join("judge.json");
    std::fs::write(
        &config,
        r#"{"backend":{"kind":"lexical"},"dispatch":{"deadline_secs":1e300}}"#,
    )
    .expect("write");
    let o = treenav(&[
        "query",
        tree,
        "Tesla",
        "--judge-config",
        config.to_str().expect("utf8"),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("deadline_secs must be in"),
        "{}",
        text(&o.stderr)
    );
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

    let o = treenav(&[
        "bench",
        "--dataset",
        fixture("beir").to_str().expect("utf8 path"),
        "--systems",
        "bm25",
        "--evidence",
        "e.jsonl",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("add tree to --systems"),
        "{}",
        text(&o.stderr)
    );
}

fn treenav_stdin(args: &[&str], stdin: &str) -> Output {
    use std::io::Write as _;
    let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run treenav");
    if let Some(mut input) = child.stdin.take() {
        // treenav may exit on a bad option before reading stdin.
        let _ = input.write_all(stdin.as_bytes());
    }
    child.wait_with_output().expect("treenav output")
}

const TESLA: &str = r#"{"question": "Where did Tesla work after leaving Edison's company?",
 "chunks": [
  {"id": "a", "text": "Tesla worked for Edison in New York before he left."},
  {"id": "b", "text": "The Rhine flows through Switzerland, Germany and the Netherlands."},
  {"id": "c", "text": "After leaving Edison's company Tesla worked digging ditches, then at Westinghouse."},
  "Volcanoes erupt lava and ash."
 ]}"#;

#[test]
fn prune_reads_stdin_and_keeps_what_the_answer_needs() {
    let o = treenav_stdin(&["prune", "--strategy", "keep", "--json"], TESLA);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let kept: Vec<&str> = v["kept"]
        .as_array()
        .expect("kept")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(kept, ["a", "c"], "{v}");
    assert_eq!(v["stats"]["chunks_in"], 4);
    // bge-small's tokenizer counts when it is cached (#68 row 4).
    let cached = treenav::tree::default_bge_dir()
        .join("tokenizer.json")
        .is_file();
    let counter = if cached { "tokenizer" } else { "chars/4" };
    assert_eq!(v["stats"]["token_counter"], counter);

    // A file of plain strings, the grade strategy, a budget, edge placement.
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("chunks.json");
    std::fs::write(&file, r#"["Tesla left Edison.", "Tesla then worked at Westinghouse after leaving Edison.", "Lava."]"#).expect("write");
    let o = treenav(&[
        "prune",
        "--question",
        "where did tesla work after edison",
        "--chunks",
        file.to_str().expect("utf8"),
        "--token-budget",
        "30",
        "--edge-placement",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains("strategy: grade") && out.contains("compression"),
        "{out}"
    );
    assert!(!out.contains("Lava"), "{out}");
}

#[test]
fn prune_refuses_bad_input_clearly() {
    let o = treenav_stdin(&["prune"], "{\"question\": \"q\",\n \"chunks\": [\"a\",]}");
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("line 2"), "{}", text(&o.stderr));

    let o = treenav_stdin(&["prune"], r#"{"question": "q", "chunks": []}"#);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("chunk list is empty"),
        "{}",
        text(&o.stderr)
    );

    // A bare array on stdin is chunks (no serde field names in the error).
    let o = treenav_stdin(&["prune", "--question", "x"], "[]");
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("chunk list is empty") && !text(&o.stderr).contains("RequestIn"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav_stdin(
        &["prune", "--question", "Where did Tesla work?"],
        r#"["Tesla worked for Edison."]"#,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));

    let o = treenav_stdin(&["prune"], r#"{"chunks": ["a"]}"#);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("no question"),
        "{}",
        text(&o.stderr)
    );

    let o = treenav_stdin(&["prune", "--token-budget", "2"], TESLA);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("over the whole budget of 2"),
        "{}",
        text(&o.stderr)
    );

    let o = treenav_stdin(&["prune", "--strategy", "grade", "--threshold", "9"], TESLA);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("1..=5"), "{}", text(&o.stderr));
}

#[test]
fn bench_prune_writes_the_curve() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("curve.csv");
    let svg = dir.path().join("curve.svg");
    let o = treenav(&[
        "bench",
        "--prune",
        "--dataset",
        fixture("squad.json").to_str().expect("utf8"),
        "--quiet",
        "--prune-depth",
        "3",
        "--curve-csv",
        csv.to_str().expect("utf8"),
        "--curve-svg",
        svg.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let table = std::fs::read_to_string(&csv).expect("csv written");
    assert!(
        table.starts_with("strategy,knob,value,recall_retention,compression"),
        "{table}"
    );
    for s in ["grade,", "keep,", "budget-select,", "top-n,"] {
        assert!(table.contains(s), "{table}");
    }
    assert_svg_with(&svg, &["recall retention", "compression", "budget-select"]);
    assert!(text(&o.stdout).contains("compression at ≥95% retention"));
}

/// #68: `bench --prune --target-recall` picks each strategy's loosest knob
/// keeping the target and writes the best as a config; `--prune-config`
/// measures it on other questions beside where it was fitted; `prune
/// --config` uses it, and refuses a judge of another kind.
#[test]
fn a_pruning_threshold_is_fitted_saved_measured_elsewhere_and_used() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("prune.json");
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let sample = sample.to_str().expect("utf8");
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--prune",
            "--dataset",
            sample,
            "--quiet",
            "--prune-depth",
            "8",
        ];
        args.extend_from_slice(extra);
        treenav(&args)
    };
    let path = config.to_str().expect("utf8");
    let o = bench(&[
        "--limit",
        "40",
        "--seed",
        "1",
        "--target-recall",
        "0.9",
        "--save-config",
        path,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    assert!(said.contains("the loosest knob keeping ≥ 0.9"), "{said}");
    assert!(
        said.contains("wrote ") && said.contains("fitted on"),
        "{said}"
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).expect("config written"))
            .expect("json");
    let fitted = &saved["fitted"];
    assert!(
        fitted["recall_retention"].as_f64().expect("retention") >= 0.9,
        "{saved}"
    );
    assert_eq!(fitted["questions"], 40);
    assert!(fitted["command"]
        .as_str()
        .is_some_and(|c| c.contains("--target-recall 0.9")));
    assert_eq!(saved["judge"]["backend"]["kind"], "lexical");

    let o = bench(&["--limit", "30", "--seed", "2", "--prune-config", path]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let said = text(&o.stdout);
    assert!(
        said.contains("| fitted: ") && said.contains("| here: "),
        "{said}"
    );

    let chunks = dir.path().join("chunks.json");
    std::fs::write(
        &chunks,
        r#"["Tesla worked for Edison.", "Bananas are yellow.", "Paris is in France."]"#,
    )
    .expect("write");
    let chunks = chunks.to_str().expect("utf8");
    let o = treenav(&[
        "prune",
        "--config",
        path,
        "--chunks",
        chunks,
        "--question",
        "Who did Tesla work for?",
        "--json",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let pruned: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(pruned["strategy"], saved["strategy"]["kind"], "{pruned}");
    let o = treenav(&[
        "prune",
        "--config",
        path,
        "--chunks",
        chunks,
        "--question",
        "q",
        "--judge",
        "cross-encoder",
    ]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("fitted with the lexical judge"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav(&[
        "prune",
        "--config",
        path,
        "--strategy",
        "top-n",
        "--chunks",
        chunks,
        "--question",
        "q",
    ]);
    assert!(!o.status.success(), "--config with --strategy is refused");
}

/// `path` is an SVG whose text has each of `labels` (axis names, legend)
/// and lines drawn.
fn assert_svg_with(path: &Path, labels: &[&str]) {
    let svg = std::fs::read_to_string(path).expect("svg written");
    assert!(
        svg.starts_with("<svg"),
        "not an SVG: {}",
        &svg[..svg.len().min(80)]
    );
    for label in labels {
        assert!(svg.contains(label), "no {label:?} in the SVG");
    }
    assert!(svg.matches("<polyline").count() >= 2, "no lines drawn");
}

/// A float32 `.npy` file (format 1.0) of `rows` × `dims`, written by hand
/// as numpy does, so the test needs no numpy.
fn write_npy(
    path: &std::path::Path,
    rows: usize,
    dims: usize,
    value: impl Fn(usize, usize) -> f32,
) {
    let mut header =
        format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {dims}), }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for r in 0..rows {
        for d in 0..dims {
            bytes.extend_from_slice(&value(r, d).to_le_bytes());
        }
    }
    std::fs::write(path, bytes).expect("write npy");
}

#[test]
fn build_takes_precomputed_vectors_and_refuses_a_wrong_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The bundled sample has 48 documents.
    let good = dir.path().join("v.npy");
    write_npy(&good, 48, 4, |r, d| if d == r % 4 { 1.0 } else { 0.1 });
    let tree = dir.path().join("v.tree");
    let out = treenav(&[
        "build",
        "--embeddings",
        good.to_str().unwrap_or_default(),
        "-o",
        tree.to_str().unwrap_or_default(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let inspect = treenav(&["inspect", tree.to_str().unwrap_or_default()]);
    assert!(String::from_utf8_lossy(&inspect.stdout).contains("vectors(file=v.npy, dims=4)"));

    let short = dir.path().join("short.npy");
    write_npy(&short, 47, 4, |_, _| 1.0);
    let out = treenav(&[
        "build",
        "--embeddings",
        short.to_str().unwrap_or_default(),
        "-o",
        tree.to_str().unwrap_or_default(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("short.npy") && stderr.contains("47 rows for 48 documents"),
        "{stderr}"
    );
}

/// Builds `corpus` with branching 4 into `single` (which must succeed),
/// then makes its plan in `plan`: that run's output.
fn single_and_plan(corpus: &Path, single: &Path, plan: &Path) -> Output {
    let s = |p: &Path| p.to_str().expect("utf8 path").to_string();
    let o = treenav(&["build", &s(corpus), "--branching", "4", "-o", &s(single)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    treenav(&["build", &s(corpus), "--branching", "4", "--plan", &s(plan)])
}

/// The bundled sample as a BEIR `corpus.jsonl` (one document per paragraph).
fn sample_as_beir(path: &Path) {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let squad: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sample).expect("sample")).expect("json");
    let mut lines = String::new();
    for article in squad["data"].as_array().expect("data") {
        let title = article["title"].as_str().expect("title");
        for (i, p) in article["paragraphs"]
            .as_array()
            .expect("paragraphs")
            .iter()
            .enumerate()
        {
            let doc = serde_json::json!({"_id": format!("{title}-{i}"), "title": title, "text": p["context"]});
            lines.push_str(&format!("{doc}\n"));
        }
    }
    std::fs::write(path, lines).expect("write corpus.jsonl");
}

#[test]
fn a_plan_of_a_beir_file_read_a_line_at_a_time_merges_into_the_single_build() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let s = |p: &Path| p.to_str().expect("utf8 path").to_string();
    let (corpus, single, merged, plan) = (
        d.join("corpus.jsonl"),
        d.join("single.tree"),
        d.join("merged.tree"),
        d.join("plan"),
    );
    sample_as_beir(&corpus);
    let o = single_and_plan(&corpus, &single, &plan);
    assert!(
        o.status.success() && text(&o.stderr).contains("loaded 96 documents"),
        "{}",
        text(&o.stderr)
    );
    for i in 0..2 {
        let o = treenav(&["build", "--plan", &s(&plan), "--shard", &format!("{i}/2")]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let o = treenav(&["merge", "--plan", &s(&plan), "-o", &s(&merged)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let read = |p: &Path| std::fs::read(p).expect("read");
    assert!(
        read(&merged) == read(&single),
        "the merged tree is the single build's"
    );
    // A bad line is named by the plan as by a build.
    std::fs::write(
        &corpus,
        "{\"_id\":\"1\",\"text\":\"a\"}\n{\"_id\":\"1\",\"text\":\"b\"}\n",
    )
    .expect("write");
    let o = treenav(&["build", &s(&corpus), "--plan", &s(&d.join("plan2"))]);
    assert!(
        !o.status.success()
            && text(&o.stderr).contains("corpus.jsonl:2")
            && text(&o.stderr).contains("duplicate id"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_build_split_into_plan_shards_and_merge_equals_the_single_build() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let s = |p: &Path| p.to_str().expect("utf8 path").to_string();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/xquad-sample.json");
    let (single, merged, plan) = (d.join("single.tree"), d.join("merged.tree"), d.join("plan"));
    let o = single_and_plan(&corpus, &single, &plan);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("--shard I/N"),
        "{}",
        text(&o.stdout)
    );

    // Refused before any work: an index past the count, a corpus given
    // to a shard, a merge with a shard missing.
    let o = treenav(&["build", "--plan", &s(&plan), "--shard", "3/3"]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("counts from 0"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav(&["build", &s(&corpus), "--plan", &s(&plan), "--shard", "0/3"]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("drop the corpus"),
        "{}",
        text(&o.stderr)
    );
    for i in [0, 2] {
        let o = treenav(&["build", "--plan", &s(&plan), "--shard", &format!("{i}/3")]);
        assert!(o.status.success(), "{}", text(&o.stderr));
    }
    let o = treenav(&["merge", "--plan", &s(&plan), "-o", &s(&merged)]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("shard 1/3 is missing"),
        "{}",
        text(&o.stderr)
    );
    assert!(!merged.exists(), "nothing written");

    let o = treenav(&["build", "--plan", &s(&plan), "--shard", "1/3"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    // Never onto the plan's own files.
    let plan_file = plan.join("plan.bin");
    let before = std::fs::read(&plan_file).expect("plan.bin");
    let o = treenav(&["merge", "--plan", &s(&plan), "-o", &s(&plan_file)]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("the plan"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(std::fs::read(&plan_file).expect("plan.bin"), before);
    let o = treenav(&["merge", "--plan", &s(&plan), "-o", &s(&merged)]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let read = |p: &Path| std::fs::read(p).expect("read");
    assert!(
        read(&merged) == read(&single),
        "the merged tree file is the single build's"
    );
    // The side files too, the build embedding (.vectors) included, so an
    // update of a merged tree needs no embedding of its documents again.
    for suffix in ["texts", "lexical", "vectors"] {
        let side = |p: &Path| PathBuf::from(format!("{}.{suffix}", p.display()));
        assert!(side(&merged).is_file(), ".{suffix} was not written");
        assert!(
            read(&side(&merged)) == read(&side(&single)),
            ".{suffix} differs"
        );
    }
    // A shard run again is kept, not grown again (a retried task).
    let o = treenav(&["build", "--plan", &s(&plan), "--shard", "1/3"]);
    assert!(
        o.status.success() && text(&o.stdout).contains("already built from this plan: kept"),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );

    // The corpus moved: --corpus names it; another corpus is refused.
    let other = d.join("other.json");
    let edited = std::fs::read_to_string(&corpus).expect("corpus").replacen(
        "\"context\": \"",
        "\"context\": \"Edited. ",
        1,
    );
    std::fs::write(&other, edited).expect("write");
    let o = treenav(&[
        "merge",
        "--plan",
        &s(&plan),
        "--corpus",
        &s(&other),
        "-o",
        &s(&merged),
    ]);
    assert!(
        !o.status.success() && text(&o.stderr).contains("not the corpus the plan"),
        "{}",
        text(&o.stderr)
    );
    let o = treenav(&[
        "merge",
        "--plan",
        &s(&plan),
        "--corpus",
        &s(&corpus),
        "-o",
        &s(&merged),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
}

#[test]
fn version_logs_and_json_say_what_made_them() {
    let o = treenav(&["--version"]);
    let v = text(&o.stdout);
    assert!(v.contains(env!("CARGO_PKG_VERSION")), "{v}");
    assert!(v.contains("commit:") && v.contains("features:"), "{v}");
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("s.tree");
    let tree = tree.to_str().expect("utf8 path");
    let o = treenav(&["build", "-o", tree, "--embedder", "tfidf", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let built: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(built["treenav_version"], env!("CARGO_PKG_VERSION"));
    // RUST_LOG is honoured, and --log-format json gives one object a line.
    let o = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args([
            "--log-format",
            "json",
            "query",
            tree,
            "Who was Tesla?",
            "--json",
        ])
        .env_remove("TREENAV_LOG")
        .env("RUST_LOG", "treenav_navigator=debug")
        .output()
        .expect("run treenav");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let found: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(found["treenav_version"], env!("CARGO_PKG_VERSION"));
    let logs = text(&o.stderr);
    let events: Vec<serde_json::Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["fields"]["message"] == "query answered"),
        "{logs}"
    );
}

/// Path flags never hang on a FIFO nor read a device without end: a FIFO,
/// /dev/zero and a folder are refused at once, naming the flag.
#[test]
fn path_flags_refuse_what_is_not_a_regular_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo")
        .success();
    assert!(made, "mkfifo");
    let tree = dir.path().join("s.tree");
    let o = treenav(&[
        "build",
        "-o",
        tree.to_str().expect("utf8"),
        "--embedder",
        "tfidf",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for bad in [
        fifo.to_str().expect("utf8"),
        "/dev/zero",
        dir.path().to_str().expect("utf8"),
    ] {
        let o = treenav(&[
            "query",
            tree.to_str().expect("utf8"),
            "Tesla",
            "--judge-config",
            bad,
        ]);
        assert!(!o.status.success());
        assert!(
            text(&o.stderr).contains("--judge-config")
                && text(&o.stderr).contains("not a regular file"),
            "{}",
            text(&o.stderr)
        );
        let o = treenav(&["prune", "--question", "q", "--chunks", bad]);
        assert!(!o.status.success());
        assert!(
            text(&o.stderr).contains("--chunks") && text(&o.stderr).contains("not a regular file"),
            "{}",
            text(&o.stderr)
        );
    }
}

/// `--filter` clauses (repeatable, all must hold) keep other documents out
/// of `query`'s answer; text output shows each passage's metadata, `--json`
/// has it as an object; a bad clause stops before any work, naming it.
#[test]
fn query_filters_on_metadata_and_prints_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("notes.tree");
    let tree = tree.to_str().expect("utf8 path");
    let corpus = fixture("notes-metadata.jsonl");
    let o = treenav(&["build", corpus.to_str().expect("utf8"), "-o", tree]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    for strategy in ["levels", "best-first"] {
        let o = treenav(&[
            "query",
            tree,
            "insulin glucose",
            "--strategy",
            strategy,
            "--json",
            "--filter",
            "tenant=b",
            "--filter",
            "year in [2016, 2018, 2020]",
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let found: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        let passages = found["passages"].as_array().expect("passages");
        assert!(!passages.is_empty(), "{strategy}");
        for p in passages {
            assert_eq!(p["metadata"]["tenant"], "b", "{strategy}: {p}");
            assert!([2016, 2018, 2020].contains(&p["metadata"]["year"].as_i64().unwrap_or(0)));
        }
    }
    let o = treenav(&["query", tree, "insulin", "--filter", "lang!=en"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains("metadata: {") && stdout.contains(r#""lang":"de""#),
        "{stdout}"
    );
    assert!(!stdout.contains(r#""lang":"en""#), "{stdout}");
    let o = treenav(&["query", tree, "insulin", "--filter", "year>=soon"]);
    assert!(!o.status.success());
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("--filter") && stderr.contains("year>=soon"),
        "{stderr}"
    );
}

/// `treenav query T -` (or `--queries FILE`) runs a file of queries: one
/// JSON line per query, in input order, with its id and the service's
/// answer; a bad line is refused before any query runs, naming file,
/// line and field.
#[test]
fn query_runs_a_batch_from_stdin_or_a_file() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = built_sample(dir.path());
    let tree = out.to_str().expect("utf8 path");
    let input = concat!(
        "Where did Tesla work after leaving Edison's company?\n",
        "{\"_id\": \"normans\", \"text\": \"Who were the Normans?\"}\n",
        "\n",
        "{\"id\": \"none\", \"query\": \"Tesla\", \"filter\": {\"lang\": \"xx\"}}\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(["query", tree, "-", "--top", "3"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let o = child.wait_with_output().expect("wait");
    // The third names a field no document of the sample carries: its line
    // carries the error, the others their answers, and the run says so.
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("1 of 3 queries failed"),
        "{}",
        text(&o.stderr)
    );
    let lines: Vec<serde_json::Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let ids: Vec<&str> = lines.iter().filter_map(|l| l["id"].as_str()).collect();
    assert_eq!(ids, ["1", "normans", "none"]);
    assert_eq!(lines[0]["passages"][0]["document_id"], "Nikola_Tesla");
    assert_eq!(lines[1]["query"], "Who were the Normans?");
    assert_eq!(lines[1]["passages"][0]["document_id"], "Normans");
    let error = lines[2]["error"].to_string();
    assert!(
        error.contains("no document of this tree has the field `lang`"),
        "{error}"
    );

    let file = dir.path().join("q.jsonl");
    std::fs::write(&file, "Tesla\n{\"query\": \"Tesla\", \"top\": 3}\n").expect("write");
    let o = treenav(&["query", tree, "--queries", file.to_str().expect("utf8")]);
    assert!(!o.status.success());
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("q.jsonl:2: unknown field `top`"),
        "{stderr}"
    );
    assert!(
        o.stdout.is_empty(),
        "nothing runs before every line is read"
    );
}

/// A mistyped flag gets the nearest one suggested, transposed letters too.
#[test]
fn a_mistyped_flag_gets_the_nearest_suggested() {
    let o = treenav(&["query", "t.tree", "x", "--tpo", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("a similar argument exists: '--top'"),
        "{}",
        text(&o.stderr)
    );
}

/// `RUST_LOG=debug` shows treenav's own debug lines, not tantivy's flood of
/// file opens (nor, in JSON, the source paths its records carry).
#[test]
fn debug_logs_are_ours_not_tantivys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = built_sample(dir.path());
    let tree = out.to_str().expect("utf8 path");
    let o = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(["--log-format", "json", "query", tree, "Tesla"])
        .env("RUST_LOG", "debug")
        .env_remove("TREENAV_LOG")
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let logs = text(&o.stderr);
    assert!(logs.contains("treenav_navigator"), "{logs}");
    assert!(
        !logs.contains("mmap_directory") && !logs.contains(".cargo/registry"),
        "{logs}"
    );
}

/// `doctor` checks the install before the judge: the model cache,
/// bge-small, the ONNX runtime and the cross-encoder, each present or
/// missing with how to get it.
#[test]
fn doctor_checks_the_install() {
    let cache = tempfile::tempdir().expect("tempdir");
    let o = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(["doctor", "--json"])
        .env("TREENAV_CACHE_DIR", cache.path())
        .env_remove("ORT_DYLIB_PATH")
        .output()
        .expect("run");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let parts: Vec<(&str, bool)> = v["install"]
        .as_array()
        .expect("install")
        .iter()
        .map(|p| {
            (
                p["part"].as_str().unwrap_or(""),
                p["ok"].as_bool().unwrap_or(true),
            )
        })
        .collect();
    assert_eq!(
        parts,
        [
            ("model cache", true),
            ("bge-small", false),
            ("onnx runtime", false),
            ("cross-encoder", false)
        ]
    );
    assert!(
        v["install"][1]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("fetch-models.sh")),
        "{v}"
    );
}

/// The README's evaluate command names `--tree scifact.tree`, which a new
/// user has not built (#67 row 1: "cannot access scifact.tree"): the error
/// says the one command that builds it, or to leave the flag out.
#[test]
fn bench_with_a_tree_not_built_yet_says_how_to_build_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("scifact.tree");
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/beir");
    let o = treenav(&[
        "bench",
        "--dataset",
        dataset.to_str().expect("utf8"),
        "--tree",
        missing.to_str().expect("utf8"),
        "--systems",
        "bm25",
        "--judge-budgets",
        "20",
    ]);
    assert!(!o.status.success());
    let said = text(&o.stderr);
    assert!(said.contains("build it first (`treenav build"), "{said}");
    assert!(said.contains("leave out --tree"), "{said}");
}

/// Every public navigator setting is a flag of `query`, `bench` and
/// `serve`, named from the one list with its help; the library's own are
/// not; the earlier spellings still run.
#[test]
fn every_navigator_setting_is_a_flag_from_the_one_list() {
    let defaults =
        serde_json::to_value(treenav::navigator::NavigatorConfig::default()).expect("json");
    for command in ["query", "bench", "serve"] {
        let o = treenav(&[command, "--help"]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        let help = text(&o.stdout);
        for (_, setting) in treenav::navigator::settings::all() {
            let flag = format!("--{}", setting.flag(&defaults[setting.name]));
            let listed = help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n"));
            let first_words: String = setting.help.chars().take(30).collect();
            match setting.public {
                true => assert!(listed && help.contains(&first_words), "{command}: {flag}"),
                false => assert!(!listed, "{command}: {flag}"),
            }
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sample.tree");
    let o = treenav(&["build", "-o", out.to_str().expect("utf8 path")]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let tree = out.to_str().expect("utf8 path");
    let o = treenav(&[
        "query",
        tree,
        "Tesla",
        "--alternate",
        "--fallback",
        "--no-clusters",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = treenav(&["query", tree, "Tesla", "--explore-budget", "200000"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("--explore-budget must be in 0..=100000, got 200000"),
        "{}",
        text(&o.stderr)
    );
}

/// `build --part I/N`: each part a complete tree over the documents whose
/// id hashes to I; the parts hold the corpus once; a bad part or one that
/// holds nothing is refused before anything is written.
#[test]
fn parts_of_a_corpus_build_complete_trees_that_hold_it_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut documents = 0;
    for i in 0..3 {
        let out = dir.path().join(format!("part-{i}.tree"));
        let part = format!("{i}/3");
        let path = out.to_str().expect("utf8 path");
        let o = treenav(&["build", "--part", &part, "--embedder", "tfidf", "-o", path]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(&format!("part {part}: ")),
            "{}",
            text(&o.stderr)
        );
        let o = treenav(&["inspect", "--json", path]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("inspect --json");
        let n = v["documents"].as_u64().expect("documents");
        assert!((1..48).contains(&n), "part {part}: {n} documents");
        documents += n;
        let o = treenav(&["query", path, "Nikola Tesla", "--top", "1"]);
        assert!(
            o.status.success(),
            "part {part} answers: {}",
            text(&o.stderr)
        );
    }
    assert_eq!(documents, 48, "the three parts hold the 48 documents once");

    let out = dir.path().join("bad.tree");
    let path = out.to_str().expect("utf8 path");
    for (bad, says) in [("3/3", "must be below 3"), ("a/b", "INDEX/COUNT")] {
        let o = treenav(&["build", "--part", bad, "--embedder", "tfidf", "-o", path]);
        assert!(
            !o.status.success() && text(&o.stderr).contains(says),
            "{bad}: {}",
            text(&o.stderr)
        );
    }
    let corpus = dir.path().join("one.jsonl");
    std::fs::write(
        &corpus,
        "{\"_id\": \"d1\", \"title\": \"T\", \"text\": \"One document.\"}\n",
    )
    .expect("write");
    let corpus = corpus.to_str().expect("utf8 path");
    let mut refused = 0;
    for i in 0..2 {
        let out = dir.path().join(format!("one-{i}.tree"));
        let part = format!("{i}/2");
        let path = out.to_str().expect("utf8 path");
        let o = treenav(&[
            "build",
            corpus,
            "--part",
            &part,
            "--embedder",
            "tfidf",
            "-o",
            path,
        ]);
        if !o.status.success() {
            assert!(
                text(&o.stderr).contains("use fewer parts"),
                "{}",
                text(&o.stderr)
            );
            assert!(!out.exists(), "nothing written for a refused part");
            refused += 1;
        }
    }
    assert_eq!(refused, 1, "one of two parts holds the one document");
}
