//! The cascade against the in-memory decider: the embedding judge (over a
//! TF-IDF tree's stored vectors, no model needed) explores, a [`Scripted`]
//! judge spends its budget on what the exploration ranked best.

use crate::tests::tree;
use crate::{BestFirstConfig, Navigator, NavigatorConfig, Strategy};
use std::collections::HashSet;
use std::sync::Arc;
use treenav_judge::{BackendOptions, Decide, Judge, JudgeOptions, Scripted};

fn embedding_judge() -> Judge {
    Judge::new(&JudgeOptions {
        backend: BackendOptions::Embedding(treenav_judge::EmbeddingOptions {}),
        ..JudgeOptions::default()
    })
    .expect("embedding judge")
}

fn config(explore: usize, judge: usize) -> NavigatorConfig {
    NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .returned_passages(10)
        .shortlist(5)
        .best_first(BestFirstConfig {
            judge_budget: judge,
            slate_size: 6,
            rounds: 3,
            explore_budget: explore,
            tfidf_vectors: true,
            ..BestFirstConfig::default()
        })
}

#[tokio::test]
async fn the_embedding_judge_alone_scores_stored_vectors_and_ranks_by_them() {
    let tree = tree().await;
    assert!(
        tree.passage_vectors().is_some(),
        "a built tree keeps passage vectors"
    );
    let nav = Navigator::new(
        tree,
        embedding_judge(),
        config(40, 20).check().expect("config"),
    )
    .expect("navigator");
    assert!(nav.embeds_queries());
    let found = nav
        .retrieve("insulin glucose diabetic")
        .await
        .expect("retrieve");
    let t = &found.trace;
    assert_eq!((t.explore_budget, t.judge_budget), (Some(40), None));
    assert!(t.rounds.iter().all(|r| r.stage == "explore"));
    assert!(
        found.passages[0].text.contains("Insulin"),
        "{:?}",
        found.passages[0]
    );
    // Every candidate shown was scored from a stored vector; the descent
    // read its clusters' centroids and documents on top.
    let shown: usize = t.rounds.iter().map(|r| r.candidates.len()).sum();
    assert!(
        t.usage.vectors_scored as usize >= shown,
        "{} < {shown}",
        t.usage.vectors_scored
    );
    assert!(
        shown <= 40 + 10,
        "{shown} shown for a budget of 40 (+ widening)"
    );
    for w in found.passages.windows(2) {
        assert!(w[0].score >= w[1].score);
    }
    // A pointwise judge: no shortlist question, no calibration reference.
    assert!(t.rerank.is_none());
    assert!(t
        .rounds
        .iter()
        .flat_map(|r| &r.candidates)
        .all(|c| c.route != crate::Route::Reference));
}

#[tokio::test]
async fn the_judge_spends_its_budget_on_what_the_exploration_ranked_best() {
    let tree = tree().await;
    let judge = Arc::new(
        Scripted::new(|_, c, _| if c.text.contains("Insulin") { 0.9 } else { 0.1 }).pointwise(true),
    );
    let nav = Navigator::new(
        tree,
        judge.clone() as Arc<dyn Decide>,
        config(60, 24).check().expect("config"),
    )
    .expect("navigator");
    let found = nav
        .retrieve("insulin glucose diabetic")
        .await
        .expect("retrieve");
    let t = &found.trace;
    assert_eq!((t.explore_budget, t.judge_budget), (Some(60), Some(24)));
    let explored: Vec<_> = t.rounds.iter().filter(|r| r.stage == "explore").collect();
    let judged: Vec<_> = t.rounds.iter().filter(|r| r.stage == "judge").collect();
    assert!(!explored.is_empty() && !judged.is_empty());
    // The judge's first slate is the exploration's best: every one of its
    // passages was explored, and scored above the exploration's median.
    let mut scores: Vec<(crate::NodeId, f64)> = explored
        .iter()
        .flat_map(|r| r.candidates.iter().map(|c| (c.node, c.probability)))
        .collect();
    scores.sort_by(|a, b| b.1.total_cmp(&a.1));
    let top_half: HashSet<_> = scores
        .iter()
        .take(scores.len() / 2)
        .map(|(n, _)| *n)
        .collect();
    let first = &judged[0].candidates;
    assert!(
        first.iter().all(|c| top_half.contains(&c.node)),
        "{first:?}"
    );
    // Picked from the exploration's ranking, and traced so; the exploration
    // itself entered through BM25's list.
    assert!(
        first.iter().all(|c| c.route == crate::Route::Explored),
        "{first:?}"
    );
    assert!(explored
        .iter()
        .flat_map(|r| &r.candidates)
        .all(|c| c.route != crate::Route::Explored));
    // The judge saw at most its budget; the scripted judge's preference leads.
    let shown: usize = judged.iter().map(|r| r.candidates.len()).sum();
    assert!(shown <= 24, "{shown}");
    assert!(judge.calls().iter().map(Vec::len).sum::<usize>() <= 24);
    assert!(found.passages[0].text.contains("Insulin"));
}

#[tokio::test]
async fn a_tfidf_tree_is_judged_lexically_unless_asked() {
    let tree = tree().await;
    let config = NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .best_first(BestFirstConfig {
            explore_budget: 40,
            ..BestFirstConfig::default()
        });
    let nav = Navigator::new(tree, embedding_judge(), config.check().expect("config"))
        .expect("navigator");
    assert!(!nav.embeds_queries());
    let found = nav.retrieve("insulin glucose").await.expect("retrieve");
    assert_eq!(found.trace.explore_budget, None);
    assert_eq!(found.trace.usage.vectors_scored, 0);
    assert!(found.passages[0].text.contains("Insulin"));
}

#[tokio::test]
async fn without_an_exploration_budget_the_judge_searches_alone() {
    let tree = tree().await;
    let judge = Arc::new(Scripted::new(|_, _, _| 0.5).pointwise(true));
    let nav = Navigator::new(
        tree,
        judge as Arc<dyn Decide>,
        config(0, 24).check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("insulin glucose").await.expect("retrieve");
    assert_eq!(found.trace.explore_budget, None);
    assert!(found.trace.rounds.iter().all(|r| r.stage == "judge"));
    assert_eq!(found.trace.usage.vectors_scored, 0);
}
