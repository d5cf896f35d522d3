//! The strategies against the in-memory decider ([`Scripted`]): no server,
//! every call the navigator makes is seen. The wire is tested elsewhere
//! (the root crate's `tests/`, against real servers).

use crate::{BestFirstConfig, Error, Navigator, NavigatorConfig, OnJudgeError, Route, Strategy};
use std::collections::HashSet;
use std::sync::Arc;
use treenav_builder::{build_extractive, TreeParams};
use treenav_corpus::{load_str, Format, LoadOptions};
use treenav_judge::probability::{logit, sigmoid};
use treenav_judge::{Candidate, Decide, Limits, Scripted};
use treenav_tree::{EmbedderOptions, Tree};

const TOPICS: [&str; 4] = [
    "Insulin lowers blood glucose in diabetic patients.",
    "The striker scored a late goal in the cup final.",
    "Lava flows from volcanoes after an eruption.",
    "The orchestra played a symphony by Mahler.",
];

/// 80 documents of two passages each over four topics.
pub(crate) async fn tree() -> Arc<Tree> {
    let jsonl: Vec<String> = (0..80)
        .map(|i| {
            format!(
                r#"{{"_id":"d{i}","title":"Note {i}","text":"{} Item {i} first.\n\nMore on item {i}: {}"}}"#,
                TOPICS[i % 4],
                TOPICS[(i + 1) % 4]
            )
        })
        .collect();
    tree_of(&jsonl.join("\n"), 6).await
}

/// The tree of a BEIR corpus (passages of 12 words, tfidf, extractive
/// summaries) with at most `branching` children per node.
pub(crate) async fn tree_of(jsonl: &str, branching: usize) -> Arc<Tree> {
    let options = LoadOptions {
        passage_words: 12,
        ..LoadOptions::default()
    };
    let corpus = load_str(jsonl, "corpus.jsonl", Format::Beir, &options).expect("corpus");
    let params = TreeParams::default()
        .branching(branching)
        .check()
        .expect("params");
    let tree = build_extractive(corpus, "notes", &params, &EmbedderOptions::default())
        .await
        .expect("tree");
    Arc::new(tree)
}

/// A candidate's merit: a stable number from its text, on the logit scale.
fn merit(c: &Candidate) -> f64 {
    let h = treenav_text::fingerprint(c.text.as_bytes());
    (h % 1000) as f64 / 250.0
}

/// A decider that scores relative to its call: logit = merit minus the
/// call's mean merit. Uncalibrated, every call has its own scale.
fn relative(limits: Limits) -> Scripted {
    Scripted::new(|_, c, call| {
        let mean = call.iter().map(merit).sum::<f64>() / call.len() as f64;
        sigmoid(merit(c) - mean)
    })
    .limits(limits)
}

fn limits(max_questions: usize) -> Limits {
    Limits {
        max_questions,
        max_options: 26,
        max_state_tokens: 1 << 30,
    }
}

fn levels_config() -> NavigatorConfig {
    NavigatorConfig::default()
        .strategy(Strategy::Levels)
        .retention_budgets([3, 6])
        .batch_size(100)
        .lexical_entry(0)
        .shortlist(3)
}

