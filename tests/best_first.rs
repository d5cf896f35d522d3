//! Best-first navigation under a judgment budget: a small hand-made tree
//! whose answers are known (a document reachable only as a neighbour, one
//! only as a cluster sibling), the budget and the trace, determinism, old
//! tree files, and rounds whose slates run concurrently against a server
//! answering after 50 ms.

mod support;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use treenav::judge::{BackendOptions, DispatchOptions, Judge, JudgeOptions};
use treenav::navigator::{
    BestFirstConfig, Navigator, NavigatorConfig, Retrieval, Route, Strategy, TraceCandidate,
};
use treenav::tree::{file, Node, NodeId, NodeKind, Tree, TreeMeta};

const QUERY: &str = "quantum lattice entanglement";

/// The known-answer tree:
///
/// ```text
/// root ─ cluster A: d_match ("quantum lattice entanglement …"), d_sibling (no query word)
///      ─ cluster B: d_neighbour (no query word; d_match's neighbour)
///      ─ cluster C: six fillers, each with "quantum" once
/// ```
///
/// With a budget of 8 the lexical side reaches d_match and a few fillers;
/// d_neighbour can only come through the neighbour list, d_sibling only
/// through cluster A's evidence.
fn known_tree(neighbours: bool) -> (Tree, NodeId, NodeId, NodeId, NodeId) {
    let mut nodes = vec![Node {
        kind: NodeKind::Root,
        parent: None,
        children: Vec::new(),
    }];
    let push = |nodes: &mut Vec<Node>, kind: NodeKind, parent: usize| -> usize {
        let id = nodes.len();
        nodes.push(Node {
            kind,
            parent: Some(NodeId(parent as u32)),
            children: Vec::new(),
        });
        nodes[parent].children.push(NodeId(id as u32));
        id
    };
    let cluster = |name: &str| NodeKind::Cluster {
        summary: format!("cluster {name}"),
        terms: Vec::new(),
        documents: 1,
    };
    let doc = |id: &str, title: &str| NodeKind::Document {
        id: id.into(),
        title: title.into(),
        lead: String::new(),
        part: None,
        metadata: None,
    };
    let passage = |id: &str, text: &str| NodeKind::Passage {
        id: id.into(),
        text: text.into(),
    };
    let a = push(&mut nodes, cluster("A"), 0);
    let b = push(&mut nodes, cluster("B"), 0);
    let c = push(&mut nodes, cluster("C"), 0);
    let d_match = push(&mut nodes, doc("match", "Spin chains"), a);
    push(
        &mut nodes,
        passage(
            "match#0",
            "A quantum lattice entanglement experiment on spin chains.",
        ),
        d_match,
    );
    let d_sibling = push(&mut nodes, doc("sibling", "Cold atoms"), a);
    push(
        &mut nodes,
        passage("sibling#0", "Cold atoms trapped in optical potentials."),
        d_sibling,
    );
    let d_neighbour = push(&mut nodes, doc("neighbour", "Bell tests"), b);
    push(
        &mut nodes,
        passage("neighbour#0", "Bell inequality violations with photons."),
        d_neighbour,
    );
    let mut fillers = Vec::new();
    for i in 0..6 {
        let f = push(&mut nodes, doc(&format!("f{i}"), &format!("Filler {i}")), c);
        push(
            &mut nodes,
            passage(
                &format!("f{i}#0"),
                &format!("Quantum note number {i} about unrelated matters and more words."),
            ),
            f,
        );
        fillers.push(f);
    }
    let mut lists = Vec::new();
    if neighbours {
        lists = vec![Vec::new(); nodes.len()];
        lists[d_match] = vec![NodeId(d_neighbour as u32), NodeId(fillers[5] as u32)];
        lists[fillers[5]] = vec![NodeId(d_match as u32)];
        lists[d_neighbour] = vec![NodeId(d_match as u32)];
    }
    let meta = TreeMeta {
        source: "known".into(),
        embedder: "hand-made".into(),
        summarizer: "hand-made".into(),
        branching: 10,
        seed: 0,
        built_by: "test".into(),
        corpus: None,
    };
    let tree = Tree::with_neighbours(meta, nodes, lists).expect("valid tree");
    let id = |i: usize| NodeId(i as u32);
    (tree, id(d_match), id(d_sibling), id(d_neighbour), id(a))
}

fn lexical() -> Judge {
    Judge::new(&JudgeOptions::default()).expect("judge")
}

fn config(budget: usize, neighbours: bool, clusters: bool) -> NavigatorConfig {
    NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .shortlist(3)
        .returned_passages(10)
        .best_first(settings(budget, neighbours, clusters))
}

