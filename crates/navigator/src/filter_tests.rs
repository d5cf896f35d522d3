//! Metadata filters against the in-memory decider: what a filter keeps out
//! is never shown to the decider and never returned, in every strategy.

use crate::{BestFirstConfig, Navigator, NavigatorConfig, Strategy as Walk};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::Arc;
use treenav_judge::{Decide, Scripted};
use treenav_tree::filter::Filter;
use treenav_tree::{NodeId, NodeKind, Tree};

const TOPICS: [&str; 4] = [
    "Insulin lowers blood glucose in diabetic patients.",
    "The striker scored a late goal in the cup final.",
    "Lava flows from volcanoes after an eruption.",
    "The orchestra played a symphony by Mahler.",
];

/// 60 documents of two passages over four topics, document `i` with the
/// metadata `metadata[i]` (and its number `n`).
async fn tree_with(metadata: &[Value]) -> Arc<Tree> {
    let jsonl: Vec<String> = metadata
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut record = json!({
                "_id": format!("d{i}"),
                "title": format!("Note {i}"),
                "text": format!("{} Item {i} first.\n\nMore on item {i}: {}", TOPICS[i % 4], TOPICS[(i + 1) % 4]),
                "n": i,
            });
            if let (Some(r), Some(m)) = (record.as_object_mut(), m.as_object()) {
                r.extend(m.clone());
            }
            record.to_string()
        })
        .collect();
    crate::tests::tree_of(&jsonl.join("\n"), 5).await
}

/// The settings every strategy is tried with: levels with the lexical
/// entry, best-first with neighbours, and best-first with clusters and cards.
fn strategies() -> Vec<NavigatorConfig> {
    let best_first = |clusters: bool| {
        NavigatorConfig::default()
            .strategy(Walk::BestFirst)
            .shortlist(4)
            .returned_passages(6)
            .best_first(BestFirstConfig {
                judge_budget: 80,
                slate_size: 6,
                rounds: 3,
                clusters,
                cards: clusters,
                ..BestFirstConfig::default()
            })
    };
    vec![
        NavigatorConfig::default()
            .retention_budgets([2, 4])
            .lexical_entry(5)
            .shortlist(4)
            .returned_passages(6),
        best_first(false),
        best_first(true),
    ]
}

/// Whether a document node passes, read from the node itself.
fn passes(tree: &Tree, filter: &Filter, doc: NodeId) -> bool {
    let Some(NodeKind::Document { metadata, .. }) = tree.get(doc).map(|n| &n.kind) else {
        return false;
    };
    let parsed: Option<serde_json::Map<String, Value>> = metadata
        .as_deref()
        .and_then(|m| serde_json::from_str(m).ok());
    filter.matches(parsed.as_ref())
}

/// Whether any document at or under `id` passes.
fn reaches_a_passing_document(tree: &Tree, filter: &Filter, id: NodeId) -> bool {
    match tree.get(id).map(|n| &n.kind) {
        Some(NodeKind::Document { .. }) => passes(tree, filter, id),
        Some(NodeKind::Passage { .. }) => tree
            .get(id)
            .and_then(|n| n.parent)
            .is_some_and(|d| passes(tree, filter, d)),
        Some(_) => tree
            .children(id)
            .iter()
            .any(|c| reaches_a_passing_document(tree, filter, *c)),
        None => false,
    }
}