#[tokio::test]
async fn every_call_of_a_level_carries_the_references_and_one_scale() {
    let tree = tree().await;
    let decider = Arc::new(relative(limits(8)));
    let nav = Navigator::new(
        tree.clone(),
        decider.clone() as Arc<dyn Decide>,
        levels_config().check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("insulin glucose").await.expect("retrieve");
    let mut calls = decider.calls();
    assert!(calls.iter().all(|c| c.len() <= 8), "{calls:?}");
    // The last call is the shortlist's choice, not a level's.
    assert!(found.trace.rerank.is_some());
    calls.pop();
    let mut split = 0;
    for level in &found.trace.levels {
        if level.calls.len() < 2 {
            continue;
        }
        split += 1;
        let ids: Vec<String> = level
            .candidates
            .iter()
            .take(2)
            .map(|c| nav.candidate(c.node).id)
            .collect();
        // Every call of this level (after the first, which holds them) shows
        // the level's first two candidates.
        for call in level.calls.iter().skip(1) {
            assert_eq!(call.references, 2);
        }
        let level_ids: HashSet<String> = level
            .candidates
            .iter()
            .map(|t| nav.candidate(t.node).id)
            .collect();
        let level_calls: Vec<&Vec<String>> = calls
            .iter()
            .filter(|c| c.iter().all(|id| level_ids.contains(id)))
            .collect();
        assert_eq!(level_calls.len(), level.calls.len());
        for call in level_calls {
            assert!(
                ids.iter().all(|id| call.contains(id)),
                "{call:?} lacks {ids:?}"
            );
        }
        // Calibrated: logit(score) − merit is one constant over the level.
        let offsets: Vec<f64> = level
            .candidates
            .iter()
            .map(|c| logit(c.probability) - merit(&nav.candidate(c.node)))
            .collect();
        for o in &offsets {
            assert!((o - offsets[0]).abs() < 1e-6, "{offsets:?}");
        }
    }
    assert!(split >= 1, "no level needed more than one call");
}

#[tokio::test]
async fn candidates_judged_counts_what_the_decider_was_shown() {
    let tree = tree().await;
    let decider = Arc::new(relative(limits(8)));
    let nav = Navigator::new(
        tree,
        decider.clone() as Arc<dyn Decide>,
        levels_config().check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("lava volcano").await.expect("retrieve");
    let shown: usize = decider.calls().iter().map(Vec::len).sum();
    assert_eq!(found.trace.candidates_judged, shown);
}

#[tokio::test]
async fn a_failing_call_falls_back_and_is_traced() {
    let tree = tree().await;
    let failing = Scripted::new(|_, _, _| 0.5).fail_when(|c| c.len() > 3);
    let config = levels_config()
        .batch_size(100)
        .on_judge_error(OnJudgeError::Fallback);
    let nav = Navigator::new(
        tree.clone(),
        Arc::new(failing) as Arc<dyn Decide>,
        config.clone().check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("insulin glucose").await.expect("fallback");
    assert!(found
        .trace
        .levels
        .iter()
        .all(|l| l.candidates.iter().all(|c| c.fallback)));
    assert!(found.trace.usage.fallbacks >= 1);
    // The lexical fallback finds the insulin notes.
    assert!(
        found.passages[0].text.contains("Insulin"),
        "{:?}",
        found.passages[0]
    );
    let strict = Navigator::new(
        tree,
        Arc::new(Scripted::new(|_, _, _| 0.5).fail_when(|c| c.len() > 3)) as Arc<dyn Decide>,
        config
            .on_judge_error(OnJudgeError::Fail)
            .check()
            .expect("config"),
    )
    .expect("navigator");
    let err = strict.retrieve("insulin").await.expect_err("fails");
    assert!(matches!(err, Error::Judge { level: 1, .. }), "{err}");
}

fn best_first(budget: usize) -> NavigatorConfig {
    NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .shortlist(5)
        .best_first(BestFirstConfig {
            judge_budget: budget,
            slate_size: 6,
            rounds: 3,
            ..BestFirstConfig::default()
        })
}

#[tokio::test]
async fn best_first_shows_the_anchor_in_every_slate_after_the_first() {
    let tree = tree().await;
    let decider = Arc::new(relative(limits(100)));
    let nav = Navigator::new(
        tree,
        decider.clone() as Arc<dyn Decide>,
        best_first(40).check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("insulin glucose").await.expect("retrieve");
    let calls = decider.calls();
    // The last call is the shortlist's choice.
    let (rounds, choice) = calls.split_at(calls.len() - 1);
    assert_eq!(choice[0].len(), 5);
    let anchor = rounds[0][0].clone();
    assert!(rounds.iter().all(|c| c.len() <= 6));
    assert!(
        rounds[1..].iter().all(|c| c.last() == Some(&anchor)),
        "{rounds:?}"
    );
    let shown: usize = calls.iter().map(Vec::len).sum();
    assert_eq!(found.trace.candidates_judged, shown);
    assert!(shown <= 40, "{shown}");
    // References are traced as such, never kept.
    let refs = found
        .trace
        .rounds
        .iter()
        .flat_map(|r| &r.candidates)
        .filter(|c| c.route == Route::Reference);
    assert!(refs.clone().count() >= rounds.len() - 1);
    assert!(refs.clone().all(|c| !c.kept));
    // One scale: every judged passage's logit − merit is one constant.
    let offsets: Vec<f64> = found
        .trace
        .rounds
        .iter()
        .flat_map(|r| &r.candidates)
        .filter(|c| c.route != Route::Reference)
        .map(|c| logit(c.probability) - merit(&nav.candidate(c.node)))
        .collect();
    for o in &offsets {
        assert!((o - offsets[0]).abs() < 1e-6, "{offsets:?}");
    }
}

#[tokio::test]
async fn a_pointwise_budget_is_spent_on_distinct_candidates() {
    let tree = tree().await;
    for budget in [12, 30] {
        let decider = Arc::new(
            Scripted::new(|_, c, _| sigmoid(merit(c) - 2.0))
                .pointwise(true)
                .limits(limits(100)),
        );
        let nav = Navigator::new(
            tree.clone(),
            decider.clone() as Arc<dyn Decide>,
            best_first(budget).check().expect("config"),
        )
        .expect("navigator");
        let found = nav.retrieve("insulin glucose").await.expect("retrieve");
        let shown: Vec<String> = decider.calls().concat();
        let distinct: HashSet<&String> = shown.iter().collect();
        assert_eq!(shown.len(), budget, "no reference, no choose call");
        assert_eq!(distinct.len(), budget);
        assert_eq!(found.trace.candidates_judged, budget);
        assert!(found.trace.rerank.is_none());
        // The final order is the scores' order (fused with the evidence).
        let p: Vec<f64> = found.passages.iter().map(|x| x.score).collect();
        assert!(p.windows(2).all(|w| w[0] >= w[1]), "{p:?}");
    }
}

#[tokio::test]
async fn a_context_reading_budget_counts_references_and_the_shortlist() {
    let tree = tree().await;
    let decider = Arc::new(relative(limits(4)));
    let nav = Navigator::new(
        tree,
        decider.clone() as Arc<dyn Decide>,
        best_first(30).check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("orchestra symphony").await.expect("retrieve");
    let calls = decider.calls();
    // The decider's limit (4) caps the slates of 6.
    assert!(calls.iter().all(|c| c.len() <= 5), "{calls:?}");
    assert!(calls[..calls.len() - 1].iter().all(|c| c.len() <= 4));
    let shown: usize = calls.iter().map(Vec::len).sum();
    assert_eq!(found.trace.candidates_judged, shown);
    assert!((25..=30).contains(&shown), "{shown}");
}

#[tokio::test]
async fn the_adaptive_split_keeps_the_budget_and_mixes_both_routes() {
    let tree = tree().await;
    let decider = Arc::new(relative(limits(100)));
    let mut config = best_first(60);
    config = config.best_first(BestFirstConfig {
        judge_budget: 60,
        slate_size: 6,
        rounds: 4,
        adaptive_split: true,
        ..BestFirstConfig::default()
    });
    let nav = Navigator::new(
        tree,
        decider.clone() as Arc<dyn Decide>,
        config.check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("insulin glucose").await.expect("retrieve");
    let shown: usize = decider.calls().iter().map(Vec::len).sum();
    assert_eq!(found.trace.candidates_judged, shown);
    assert!(shown <= 60, "{shown}");
    let routes: HashSet<Route> = found
        .trace
        .rounds
        .iter()
        .flat_map(|r| &r.candidates)
        .map(|c| c.route)
        .collect();
    assert!(routes.contains(&Route::Lexical), "{routes:?}");
    assert!(
        routes.len() >= 3,
        "lexical, graph and reference: {routes:?}"
    );
}

/// A decider whose multiple-choice answer (its calls of exactly `m`
/// candidates) reverses what its yes/no judgments say.
fn contrary(m: usize) -> Scripted {
    Scripted::new(move |_, c, call| {
        let p = sigmoid(merit(c) - 2.0);
        if call.len() == m {
            1.0 - p
        } else {
            p
        }
    })
}

#[tokio::test]
async fn score_is_one_scale_non_increasing_for_every_strategy() {
    let tree = tree().await;
    let best_first = |fusion: f64| {
        levels_config()
            .strategy(Strategy::BestFirst)
            .best_first(BestFirstConfig {
                judge_budget: 40,
                fusion,
                ..BestFirstConfig::default()
            })
    };
    for (name, config) in [
        ("levels", levels_config()),
        ("best-first", best_first(0.0)),
        ("best-first fused", best_first(2.0)),
    ] {
        let nav = Navigator::new(
            tree.clone(),
            Arc::new(contrary(3)) as Arc<dyn Decide>,
            config.check().expect("config"),
        )
        .expect("navigator");
        let found = nav.retrieve("insulin glucose").await.expect("retrieve");
        let p = &found.passages;
        assert!(p.len() >= 3, "{name}: {}", p.len());
        for w in p.windows(2) {
            assert!(
                w[0].score >= w[1].score,
                "{name}: {} < {}",
                w[0].score,
                w[1].score
            );
        }
        assert!(p.iter().all(|x| x.score > 0.0 && x.score < 1.0), "{name}");
        // The shortlist reversed the judge's order, and `score` still falls.
        assert!(p[0].probability < p[2].probability, "{name}: not reordered");
        assert!(
            p[..3].iter().all(|x| x.rerank_probability.is_some()),
            "{name}"
        );
        assert!(
            p[3..].iter().all(|x| x.rerank_probability.is_none()),
            "{name}"
        );
    }
}

#[tokio::test]
async fn top_is_k_the_search_widens_and_says_when_the_corpus_runs_out() {
    let tree = tree().await;
    let all = tree.passages().count();
    let best_first = |top: usize| {
        levels_config()
            .returned_passages(top)
            .strategy(Strategy::BestFirst)
            .best_first(BestFirstConfig {
                judge_budget: 20,
                ..BestFirstConfig::default()
            })
    };
    for (name, config, top) in [
        ("levels", levels_config().returned_passages(50), 50),
        ("best-first", best_first(50), 50),
        (
            "levels",
            levels_config().returned_passages(all + 40),
            all + 40,
        ),
    ] {
        let nav = Navigator::new(
            tree.clone(),
            Arc::new(relative(limits(8))) as Arc<dyn Decide>,
            config.check().expect("config"),
        )
        .expect("navigator");
        let found = nav.retrieve("insulin glucose").await.expect("retrieve");
        let expected = top.min(all);
        assert_eq!(found.passages.len(), expected, "{name} top {top}");
        assert_eq!(found.exhausted, top > all, "{name} top {top}");
        let ids: HashSet<&str> = found.passages.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids.len(), expected, "{name}: duplicates");
    }
}

#[tokio::test]
async fn per_document_keeps_at_most_n_passages_of_a_document_and_still_k() {
    let tree = tree().await;
    let best_first = levels_config()
        .strategy(Strategy::BestFirst)
        .best_first(BestFirstConfig {
            judge_budget: 30,
            ..BestFirstConfig::default()
        });
    for (name, config) in [("levels", levels_config()), ("best-first", best_first)] {
        let nav = Navigator::new(
            tree.clone(),
            Arc::new(relative(limits(8))) as Arc<dyn Decide>,
            config
                .returned_passages(20)
                .per_document(1)
                .check()
                .expect("config"),
        )
        .expect("navigator");
        let found = nav.retrieve("insulin glucose").await.expect("retrieve");
        let docs: HashSet<&str> = found
            .passages
            .iter()
            .map(|p| p.document_id.as_str())
            .collect();
        assert_eq!(found.passages.len(), 20, "{name}");
        assert_eq!(docs.len(), 20, "{name}: a document twice");
    }
}

/// The text trace names a route as the JSON trace and the docs do.
#[test]
fn a_route_prints_as_the_json_names_it() {
    for route in [
        Route::Tree,
        Route::Lexical,
        Route::LexicalDocument,
        Route::Explored,
        Route::Both,
        Route::Reference,
        Route::Neighbour,
        Route::Evidence,
    ] {
        let json = serde_json::to_value(route).expect("json");
        assert_eq!(json.as_str(), Some(route.to_string().as_str()));
    }
}
