//! The navigator over the bundled sample tree: behaviour with the lexical
//! judge, failure handling against a scripted System One server of our own
//! (faults and a judge whose choice disagrees on purpose cannot be had from a
//! real server), and an end-to-end walk against a real `sparrow-decider`.

mod support;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;
use treenav::judge::{
    bm25_scores, BackendOptions, Candidate, DispatchOptions, Judge, JudgeOptions, Limits,
};
use treenav::navigator::{Error, Navigator, NavigatorConfig, OnJudgeError, Route, Strategy};
use treenav::tree::{LevelKind, NodeKind};

/// This suite tests the paper's level-by-level walk (the default strategy
/// is best-first; `tests/best_first.rs` tests that one).
fn levels() -> NavigatorConfig {
    NavigatorConfig::default().strategy(Strategy::Levels)
}

fn lexical() -> Judge {
    Judge::new(&JudgeOptions::default()).expect("judge")
}

fn systemone(base: &str, dispatch: DispatchOptions) -> Judge {
    Judge::new(&JudgeOptions {
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: base.into(),
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        dispatch,
    })
    .expect("judge")
}

const QUERY: &str = "Where did Tesla work after leaving Edison's company?";

#[tokio::test]
async fn finds_the_answer_deterministically_within_budgets() {
    let tree = support::sample_tree().await;
    let config = levels()
        .retention_budgets([3, 4, 6])
        .batch_size(5)
        .returned_passages(6)
        .shortlist(3)
        .check()
        .expect("config");
    let nav = Navigator::new(tree.clone(), lexical(), config).expect("navigator");
    let a = nav.retrieve(QUERY).await.expect("retrieve");
    let b = nav.retrieve(QUERY).await.expect("retrieve again");
    assert_eq!(a.passages, b.passages, "deterministic");
    assert_eq!(
        a.passages[0].document_id,
        "Nikola_Tesla",
        "{:?}",
        a.passages.iter().map(|p| &p.id).collect::<Vec<_>>()
    );
    assert!(a.passages.len() <= 6);

    let t = &a.trace;
    let mut expanded_docs = HashSet::new();
    for level in &t.levels {
        let budget = level.budget;
        assert!(
            level.kept <= budget,
            "level {} kept {} > {budget}",
            level.depth,
            level.kept
        );
        assert_eq!(
            level.kept,
            level.candidates.iter().filter(|c| c.kept).count()
        );
        assert_eq!(
            level.batches,
            level.candidates.len().div_ceil(5),
            "batches of at most 5"
        );
        for batch in 0..level.batches {
            assert!(level.candidates.iter().filter(|c| c.batch == batch).count() <= 5);
        }
        if level.kind == LevelKind::Document {
            expanded_docs.extend(level.candidates.iter().filter(|c| c.kept).map(|c| c.node));
        }
    }
    // Every returned passage is in the tree, under an expanded document.
    for p in &a.passages {
        let node = tree.get(p.node).expect("in the tree");
        assert!(matches!(node.kind, NodeKind::Passage { .. }));
        assert!(
            expanded_docs.contains(&node.parent.expect("parent")),
            "{} not under an expanded document",
            p.id
        );
        assert_eq!(p.path.first(), Some(&tree.root()));
        assert_eq!(p.path_probabilities.len(), p.path.len() - 1);
    }
    // The counts add up: every level's candidates, the calibration
    // references its calls showed, and the shortlist of 3.
    let references: usize = t
        .levels
        .iter()
        .flat_map(|l| &l.calls)
        .map(|c| c.references)
        .sum();
    assert!(references > 0, "batches of 5 need references");
    assert_eq!(
        t.candidates_judged,
        t.levels.iter().map(|l| l.candidates.len()).sum::<usize>() + references + 3
    );
    let level_calls: u32 = t.levels.iter().map(|l| l.usage.calls).sum();
    assert_eq!(
        t.usage.calls,
        level_calls + t.rerank.as_ref().map_or(0, |r| r.calls)
    );
    let docs_total = tree.documents().count() as f64;
    let docs_shown = t
        .levels
        .iter()
        .filter(|l| l.kind == LevelKind::Document)
        .map(|l| l.candidates.len())
        .sum::<usize>() as f64;
    assert!((t.titles_read - docs_shown / docs_total).abs() < 1e-12);
    assert!(t.titles_read < 1.0, "the beam must not read every title");
}

