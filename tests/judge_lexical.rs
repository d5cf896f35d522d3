//! The lexical judge through the dispatcher: corpus statistics, the cache key.

use std::sync::Arc;
use treenav::judge::{Candidate, CorpusStats, Judge, JudgeOptions};

#[tokio::test]
async fn corpus_statistics_apply_even_to_a_shared_judge() {
    let judge = Judge::new(&JudgeOptions::default()).expect("judge");
    let _shared = judge.clone();
    // In the corpus, "glucose" is everywhere and "insulin" rare: insulin must weigh more.
    let corpus: Vec<String> = (0..50)
        .map(|i| format!("glucose note {i}"))
        .chain(["insulin".to_string()])
        .collect();
    let stats = Arc::new(CorpusStats::from_texts(corpus.iter().map(String::as_str)));
    let with_stats = judge.with_corpus_stats(stats).expect("stats");
    let c = [
        Candidate::new("a", "glucose glucose"),
        Candidate::new("b", "insulin"),
    ];
    let local = judge.judge("glucose insulin", &c).await.expect("judge");
    let global = with_stats
        .judge("glucose insulin", &c)
        .await
        .expect("judge");
    assert!(
        global.probabilities[1] > global.probabilities[0],
        "{:?}",
        global.probabilities
    );
    assert_ne!(local.probabilities, global.probabilities);
}

#[tokio::test]
async fn candidates_that_render_alike_do_not_share_a_cache_entry() {
    let judge = Judge::new(&JudgeOptions::default()).expect("judge");
    // Both texts exceed the rendered length cap and differ only past it.
    let head = "filler ".repeat(400);
    let a = [
        Candidate::new("x", format!("{head} insulin")),
        Candidate::new("y", "glucose"),
    ];
    let b = [
        Candidate::new("x", format!("{head} football")),
        Candidate::new("y", "glucose"),
    ];
    let first = judge.judge("insulin", &a).await.expect("judge");
    let second = judge.judge("insulin", &b).await.expect("judge");
    assert_eq!(
        second.usage.cache_hits, 0,
        "a different candidate must not hit the cache"
    );
    // "football" does not match: no evidence, P(yes) near 0.
    assert!(
        first.probabilities[0] > 10.0 * second.probabilities[0],
        "{:?}",
        first.probabilities
    );
    assert!(second.probabilities[0] < 0.05, "{:?}", second.probabilities);
}
