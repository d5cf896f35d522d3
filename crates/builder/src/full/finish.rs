//! The end of every build (single or merged from shards): label the
//! clusters of a cluster tree, summarise them and lay out the arena.

use super::units::{unit_doc, unit_title, Unit};
use crate::{Error, Progress, Result};
use rayon::prelude::*;
use std::borrow::Cow;
use treenav_cluster::Group;
use treenav_corpus::{chunk, Corpus};
use treenav_summary::{class_tfidf, count_terms, ClusterFacts, Summarizer, SUMMARY_TERMS};
use treenav_tree::NodeId;
use treenav_tree::{Node, NodeKind, Tree, TreeMeta};

/// A cluster in layout order: the index of its parent cluster (`None`:
/// the root) and its group.
type Cluster<'g> = (Option<usize>, &'g Group);

/// Labels the clusters of `root` (whose rows are units), summarises them
/// and lays out the tree. `near[u]` are unit `u`'s neighbour units.
/// Returns the tree and each unit's document node.
pub(crate) async fn finish(
    corpus: Corpus,
    units: Vec<Unit>,
    root: Group,
    near: Vec<Vec<usize>>,
    meta: TreeMeta,
    summarizer: &Summarizer,
    progress: &dyn Progress,
) -> Result<(Tree, Vec<NodeId>)> {
    check_cover(&root, units.len())?;
    let root = root.balanced();
    let (facts, terms, doc_counts) = super::blocking(|| {
        let clusters = clusters_in_layout_order(&root);
        labels(&corpus, &units, &clusters)
    });
    progress.stage("summarising", facts.len() as u64);
    let summaries = summarizer.summarize(facts, progress).await?;
    progress.stage("assembling", 1);
    let labels = Labels {
        summaries,
        terms,
        doc_counts,
    };
    let tree = tokio::task::spawn_blocking(move || {
        let clusters = clusters_in_layout_order(&root);
        assemble(corpus, &units, &clusters, labels, &near, meta)
    })
    .await??;
    progress.inc(1);
    Ok(tree)
}

/// Checks that the rows of `root` are the units `0..units`, each once,
/// and that no cluster is empty.
pub(crate) fn check_cover(root: &Group, units: usize) -> Result<()> {
    let mut seen = vec![false; units];
    let mut problem = None;
    for leaf in root.leaves() {
        if leaf.is_empty() {
            problem.get_or_insert_with(|| "an empty leaf cluster".to_string());
        }
        for &u in leaf {
            match seen.get_mut(u) {
                Some(s) if !*s => *s = true,
                Some(_) => {
                    problem.get_or_insert_with(|| format!("document {u} placed twice"));
                }
                None => {
                    problem.get_or_insert_with(|| {
                        format!("document {u} placed, but there are {units}")
                    });
                }
            }
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        problem.get_or_insert_with(|| format!("document {missing} placed nowhere"));
    }
    match problem {
        Some(p) => Err(Error::Cluster(format!(
            "the cluster tree is inconsistent: {p}"
        ))),
        None => Ok(()),
    }
}

/// The clusters of the tree breadth first, top down: the order they are
/// laid out in (a child comes after its parent).
fn clusters_in_layout_order(root: &Group) -> Vec<Cluster<'_>> {
    let mut out: Vec<Cluster<'_>> = match root {
        Group::Inner(children) => children.iter().map(|c| (None, c)).collect(),
        leaf @ Group::Leaf(_) => vec![(None, leaf)],
    };
    let mut i = 0;
    while i < out.len() {
        if let (_, Group::Inner(children)) = out[i] {
            out.extend(children.iter().map(|c| (Some(i), c)));
        }
        i += 1;
    }
    out
}

/// What labels each cluster, in layout order.
struct Labels {
    summaries: Vec<String>,
    terms: Vec<Vec<String>>,
    doc_counts: Vec<u32>,
}

/// For every cluster: what the summariser needs, its distinctive terms
/// (class TF-IDF among its siblings, the clusters a judge weighs it
/// against) and its document count.
fn labels(
    corpus: &Corpus,
    units: &[Unit],
    clusters: &[Cluster<'_>],
) -> (Vec<ClusterFacts>, Vec<Vec<String>>, Vec<u32>) {
    // Each unit's title and passages, counted piece by piece (no copy of
    // the corpus's text).
    let (counts, vocab) = count_terms(units.iter().map(|u| {
        let passages = unit_doc(corpus, u)
            .map(|d| &d.passages[u.passages.clone()])
            .unwrap_or_default();
        std::iter::once(Cow::Owned(unit_title(corpus, u)))
            .chain(passages.iter().map(|p| Cow::Borrowed(p.text.as_str())))
    }));
    let rows: Vec<Vec<usize>> = clusters.par_iter().map(|(_, g)| g.rows()).collect();
    // Siblings are contiguous in layout order.
    let mut families: Vec<std::ops::Range<usize>> = Vec::new();
    for c in 0..clusters.len() {
        match families.last_mut() {
            Some(f) if clusters[f.start].0 == clusters[c].0 => f.end = c + 1,
            _ => families.push(c..c + 1),
        }
    }
    let terms: Vec<Vec<String>> = families
        .par_iter()
        .flat_map_iter(|f| class_tfidf(&counts, &vocab, &rows[f.clone()], SUMMARY_TERMS))
        .collect();
    let title = |u: usize| units.get(u).map(|u| unit_title(corpus, u));
    let facts = clusters
        .iter()
        .zip(&rows)
        .zip(&terms)
        .map(|(((_, group), rows), terms)| {
            // Central titles: for a leaf its most central members; above,
            // the most central document of each child.
            let central: Vec<String> = match group {
                Group::Leaf(members) => members.iter().take(20).filter_map(|u| title(*u)).collect(),
                Group::Inner(children) => children
                    .iter()
                    .filter_map(Group::first_row)
                    .take(20)
                    .filter_map(title)
                    .collect(),
            };
            ClusterFacts {
                member_ids: rows
                    .iter()
                    .filter_map(|u| units.get(*u).and_then(|u| unit_doc(corpus, u)))
                    .map(|d| d.id.clone())
                    .collect(),
                central_titles: central,
                terms: terms.clone(),
            }
        })
        .collect();
    let doc_counts = rows.iter().map(|r| r.len() as u32).collect();
    (facts, terms, doc_counts)
}

/// The node arena being laid out.
struct Arena {
    nodes: Vec<Node>,
}

impl Arena {
    fn new() -> Arena {
        Arena {
            nodes: vec![Node {
                kind: NodeKind::Root,
                parent: None,
                children: Vec::new(),
            }],
        }
    }

    /// Adds a node under `parent` (listed last among its children).
    fn push(&mut self, kind: NodeKind, parent: NodeId) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Node {
            kind,
            parent: Some(parent),
            children: Vec::new(),
        });
        self.nodes[parent.index()].children.push(id);
        id
    }
}

