//! Fresh labels for the clusters an update touched: a leaf's distinctive
//! terms by class TF-IDF among the leaves of its family, over its
//! documents' titles and leads (the build also reads their passages; an
//! update reads what the tree holds in memory), and the extractive line
//! from those terms and its most central titles. A cluster above the
//! leaves takes its children's terms. Clusters an update did not touch
//! keep their labels, whatever summariser the build used.

use std::collections::BTreeSet;
use treenav_summary::{class_tfidf, count_terms, extractive_line, ClusterFacts, SUMMARY_TERMS};
use treenav_tree::NodeId;
use treenav_tree::{Node, NodeKind};

/// A leaf's new label: its id, distinctive terms and central titles.
type Label = (NodeId, Vec<String>, Vec<String>);

fn title_and_lead(node: &Node) -> (String, String) {
    match &node.kind {
        NodeKind::Document { title, lead, .. } => (title.clone(), lead.clone()),
        _ => (String::new(), String::new()),
    }
}

fn is_doc(nodes: &[Node], id: NodeId) -> bool {
    matches!(nodes[id.index()].kind, NodeKind::Document { .. })
}

/// Relabels the clusters of `touched` that are still in the tree; returns
/// the ids relabelled.
pub(crate) fn refresh(nodes: &mut [Node], touched: &BTreeSet<u32>) -> Vec<u32> {
    let mut done = Vec::new();
    // Leaves first, by family, then the clusters above them.
    let mut families: BTreeSet<u32> = BTreeSet::new();
    let mut upper = Vec::new();
    for &t in touched {
        let id = NodeId(t);
        let node = &nodes[id.index()];
        if node.parent.is_none() || !matches!(node.kind, NodeKind::Cluster { .. }) {
            continue;
        }
        match node.children.first() {
            Some(c) if !is_doc(nodes, *c) => upper.push(id),
            _ => {
                families.insert(node.parent.map_or(0, |p| p.0));
            }
        }
    }
    // Each family's new labels, computed in parallel, then set.
    let computed: Vec<Vec<Label>> = {
        use rayon::prelude::*;
        let nodes: &[Node] = nodes;
        let families: Vec<u32> = families.into_iter().collect();
        families
            .par_iter()
            .map(|parent| family_labels(nodes, *parent, touched))
            .collect()
    };
    for (leaf, terms, central) in computed.into_iter().flatten() {
        set_label(nodes, leaf, terms, central);
        done.push(leaf.0);
    }
    for id in upper {
        let children = nodes[id.index()].children.clone();
        let mut terms: Vec<String> = Vec::new();
        let mut central = Vec::new();
        for c in &children {
            if let NodeKind::Cluster { terms: t, .. } = &nodes[c.index()].kind {
                for term in t.iter().take(2) {
                    if !terms.contains(term) {
                        terms.push(term.clone());
                    }
                }
            }
            if let Some(d) = first_document(nodes, *c) {
                central.push(title_and_lead(&nodes[d.index()]).0);
            }
        }
        terms.truncate(SUMMARY_TERMS);
        set_label(nodes, id, terms, central);
        done.push(id.0);
    }
    done
}

/// New labels (leaf, terms, central titles) for the touched leaves among
/// the children of `parent`.
fn family_labels(nodes: &[Node], parent: u32, touched: &BTreeSet<u32>) -> Vec<Label> {
    let leaves: Vec<NodeId> = nodes[parent as usize]
        .children
        .iter()
        .copied()
        .filter(|l| matches!(nodes[l.index()].kind, NodeKind::Cluster { .. }))
        .collect();
    let members: Vec<&[NodeId]> = leaves
        .iter()
        .map(|l| nodes[l.index()].children.as_slice())
        .collect();
    let docs: Vec<NodeId> = members.iter().flat_map(|m| m.iter()).copied().collect();
    let (counts, vocab) = count_terms(docs.iter().map(|d| {
        let (t, l) = title_and_lead(&nodes[d.index()]);
        [t, l]
    }));
    let mut at = 0;
    let groups: Vec<Vec<usize>> = members
        .iter()
        .map(|m| {
            let g = (at..at + m.len()).collect();
            at += m.len();
            g
        })
        .collect();
    let terms = class_tfidf(&counts, &vocab, &groups, SUMMARY_TERMS);
    leaves
        .iter()
        .zip(&members)
        .zip(terms)
        .filter(|((leaf, _), _)| touched.contains(&leaf.0))
        .map(|((leaf, m), terms)| {
            let central = m
                .iter()
                .take(20)
                .map(|d| title_and_lead(&nodes[d.index()]).0)
                .collect();
            (*leaf, terms, central)
        })
        .collect()
}

/// The first document beneath a node, going down first children.
fn first_document(nodes: &[Node], mut id: NodeId) -> Option<NodeId> {
    for _ in 0..64 {
        if is_doc(nodes, id) {
            return Some(id);
        }
        id = *nodes[id.index()].children.first()?;
    }
    None
}

fn set_label(nodes: &mut [Node], id: NodeId, terms: Vec<String>, central: Vec<String>) {
    let facts = ClusterFacts {
        member_ids: Vec::new(),
        central_titles: central,
        terms,
    };
    let line = extractive_line(&facts);
    if let NodeKind::Cluster { summary, terms, .. } = &mut nodes[id.index()].kind {
        *summary = line;
        *terms = facts.terms;
    }
}