/// Runs `query` under `filter` in every strategy and checks that every
/// candidate shown and every passage returned is in the filter's scope.
/// Returns how many passages each strategy returned.
async fn check_scope(tree: &Arc<Tree>, filter: &Filter, query: &str) -> Vec<usize> {
    let mut returned = Vec::new();
    for config in strategies() {
        // Insulin passages score high, so their documents' neighbours and
        // clusters are opened: the routes a filter must also close.
        let decider = Arc::new(Scripted::new(|_, c, _| {
            let noise = (treenav_text::fingerprint(c.text.as_bytes()) % 100) as f64 / 1000.0;
            noise + if c.text.contains("Insulin") { 0.8 } else { 0.1 }
        }));
        let nav = Navigator::new(
            tree.clone(),
            decider.clone() as Arc<dyn Decide>,
            config.check().expect("config"),
        )
        .expect("navigator");
        let node_of: HashMap<String, NodeId> = (0..tree.len() as u32)
            .map(|i| (nav.candidate(NodeId(i)).id, NodeId(i)))
            .collect();
        let found = nav
            .retrieve_filtered(query, filter)
            .await
            .expect("retrieve");
        for id in decider.calls().iter().flatten() {
            let node = node_of.get(id).copied().expect("a known candidate");
            assert!(
                reaches_a_passing_document(tree, filter, node),
                "{} showed {id}, which {filter} keeps out",
                found.trace.strategy.name()
            );
        }
        for p in &found.passages {
            assert!(
                passes(tree, filter, p.path[p.path.len() - 2]),
                "{} returned {}, which {filter} keeps out",
                found.trace.strategy.name(),
                p.id
            );
            assert_eq!(
                p.metadata.get("n"),
                Some(&json!(p.document_id[1..].parse::<u64>().unwrap_or(0)))
            );
        }
        returned.push(found.passages.len());
    }
    returned
}

#[tokio::test]
async fn a_filter_keeping_out_the_best_match_and_its_neighbours_holds() {
    let tree = tree_with(&vec![json!({}); 60]).await;
    let index = tree.document_index().expect("index");
    let best = index.search_scored("insulin glucose", 1).expect("search")[0].0;
    assert!(tree.has_neighbours());
    let mut out: Vec<NodeId> = tree.neighbours(best).to_vec();
    out.push(best);
    let number = |d: &NodeId| match tree.get(*d).map(|n| &n.kind) {
        Some(NodeKind::Document { id, .. }) => id[1..].parse::<u64>().ok(),
        _ => None,
    };
    let out_numbers: Vec<u64> = out.iter().filter_map(number).collect();
    let keep: Vec<u64> = (0..60).filter(|n| !out_numbers.contains(n)).collect();
    let filter = Filter::from_json(&json!({"n": {"in": keep}})).expect("filter");
    let returned = check_scope(&tree, &filter, "insulin glucose").await;
    assert!(returned.iter().all(|n| *n > 0), "{returned:?}");

    // Unfiltered, the best match is returned (so the filter did the work).
    let nav = Navigator::new(
        tree.clone(),
        Arc::new(Scripted::new(|_, _, _| 0.5)) as Arc<dyn Decide>,
        strategies()[1].clone().check().expect("config"),
    )
    .expect("navigator");
    let found = nav.retrieve("insulin glucose").await.expect("retrieve");
    assert!(found.passages.iter().any(|p| p.path.contains(&best)));
}

#[tokio::test]
async fn a_filter_nothing_passes_gives_an_empty_result() {
    let tree = tree_with(&vec![json!({"tenant": "a"}); 60]).await;
    let filter = Filter::parse_clauses(&["tenant=b"]).expect("filter");
    assert_eq!(check_scope(&tree, &filter, "insulin").await, vec![0, 0, 0]);
}

/// #66 row 10: a field no document carries is an error naming it, with
/// the closest field the tree has, not an empty answer.
#[tokio::test]
async fn a_filter_on_a_field_no_document_has_is_an_error_with_a_hint() {
    let tree = tree_with(&vec![json!({"tenant": "a", "year": 2021}); 60]).await;
    let nav = Navigator::new(
        tree.clone(),
        Arc::new(Scripted::new(|_, _, _| 0.5)) as Arc<dyn Decide>,
        strategies()[1].clone().check().expect("config"),
    )
    .expect("navigator");
    for (clause, hint) in [
        ("yeer>=2020", "did you mean `year`?"),
        ("Year>=2020", "did you mean `year`?"),
        ("colour=red", "`tenant`, `year`"),
    ] {
        let filter = Filter::parse_clauses(&[clause]).expect("filter");
        let e = nav
            .retrieve_filtered("insulin", &filter)
            .await
            .expect_err(clause);
        assert!(matches!(e, crate::Error::Filter(_)), "{clause}: {e}");
        assert!(e.to_string().contains(hint), "{clause}: {e}");
    }
    let known = Filter::parse_clauses(&["year>=2020"]).expect("filter");
    assert!(nav.retrieve_filtered("insulin", &known).await.is_ok());
}