#[tokio::test]
async fn lexical_entry_adds_documents_and_marks_their_route() {
    let tree = support::sample_tree().await;
    let config = levels()
        .retention_budgets([1])
        .lexical_entry(3)
        .check()
        .expect("config");
    let nav = Navigator::new(tree, lexical(), config).expect("navigator");
    let r = nav.retrieve(QUERY).await.expect("retrieve");
    let docs = r
        .trace
        .levels
        .iter()
        .find(|l| l.kind == LevelKind::Document)
        .expect("document level");
    assert!(docs
        .candidates
        .iter()
        .any(|c| matches!(c.route, Route::Lexical | Route::Both)));
    assert_eq!(r.passages[0].document_id, "Nikola_Tesla");
}

#[tokio::test]
async fn calibration_shows_references_in_every_batch() {
    let tree = support::sample_tree().await;
    let config = levels()
        .batch_size(4)
        .calibration(true)
        .check()
        .expect("config");
    let nav = Navigator::new(tree, lexical(), config).expect("navigator");
    let r = nav.retrieve(QUERY).await.expect("retrieve");
    let level = r
        .trace
        .levels
        .iter()
        .find(|l| l.batches > 1)
        .expect("a level with several batches");
    // Each batch showed its own candidates plus the references it lacks: more calls' worth of candidates than listed.
    let shown: u64 = level.usage.input_tokens;
    assert!(shown > 0);
    for c in &level.candidates {
        assert!((0.0..=1.0).contains(&c.probability));
    }
    assert!(!r.passages.is_empty());
}

/// The lexical judge scores relative to its call (logit = ln(s + ε) −
/// ln(mean + ε)), so a level split into calls is on one scale only if every
/// call carries the references and is shifted by them. With a judge whose
/// limit (8 questions) is below the batch size (100), the dispatcher used to
/// split each batch again and only the first call carried the references:
/// this failed before the decision session.
#[tokio::test]
async fn levels_calibrate_across_calls_split_by_the_judges_limit() {
    let tree = support::sample_tree().await;
    let judge = Judge::new(&JudgeOptions {
        backend: BackendOptions::default(),
        dispatch: DispatchOptions {
            limits: Some(Limits {
                max_questions: 8,
                max_options: 26,
                max_state_tokens: 1 << 30,
            }),
            ..DispatchOptions::default()
        },
    })
    .expect("judge");
    let config = levels()
        .batch_size(100)
        .lexical_entry(0)
        .check()
        .expect("config");
    let nav = Navigator::new(tree.clone(), judge, config).expect("navigator");
    let stats = Navigator::corpus_stats(&tree).expect("stats");
    let r = nav.retrieve(QUERY).await.expect("retrieve");
    let mut split = 0;
    for level in r.trace.levels.iter().filter(|l| l.candidates.len() > 8) {
        split += 1;
        let labels: Vec<Candidate> = level
            .candidates
            .iter()
            .map(|c| Candidate::new("x", nav.label(c.node)))
            .collect();
        let bm25 = bm25_scores(QUERY, &labels, 1.2, 0.75, Some(stats.clone()));
        let logit = |p: f64| (p / (1.0 - p)).ln();
        let offsets: Vec<f64> = level
            .candidates
            .iter()
            .zip(&bm25)
            .map(|(c, s)| logit(c.probability) - (s.max(0.0) + 0.01).ln())
            .collect();
        for o in &offsets {
            assert!(
                (o - offsets[0]).abs() < 1e-6,
                "level {} is not on one scale: {offsets:?}",
                level.depth
            );
        }
    }
    assert!(split >= 1, "no level was split");
}

#[tokio::test]
async fn the_shortlist_rerank_reorders_when_the_model_says_so() {
    let tree = support::sample_tree().await;
    let base = support::scripted_systemone(Duration::ZERO).await.0;
    let run = |m: usize| {
        let tree = tree.clone();
        let judge = systemone(&base, DispatchOptions::default());
        async move {
            let config = levels()
                .returned_passages(5)
                .shortlist(m)
                .check()
                .expect("config");
            Navigator::new(tree, judge, config)
                .expect("navigator")
                .retrieve(QUERY)
                .await
                .expect("retrieve")
        }
    };
    let plain = run(0).await;
    let reranked = run(4).await;
    assert!(plain.trace.rerank.is_none());
    // The model picks the last of the 4 shortlisted: it moves to the front; the 5th stays 5th.
    assert_eq!(reranked.passages[0].id, plain.passages[3].id);
    assert_eq!(reranked.passages[4].id, plain.passages[4].id);
    assert!(reranked.passages[0]
        .rerank_probability
        .is_some_and(|p| p > 0.8));
}