fn settings(budget: usize, neighbours: bool, clusters: bool) -> BestFirstConfig {
    BestFirstConfig {
        judge_budget: budget,
        slate_size: 4,
        rounds: 2,
        neighbours,
        clusters,
        // The budget as a hard cap: these tests watch the search itself.
        widen: false,
        ..BestFirstConfig::default()
    }
}

async fn run(tree: Tree, config: NavigatorConfig) -> Retrieval {
    let nav = Navigator::new(Arc::new(tree), lexical(), config.check().expect("config"))
        .expect("navigator");
    nav.retrieve(QUERY).await.expect("retrieve")
}

/// The document node of every judged candidate, with its route and via.
fn judged(found: &Retrieval, tree: &Tree) -> Vec<(NodeId, Route, Option<NodeId>)> {
    found
        .trace
        .rounds
        .iter()
        .flat_map(|r| r.candidates.iter())
        .filter(|c| c.route != Route::Reference)
        .map(|c| {
            let doc = tree.get(c.node).and_then(|n| n.parent).unwrap_or(c.node);
            (doc, c.route, c.via)
        })
        .collect()
}

#[tokio::test]
async fn a_neighbour_is_reached_through_the_neighbour_list() {
    let (tree, d_match, _, d_neighbour, _) = known_tree(true);
    let found = run(tree.clone(), config(8, true, false)).await;
    let seen = judged(&found, &tree);
    assert!(
        seen.contains(&(d_neighbour, Route::Neighbour, Some(d_match))),
        "{seen:?}"
    );
    assert!(found.trace.neighbourhoods);
    assert!(found.passages.iter().any(|p| p.document_id == "neighbour"));
    // Without the neighbour list the same budget never reaches it.
    let found = run(tree.clone(), config(8, false, false)).await;
    assert!(!judged(&found, &tree)
        .iter()
        .any(|(d, _, _)| *d == d_neighbour));
    assert!(!found.trace.neighbourhoods);
}

#[tokio::test]
async fn evidence_flows_up_to_the_cluster_and_down_to_its_members() {
    let (tree, d_match, d_sibling, _, cluster_a) = known_tree(false);
    let found = run(tree.clone(), config(8, true, true)).await;
    let seen = judged(&found, &tree);
    assert!(
        seen.contains(&(d_sibling, Route::Evidence, Some(cluster_a))),
        "{seen:?}"
    );
    // The cluster's probability in the path is its best member's score.
    let best = found
        .trace
        .rounds
        .iter()
        .flat_map(|r| r.candidates.iter())
        .filter(|c| tree.get(c.node).and_then(|n| n.parent) == Some(d_match))
        .map(|c| c.probability)
        .fold(0.0, f64::max);
    let sibling = found
        .passages
        .iter()
        .find(|p| p.document_id == "sibling")
        .expect("the sibling is returned");
    assert!((sibling.path_probabilities[0] - best).abs() < 1e-12);
    // Without the clusters the sibling is never judged.
    let found = run(tree.clone(), config(8, true, false)).await;
    assert!(!judged(&found, &tree)
        .iter()
        .any(|(d, _, _)| *d == d_sibling));
}

/// Every candidate of the trace, round after round.
fn traced(found: &Retrieval) -> impl Iterator<Item = &TraceCandidate> {
    found.trace.rounds.iter().flat_map(|r| r.candidates.iter())
}

/// The known tree with one more passage in d_match reading `text`.
fn with_second_passage(tree: &Tree, d_match: NodeId, text: &str) -> (Tree, NodeId) {
    let mut nodes = tree.nodes().expect("nodes").cloned().collect::<Vec<_>>();
    let mut lists: Vec<Vec<NodeId>> = (0..nodes.len())
        .map(|i| tree.neighbours(NodeId(i as u32)).to_vec())
        .collect();
    let id = NodeId(nodes.len() as u32);
    nodes.push(Node {
        kind: NodeKind::Passage {
            id: format!("match#{}", nodes[d_match.index()].children.len()),
            text: text.into(),
        },
        parent: Some(d_match),
        children: Vec::new(),
    });
    nodes[d_match.index()].children.push(id);
    lists.push(Vec::new());
    let tree = Tree::with_neighbours(tree.meta().clone(), nodes, lists).expect("valid tree");
    (tree, id)
}