fn metadata_strategy() -> impl Strategy<Value = Vec<Value>> {
    let one = (0..3usize, 2000..2008i64, proptest::option::of(0..3usize)).prop_map(
        |(tenant, year, tag)| {
            let name = ["a", "b", "c"][tenant];
            let mut m = json!({"tenant": name, "year": year});
            if let (Some(t), Some(o)) = (tag, m.as_object_mut()) {
                let tags: [&[&str]; 3] = [&["x", "y"], &["y"], &["z"]];
                o.insert("tags".into(), json!(tags[t]));
            }
            m
        },
    );
    proptest::collection::vec(one, 60)
}

fn filter_strategy() -> impl Strategy<Value = Vec<String>> {
    let clause = prop_oneof![
        (0..4usize).prop_map(|t| format!("tenant={}", ["a", "b", "c", "d"][t])),
        (0..3usize).prop_map(|t| format!("tenant!={}", ["a", "b", "c"][t])),
        Just("tenant in [a, c]".to_string()),
        (1999..2009i64).prop_map(|y| format!("year>={y}")),
        (1999..2009i64).prop_map(|y| format!("year<{y}")),
        (0..3usize).prop_map(|t| format!("tags={}", ["x", "y", "z"][t])),
    ];
    proptest::collection::vec(clause, 1..3)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random metadata, random filters, every strategy: nothing outside
    /// the filter is judged or returned, and something is returned when
    /// a passage passes.
    #[test]
    fn filters_hold_in_every_strategy(metadata in metadata_strategy(), clauses in filter_strategy()) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        runtime.block_on(async {
            let tree = tree_with(&metadata).await;
            let filter = Filter::parse_clauses(&clauses).expect("filter");
            let any = tree.documents().any(|d| passes(&tree, &filter, d));
            let returned = check_scope(&tree, &filter, "insulin glucose goal").await;
            for n in returned {
                assert_eq!(n > 0, any, "{clauses:?}");
            }
        });
    }
}

/// Scopes are kept per filter: asking A, then B, then A again gives A's
/// answer twice and B's within B (no filter's scope stands in for another's).
#[tokio::test]
async fn a_kept_scope_answers_only_its_own_filter() {
    let metadata: Vec<Value> = (0..60)
        .map(|i| json!({"tenant": if i % 2 == 0 { "a" } else { "b" }}))
        .collect();
    let tree = tree_with(&metadata).await;
    let nav = Navigator::new(
        tree.clone(),
        Arc::new(Scripted::new(|_, _, _| 0.5)) as Arc<dyn Decide>,
        strategies()[1].clone().check().expect("config"),
    )
    .expect("navigator");
    let (a, b) = (
        Filter::parse_clauses(&["tenant=a"]).expect("a"),
        Filter::parse_clauses(&["tenant=b"]).expect("b"),
    );
    let ids = |found: &crate::Retrieval| -> Vec<String> {
        found.passages.iter().map(|p| p.id.clone()).collect()
    };
    let first = nav.retrieve_filtered("insulin goal", &a).await.expect("a");
    let other = nav.retrieve_filtered("insulin goal", &b).await.expect("b");
    let again = nav
        .retrieve_filtered("insulin goal", &a)
        .await
        .expect("a again");
    assert_eq!(ids(&first), ids(&again));
    assert!(!other.passages.is_empty());
    assert!(other.passages.iter().all(|p| p.metadata["tenant"] == "b"));
    assert!(first.passages.iter().all(|p| p.metadata["tenant"] == "a"));
}
