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

/// Limits so small that every candidate fills a multiple-choice group alone
/// used to make the tournament recurse forever (a stack overflow): it must
/// pair them and finish, with one distribution over all of them.
#[tokio::test]
async fn a_tournament_under_tiny_limits_finishes() {
    let options: JudgeOptions = serde_json::from_str(
        r#"{"backend":{"kind":"lexical"},"dispatch":{"limits":{"max_questions":64,"max_options":26,"max_state_tokens":300}}}"#,
    )
    .expect("options");
    let judge = Judge::new(&options).expect("judge");
    let text = "insulin glucose blood sugar regulation ".repeat(60);
    let c: Vec<Candidate> = (0..64)
        .map(|i| Candidate::new(format!("c{i}"), format!("{text} {i}")))
        .collect();
    let choice = judge.choose("insulin glucose", &c).await.expect("choose");
    assert_eq!(choice.probabilities.len(), 64);
    assert!((choice.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert!(choice.best < 64);
    // Two candidates, each over the limit alone: one pairwise call.
    let two = judge.choose("insulin", &c[..2]).await.expect("choose two");
    assert_eq!(two.probabilities.len(), 2);
}