/// Lays out the arena top-down: root, clusters breadth first, documents,
/// passages.
fn assemble(
    mut corpus: Corpus,
    units: &[Unit],
    clusters: &[Cluster<'_>],
    labels: Labels,
    near: &[Vec<usize>],
    meta: TreeMeta,
) -> Result<(Tree, Vec<NodeId>)> {
    if labels.summaries.len() != clusters.len() {
        return Err(Error::Cluster(format!(
            "{} summaries for {} clusters",
            labels.summaries.len(),
            clusters.len()
        )));
    }
    let mut arena = Arena::new();
    let ids = push_clusters(&mut arena, clusters, labels);
    let mut unit_nodes: Vec<(usize, NodeId)> = Vec::with_capacity(units.len());
    for ((_, group), id) in clusters.iter().zip(&ids) {
        if let Group::Leaf(rows) = group {
            for &u in rows {
                unit_nodes.push((u, arena.push(document_kind(&corpus, &units[u]), *id)));
            }
        }
    }
    let mut node_of_unit = vec![NodeId(0); units.len()];
    for (u, node) in &unit_nodes {
        node_of_unit[*u] = *node;
    }
    for (u, node) in unit_nodes {
        push_passages(&mut arena, &mut corpus, &units[u], node);
    }
    let neighbours = neighbour_lists(near, &node_of_unit, arena.nodes.len());
    let tree = Tree::with_neighbours(meta, arena.nodes, neighbours)?;
    Ok((tree, node_of_unit))
}

/// The cluster nodes, breadth first, each under its parent (the root for
/// the top level); their ids in `clusters`' order.
fn push_clusters(arena: &mut Arena, clusters: &[Cluster<'_>], labels: Labels) -> Vec<NodeId> {
    let mut ids: Vec<NodeId> = Vec::with_capacity(clusters.len());
    let parts = labels
        .summaries
        .into_iter()
        .zip(labels.terms)
        .zip(labels.doc_counts);
    for ((parent, _), ((summary, terms), documents)) in clusters.iter().zip(parts) {
        let parent = parent
            .and_then(|p| ids.get(p).copied())
            .unwrap_or(NodeId(0));
        let kind = NodeKind::Cluster {
            summary,
            terms,
            documents,
        };
        ids.push(arena.push(kind, parent));
    }
    ids
}

/// A unit's passages under its document node, moved out of the corpus (it
/// is consumed), not copied.
fn push_passages(arena: &mut Arena, corpus: &mut Corpus, unit: &Unit, node: NodeId) {
    let passages = &mut corpus.documents[unit.doc].passages;
    for p in unit.passages.clone() {
        let passage = std::mem::replace(
            &mut passages[p],
            treenav_corpus::Passage {
                id: String::new(),
                text: String::new(),
            },
        );
        let kind = NodeKind::Passage {
            id: passage.id,
            text: passage.text,
        };
        arena.push(kind, node);
    }
}

/// Each document node's near-duplicate neighbours (empty when no unit has
/// any: the tree then stores none).
fn neighbour_lists(near: &[Vec<usize>], node_of_unit: &[NodeId], nodes: usize) -> Vec<Vec<NodeId>> {
    if near.iter().all(|l| l.is_empty()) {
        return Vec::new();
    }
    let mut neighbours = vec![Vec::new(); nodes];
    for (u, list) in near.iter().enumerate() {
        let Some(node) = node_of_unit.get(u) else {
            continue;
        };
        neighbours[node.index()] = list
            .iter()
            .filter_map(|v| node_of_unit.get(*v).copied())
            .collect();
    }
    neighbours
}

/// The document node of a unit: its document's id, title, metadata and the
/// first sentence of the unit's first passage.
pub(crate) fn document_kind(corpus: &Corpus, unit: &Unit) -> NodeKind {
    let d = &corpus.documents[unit.doc];
    let lead = d
        .passages
        .get(unit.passages.start)
        .map(|p| chunk::first_sentences(&p.text, 1))
        .unwrap_or_default();
    NodeKind::Document {
        id: d.id.clone(),
        title: d.title.clone(),
        lead,
        part: unit.part,
        metadata: d.metadata.clone(),
    }
}