#[tokio::test]
async fn judge_failure_fails_with_level_and_batch_or_falls_back() {
    let tree = support::sample_tree().await;
    let port = support::free_port();
    let dead = format!("http://127.0.0.1:{port}");
    let quick = DispatchOptions {
        max_retries: 0,
        timeout_secs: 1.0,
        ..DispatchOptions::default()
    };
    let config = levels().check().expect("config");
    let err = Navigator::new(tree.clone(), systemone(&dead, quick.clone()), config)
        .expect("navigator")
        .retrieve(QUERY)
        .await
        .expect_err("must fail");
    match &err {
        Error::Judge {
            level,
            batch,
            source,
            ..
        } => {
            assert_eq!((*level, *batch), (1, 0));
            assert!(source.retryable(), "a refused connection may succeed later");
        }
        other => panic!("expected a judge error, got {other}"),
    }
    assert!(err.to_string().contains("level 1"), "{err}");

    let config = levels()
        .on_judge_error(OnJudgeError::Fallback)
        .shortlist(0)
        .check()
        .expect("config");
    let r = Navigator::new(tree.clone(), systemone(&dead, quick.clone()), config)
        .expect("navigator")
        .retrieve(QUERY)
        .await
        .expect("fallback");
    assert_eq!(r.passages.len(), 10, "no result lost to the failure");
    assert!(r
        .trace
        .levels
        .iter()
        .all(|l| l.candidates.iter().all(|c| c.fallback)));

    // With the shortlist rerank on, the fallback covers it too: both
    // strategies answer instead of failing at the rerank.
    for strategy in [Strategy::Levels, Strategy::BestFirst] {
        let config = levels()
            .on_judge_error(OnJudgeError::Fallback)
            .strategy(strategy)
            .check()
            .expect("config");
        let r = Navigator::new(tree.clone(), systemone(&dead, quick.clone()), config)
            .expect("navigator")
            .retrieve(QUERY)
            .await
            .expect("fallback covers the rerank");
        assert!(r.trace.rerank.is_some(), "{strategy:?}: the rerank ran");
        assert!(!r.passages.is_empty());
    }
}

#[tokio::test]
async fn deadline_and_cost_cap_stop_cleanly() {
    let tree = support::sample_tree().await;
    let base = support::scripted_systemone(Duration::ZERO).await.0;
    let config = levels().deadline_secs(Some(0.3)).check().expect("config");
    let nav = Navigator::new(
        tree.clone(),
        systemone(&format!("{base}/slow"), DispatchOptions::default()),
        config,
    )
    .expect("navigator");
    let started = std::time::Instant::now();
    assert!(matches!(nav.retrieve(QUERY).await, Err(Error::Deadline(_))));
    assert!(started.elapsed() < Duration::from_secs(2));

    let config = levels().max_cost_usd(Some(0.0)).check().expect("config");
    let nav = Navigator::new(tree, systemone(&base, DispatchOptions::default()), config)
        .expect("navigator");
    assert!(matches!(
        nav.retrieve(QUERY).await,
        Err(Error::CostCap { level: 1, .. })
    ));
}

#[tokio::test]
async fn an_empty_query_is_an_error() {
    let nav = Navigator::new(
        support::sample_tree().await,
        lexical(),
        levels().check().expect("config"),
    )
    .expect("navigator");
    for q in ["", " \t\n"] {
        assert!(matches!(nav.retrieve(q).await, Err(Error::EmptyQuery)));
    }
}

