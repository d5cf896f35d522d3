//! One default everywhere (#69 row 1): the library's
//! `Navigator::builder(tree).build()`, `treenav query`, `serve` and the
//! Python client, each given only a tree and a question, return the same
//! passages with the same scores: the same judge (the embedding judge on a
//! bge-small tree), strategy and settings.
//!
//! Needs bge-small in the model cache (`bash scripts/fetch-models.sh`) and
//! the Python client; without them it skips with one line, in CI it fails.

#[path = "support/pytest.rs"]
#[allow(dead_code)] // `run` is for the pytest suites
mod pytest;
#[path = "support/serving.rs"]
mod serving;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;

const QUESTION: &str = "Where did Tesla work after leaving Edison's company?";

/// Each passage's id and score, in order.
type Answer = Vec<(String, f64)>;

/// The passages of a `--json` answer, and the judge its trace names.
fn from_json(reply: &Value) -> (Answer, String) {
    let judge = reply["trace"]["judge"]
        .as_str()
        .unwrap_or("no trace")
        .to_string();
    (passages(&reply["passages"]), judge)
}

fn passages(passages: &Value) -> Answer {
    passages
        .as_array()
        .expect("passages")
        .iter()
        .map(|p| {
            let id = p["id"].as_str().expect("id").to_string();
            (id, p["score"].as_f64().expect("score"))
        })
        .collect()
}

fn treenav(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .output()
        .expect("run treenav");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The library's answer: its defaults, or `judge` in place of its judge.
fn library(tree: &Path, judge: Option<treenav::judge::Judge>) -> (Answer, String) {
    let tree = treenav::tree::file::load(tree).expect("load");
    let mut builder = treenav::navigator::Navigator::builder(Arc::new(tree));
    if let Some(judge) = judge {
        builder = builder.judge(judge);
    }
    let navigator = builder.build().expect("navigator");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let found = runtime
        .block_on(navigator.retrieve(QUESTION))
        .expect("retrieve");
    let answer = found.passages.iter().map(|p| (p.id.clone(), p.score));
    (answer.collect(), found.trace.judge.to_string())
}

fn over_http(base: &str) -> (Answer, String) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let reply: Value = runtime.block_on(async {
        reqwest::Client::new()
            .post(format!("{base}/v1/retrieve"))
            .json(&json!({"tree": "sample", "query": QUESTION, "trace": true}))
            .send()
            .await
            .expect("POST /v1/retrieve")
            .json()
            .await
            .expect("json")
    });
    from_json(&reply)
}

fn from_python(base: &str) -> Answer {
    let code = format!(
        "import json\nfrom treenav_client import TreenavClient\n\
         r = TreenavClient({base:?}).retrieve('sample', {QUESTION:?})\n\
         print(json.dumps([{{'id': p.id, 'score': p.score}} for p in r.passages]))"
    );
    let out = Command::new(pytest::python())
        .args(["-c", &code])
        .env_remove("TREENAV_TOKEN")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    passages(&serde_json::from_slice(&out.stdout).expect("json"))
}

fn assert_same(what: &str, got: &Answer, library: &Answer) {
    assert!(!got.is_empty(), "{what}: no passage");
    let ids = |a: &Answer| a.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(got), ids(library), "{what} vs the library: passages");
    for ((id, a), (_, b)) in got.iter().zip(library) {
        assert!(
            (a - b).abs() < 1e-9,
            "{what} vs the library: {id} {a} ≠ {b}"
        );
    }
}

#[test]
fn library_cli_serve_and_python_share_their_defaults() {
    let missing = treenav::tree::bge_small_available()
        .err()
        .or_else(|| pytest::missing(&pytest::python(), "import treenav_client"));
    let hint = "bash scripts/fetch-models.sh; pip install ./clients/python";
    if pytest::skip("defaults test", hint, missing) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("sample.tree");
    let built = treenav(&["build", "-o", tree.to_str().expect("utf8")]);
    assert!(String::from_utf8_lossy(&built.stderr).contains("embedder: bge-small-en"));

    let (lib, judge) = library(&tree, None);
    assert_eq!(judge, "embedding", "the library's default judge");
    assert_eq!(lib.len(), 10, "the default returns 10 passages");
    let tree_arg = tree.to_str().expect("utf8");
    let cli = treenav(&["query", tree_arg, QUESTION, "--json", "--trace"]).stdout;
    let cli = serde_json::from_slice(&cli).expect("query --json");
    let (cli, cli_judge) = from_json(&cli);
    assert_same("treenav query", &cli, &lib);
    assert_eq!(cli_judge, judge, "treenav query's judge");

    let serving = serving::serve(&["--tree".into(), format!("sample={tree_arg}")], dir.path());
    let base = serving.base.as_str();
    let (http, http_judge) = over_http(base);
    assert_same("serve", &http, &lib);
    assert_eq!(http_judge, judge, "serve's judge");
    assert_same("the Python client", &from_python(base), &lib);

    // The trace tells judges apart (here the cascade's exploration is sure,
    // so the lexical second stage is not asked and the passages agree).
    let lexical = treenav::judge::Judge::new(&treenav::judge::JudgeOptions::default())
        .expect("lexical judge");
    assert_eq!(library(&tree, Some(lexical)).1, "lexical");
}