#[tokio::test]
async fn a_judged_document_is_read_on_before_its_neighbours_are_tried() {
    let (tree, d_match, ..) = known_tree(true);
    // A second passage sharing no query word: the lexical route holds it
    // last, so only the graph frontier (as d_match's other passage)
    // reaches it within the budget.
    let (tree, second) = with_second_passage(
        &tree,
        d_match,
        "Measured correlations between distant spins.",
    );
    // The first candidate the graph frontier gives.
    let first_from_graph = |found: &Retrieval| {
        traced(found)
            .find(|c| {
                !matches!(
                    c.route,
                    Route::Lexical | Route::LexicalDocument | Route::Reference
                )
            })
            .map(|c| (c.node, c.route, c.via))
    };
    let at = |sibling_weight: f64| {
        config(8, true, false).best_first(BestFirstConfig {
            sibling_weight,
            ..settings(8, true, false)
        })
    };
    // β = γ: d_match's other passage ties with its nearest neighbour and
    // wins the tie on d_match's BM25 score.
    let found = run(tree.clone(), at(0.6)).await;
    assert_eq!(
        first_from_graph(&found),
        Some((second, Route::Evidence, Some(d_match))),
        "{:?}",
        judged(&found, &tree)
    );
    // β = 0: only the path score α · own = 0.5 · own, below the neighbour's
    // γ · own = 0.6 · own: the neighbour comes first.
    let found = run(tree.clone(), at(0.0)).await;
    let (node, route, via) = first_from_graph(&found).expect("the graph gave a candidate");
    assert_ne!(node, second);
    assert_eq!((route, via), (Route::Neighbour, Some(d_match)));
}

#[tokio::test]
async fn the_lexical_route_reads_passages_not_documents() {
    let (tree, d_match, ..) = known_tree(false);
    // d_match's second passage matches the query better than any filler's:
    // the lexical route offers it right after d_match's first, before the
    // fillers (one passage per document would have offered a filler).
    let (tree, second) = with_second_passage(
        &tree,
        d_match,
        "Quantum lattice entanglement measured again along the chain.",
    );
    let found = run(tree.clone(), config(8, false, false)).await;
    let lexical: Vec<NodeId> = traced(&found)
        .filter(|c| c.route == Route::Lexical)
        .map(|c| c.node)
        .collect();
    let first = tree.children(d_match)[0];
    assert!(lexical.len() >= 3, "{:?}", judged(&found, &tree));
    let mut top_two = lexical[..2].to_vec();
    top_two.sort();
    assert_eq!(top_two, vec![first, second]);
}

/// Round one of a search on the known tree where d_match has three
/// passages that all match the query better than any filler: the document
/// and the route of each candidate judged, and d_match.
async fn first_round_over_a_deep_document(adaptive: bool) -> (Vec<NodeId>, Vec<Route>, NodeId) {
    let (tree, d_match, ..) = known_tree(false);
    let (tree, _) = with_second_passage(&tree, d_match, "Quantum lattice entanglement again.");
    let (tree, _) = with_second_passage(&tree, d_match, "Quantum lattice entanglement once more.");
    // 11 judgments, 3 of them the shortlist's: two rounds of four.
    let config = config(11, false, false).best_first(BestFirstConfig {
        adaptive_split: adaptive,
        ..settings(11, false, false)
    });
    let found = run(tree.clone(), config).await;
    let round: Vec<&TraceCandidate> = found.trace.rounds[0]
        .candidates
        .iter()
        .filter(|c| c.route != Route::Reference)
        .collect();
    let docs = round
        .iter()
        .map(|c| tree.get(c.node).and_then(|n| n.parent).expect("a passage"))
        .collect();
    (docs, round.iter().map(|c| c.route).collect(), d_match)
}

#[tokio::test]
async fn the_lexical_list_also_reaches_new_documents_in_their_bm25_order() {
    // One for one (GAR's list): round one spends three of its four slots
    // on d_match, whose passages all outscore the fillers'.
    let (docs, routes, d_match) = first_round_over_a_deep_document(false).await;
    assert_eq!(docs.len(), 4, "{docs:?}");
    assert_eq!(
        docs.iter().filter(|d| **d == d_match).count(),
        3,
        "{docs:?}"
    );
    assert!(routes.iter().all(|r| *r == Route::Lexical), "{routes:?}");
    // The adaptive split shares the lexical slots with the document order
    // (each document's best passage, by the document's BM25): half the
    // round goes to documents the passage order had not reached yet.
    let (docs, routes, d_match) = first_round_over_a_deep_document(true).await;
    assert_eq!(docs.len(), 4, "{docs:?}");
    assert_eq!(
        docs.iter().filter(|d| **d == d_match).count(),
        2,
        "{docs:?}"
    );
    let by_document: Vec<NodeId> = docs
        .iter()
        .zip(&routes)
        .filter(|(_, r)| **r == Route::LexicalDocument)
        .map(|(d, _)| *d)
        .collect();
    assert_eq!(by_document.len(), 2, "{routes:?}");
    assert!(by_document.iter().all(|d| *d != d_match), "{docs:?}");
}