#[test]
fn config_is_checked() {
    for secs in [1e300, f64::INFINITY, f64::NAN, 0.0, -1.0] {
        assert!(
            levels().deadline_secs(Some(secs)).check().is_err(),
            "{secs}"
        );
    }
    assert!(levels().batch_size(0).check().is_err());
    assert!(levels().batch_size(201).check().is_err());
    assert!(levels().returned_passages(3).shortlist(4).check().is_err());
    assert!(levels().retention_budgets([5, 0]).check().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn navigates_end_to_end_with_a_real_sparrow_decider() {
    let Some(server) = support::start(
        "sparrow-decider",
        &["serve", "--port", "{port}"],
        "pip install sparrow-decider==0.2.0",
    ) else {
        return;
    };
    let tree = support::sample_tree().await;
    let config = levels().retention_budgets([2, 3]).check().expect("config");
    let nav = Arc::new(
        Navigator::new(
            tree.clone(),
            systemone(&server.base, DispatchOptions::default()),
            config,
        )
        .expect("navigator"),
    );
    let r = nav.retrieve(QUERY).await.expect("retrieve");
    assert!(!r.passages.is_empty() && r.passages.len() <= 10);
    assert!(r.trace.usage.calls >= 3, "one call per level at least");
    assert!(r.trace.levels.iter().all(|l| l
        .candidates
        .iter()
        .all(|c| (0.0..=1.0).contains(&c.probability))));
    // Many queries at once through one shared navigator.
    let mut tasks = tokio::task::JoinSet::new();
    for q in [
        "Who won Super Bowl 50?",
        "What is the Rhine?",
        "What is oxygen?",
    ] {
        let nav = nav.clone();
        tasks.spawn(async move { nav.retrieve(q).await.map(|r| r.passages.len()) });
    }
    while let Some(done) = tasks.join_next().await {
        assert!(done.expect("task").expect("retrieve") > 0);
    }
}

/// A real System One server behind a limit of 8 questions a call (below the
/// batch size): every call of a split level carries the two references, and
/// the trace says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_to_a_real_sparrow_decider_carries_the_references() {
    let Some(server) = support::start(
        "sparrow-decider",
        &["serve", "--port", "{port}"],
        "pip install sparrow-decider==0.2.0",
    ) else {
        return;
    };
    let tree = support::sample_tree().await;
    let config = levels().batch_size(100).check().expect("config");
    let dispatch = DispatchOptions {
        limits: Some(Limits {
            max_questions: 8,
            max_options: 26,
            max_state_tokens: 30_000,
        }),
        ..DispatchOptions::default()
    };
    let nav = Navigator::new(tree, systemone(&server.base, dispatch), config).expect("navigator");
    let r = nav.retrieve(QUERY).await.expect("retrieve");
    let split: Vec<_> = r
        .trace
        .levels
        .iter()
        .filter(|l| l.calls.len() > 1)
        .collect();
    assert!(!split.is_empty(), "no level needed more than one call");
    for level in split {
        assert_eq!(level.calls[0].references, 0, "the first call holds them");
        for call in &level.calls[1..] {
            assert_eq!(call.references, 2, "{:?}", level.calls);
            assert!(call.candidates + call.references <= 8);
        }
        let scored: usize = level.calls.iter().map(|c| c.candidates).sum();
        assert_eq!(scored, level.candidates.len());
    }
    assert_eq!(
        r.trace.candidates_judged as u32,
        r.trace
            .levels
            .iter()
            .flat_map(|l| &l.calls)
            .map(|c| (c.candidates + c.references) as u32)
            .sum::<u32>()
            + r.trace.rerank.as_ref().map_or(0, |_| 5)
    );
}

/// A tree saved with its side files and loaded again (texts read from the
/// store, the lexical index and statistics read from beside it) answers as
/// the tree built in memory does, under both strategies.
#[tokio::test]
async fn a_loaded_tree_answers_as_the_built_one() {
    let built = support::sample_tree().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sample.tree");
    treenav::tree::file::save(&built, &path).expect("save");
    let loaded = Arc::new(treenav::tree::file::load(&path).expect("load"));
    assert!(loaded.text_store().is_some() && loaded.lexical().is_some());
    for strategy in [Strategy::Levels, Strategy::BestFirst] {
        let config = levels()
            .strategy(strategy)
            .returned_passages(8)
            .check()
            .expect("config");
        let a = Navigator::new(built.clone(), lexical(), config.clone()).expect("navigator");
        let b = Navigator::new(loaded.clone(), lexical(), config).expect("navigator");
        for query in [QUERY, "Who won the Super Bowl?", "steam engine efficiency"] {
            let (x, y) = (
                a.retrieve(query).await.expect("built"),
                b.retrieve(query).await.expect("loaded"),
            );
            assert_eq!(x.passages, y.passages, "{strategy:?}: {query}");
            assert!(!y.passages.is_empty() && !y.passages[0].text.is_empty());
        }
    }
}