#[tokio::test]
async fn a_judged_document_offers_several_passages_a_round() {
    let (tree, d_match, ..) = known_tree(false);
    let (tree, second) =
        with_second_passage(&tree, d_match, "Measured correlations at a distance.");
    let (tree, third) = with_second_passage(&tree, d_match, "Spins held apart for hours.");
    // 10 judgments for two rounds: the first reads d_match's best passage
    // and four fillers, the second's graph slots go to both of d_match's
    // other passages (one a round would have left the second to the
    // lexical route's tail).
    let found = run(tree.clone(), config(13, false, false)).await;
    let second_round: Vec<(NodeId, Route, Option<NodeId>)> = found.trace.rounds[1]
        .candidates
        .iter()
        .filter(|c| c.route != Route::Reference)
        .map(|c| (c.node, c.route, c.via))
        .collect();
    for passage in [second, third] {
        assert!(
            second_round.contains(&(passage, Route::Evidence, Some(d_match))),
            "{second_round:?}"
        );
    }
}

#[tokio::test]
async fn the_budget_holds_and_the_trace_adds_up() {
    let (tree, ..) = known_tree(true);
    for budget in [4, 5, 8, 9, 13, 40] {
        for (neighbours, clusters) in [(true, true), (false, false), (true, false)] {
            let found = run(tree.clone(), config(budget, neighbours, clusters)).await;
            let t = &found.trace;
            assert_eq!(t.strategy, treenav::navigator::Strategy::BestFirst);
            assert_eq!(t.judge_budget, Some(budget));
            assert!(
                t.candidates_judged <= budget,
                "{} > {budget}",
                t.candidates_judged
            );
            let rounds: usize = t.rounds.iter().map(|r| r.candidates.len()).sum();
            let rerank = found
                .passages
                .iter()
                .filter(|p| p.rerank_probability.is_some())
                .count();
            assert_eq!(rounds + rerank, t.candidates_judged);
            // budget_left counts down by what each round showed.
            let mut left = budget - 3;
            for r in &t.rounds {
                left -= r.candidates.len();
                assert_eq!(r.budget_left, left);
                assert!(r.slates >= 1 && r.candidates.iter().all(|c| c.batch < r.slates));
            }
            // Every passage judged once (references aside).
            let mut nodes: Vec<NodeId> = t
                .rounds
                .iter()
                .flat_map(|r| r.candidates.iter())
                .filter(|c| c.route != Route::Reference)
                .map(|c| c.node)
                .collect();
            let n = nodes.len();
            nodes.sort();
            nodes.dedup();
            assert_eq!(nodes.len(), n);
            // Slates after the first show one calibration reference (the
            // lexical judge reads its context).
            let slates: usize = t.rounds.iter().map(|r| r.slates).sum();
            let references = t
                .rounds
                .iter()
                .flat_map(|r| r.candidates.iter())
                .filter(|c| c.route == Route::Reference)
                .count();
            assert_eq!(references, slates.saturating_sub(1));
        }
    }
}

#[tokio::test]
async fn top_outranks_a_budget_too_small_to_fill_it() {
    let (tree, ..) = known_tree(true);
    // By default `top` is k: a budget that judges too few widens.
    let widening = config(4, true, true)
        .returned_passages(6)
        .best_first(BestFirstConfig {
            judge_budget: 4,
            slate_size: 4,
            rounds: 2,
            ..BestFirstConfig::default()
        });
    let found = run(tree.clone(), widening).await;
    assert_eq!(found.passages.len(), 6);
    assert!(found.trace.candidates_judged > 4);
    assert!(!found.exhausted);
}

#[tokio::test]
async fn best_first_is_deterministic() {
    let (tree, ..) = known_tree(true);
    let a = run(tree.clone(), config(9, true, true)).await;
    let b = run(tree.clone(), config(9, true, true)).await;
    assert_eq!(a.passages, b.passages);
    let strip = |r: &Retrieval| {
        let mut t = r.trace.clone();
        t.latency_ms = 0.0;
        for round in &mut t.rounds {
            round.usage.latency_ms = 0.0;
            round.judge_ms = 0.0;
        }
        t.usage.latency_ms = 0.0;
        t.rerank = None;
        t
    };
    assert_eq!(strip(&a), strip(&b));
}

#[tokio::test]
async fn version_one_files_load_and_navigate_without_neighbourhoods() {
    let (tree, ..) = known_tree(true);
    let old = file::to_bytes_v1(&tree).expect("encode v1");
    assert_eq!(&old[8..12], &1u32.to_le_bytes());
    let loaded = file::from_bytes(&old, "old.tree".as_ref()).expect("v1 loads");
    assert!(!loaded.has_neighbours());
    assert_eq!(loaded, tree.clone().without_neighbours());
    let found = run(loaded, config(8, true, true)).await;
    assert!(!found.trace.neighbourhoods);
    assert!(!found.passages.is_empty());
    // Version 2 keeps the lists.
    let new = file::to_bytes(&tree).expect("encode v2");
    let again = file::from_bytes(&new, "new.tree".as_ref()).expect("v2 loads");
    assert!(again.has_neighbours());
    assert_eq!(again, tree);
}

#[test]
fn bad_neighbour_lists_are_refused() {
    let (tree, d_match, ..) = known_tree(true);
    let meta = tree.meta().clone();
    let nodes = tree.nodes().expect("nodes").cloned().collect::<Vec<_>>();
    let mut lists: Vec<Vec<NodeId>> = vec![Vec::new(); nodes.len()];
    lists[d_match.index()] = vec![d_match];
    assert!(Tree::with_neighbours(meta.clone(), nodes.clone(), lists).is_err());
    let mut lists: Vec<Vec<NodeId>> = vec![Vec::new(); nodes.len()];
    lists[d_match.index()] = vec![NodeId(0)];
    assert!(Tree::with_neighbours(meta.clone(), nodes.clone(), lists).is_err());
    assert!(Tree::with_neighbours(meta, nodes, vec![Vec::new(); 2]).is_err());
}

#[test]
fn best_first_settings_are_checked() {
    let bad = |c: BestFirstConfig| {
        NavigatorConfig::default()
            .strategy(Strategy::BestFirst)
            .best_first(c)
            .check()
            .is_err()
    };
    let d = BestFirstConfig::default;
    assert!(
        bad(BestFirstConfig {
            judge_budget: 5,
            ..d()
        }),
        "budget must exceed the shortlist"
    );
    assert!(bad(BestFirstConfig {
        slate_size: 1,
        ..d()
    }));
    assert!(bad(BestFirstConfig { rounds: 0, ..d() }));
    assert!(bad(BestFirstConfig {
        path_weight: f64::NAN,
        ..d()
    }));
    assert!(bad(BestFirstConfig {
        neighbour_weight: 1.5,
        ..d()
    }));
    assert!(bad(BestFirstConfig {
        sibling_weight: -0.1,
        ..d()
    }));
    assert!(!bad(d()));
    assert!("best-first".parse::<Strategy>().is_ok());
    assert!("beam".parse::<Strategy>().is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_run_their_slates_concurrently() {
    // A scripted server of our own (support::scripted_systemone): no real
    // decision-model server can be told to answer after exactly 50 ms.
    let (base, load) = support::scripted_systemone(Duration::from_millis(50)).await;
    let judge = Judge::new(&JudgeOptions {
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: base,
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        dispatch: DispatchOptions::default(),
    })
    .expect("judge");
    let tree = support::sample_tree().await;
    let config = NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .judge_budget(100)
        .check()
        .expect("config");
    let nav = Navigator::new(tree, judge, config).expect("navigator");
    let start = Instant::now();
    let found = nav
        .retrieve("Where did Tesla work after leaving Edison's company?")
        .await
        .expect("retrieve");
    let wall = start.elapsed();
    let t = &found.trace;
    assert!(t.candidates_judged <= 100);
    // Five rounds and the shortlist rerank: six waves of calls in sequence;
    // the slates of a round were in flight together.
    assert!(t.rounds.len() <= 5, "{} rounds", t.rounds.len());
    assert!(t.rounds.iter().any(|r| r.slates >= 2));
    let calls = load.requests.load(Ordering::SeqCst);
    assert_eq!(calls, t.usage.calls as usize);
    assert!(
        load.peak.load(Ordering::SeqCst) >= 2,
        "no two calls were ever in flight together"
    );
    eprintln!(
        "best-first at budget 100 against a server answering after 50 ms: {:.0} ms wall for {} rounds + the rerank ({} calls, at most {} in flight)",
        wall.as_secs_f64() * 1000.0,
        t.rounds.len(),
        calls,
        load.peak.load(Ordering::SeqCst)
    );
}
