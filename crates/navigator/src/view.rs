//! What the judge sees of a node.

use std::collections::HashMap;
use treenav_corpus::chunk::first_sentences;
use treenav_tree::{NodeId, NodeKind, Tree};

/// A cluster's card: its summary, then up to `titles` member titles, most central first.
pub(crate) fn card(tree: &Tree, id: NodeId, titles: usize) -> String {
    let Some(node) = tree.get(id) else {
        return String::new();
    };
    let summary = node.label();
    let mut names = Vec::new();
    // Breadth-first over the cluster's children in centrality order, so an
    // upper-level card shows the most central document of each central child.
    let mut queue: std::collections::VecDeque<NodeId> = node.children.iter().copied().collect();
    while let Some(n) = queue.pop_front() {
        if names.len() >= titles {
            break;
        }
        match tree.get(n).map(|x| &x.kind) {
            Some(NodeKind::Document { title, .. }) if !title.is_empty() => {
                names.push(title.clone())
            }
            Some(NodeKind::Cluster { .. }) => {
                if let Some(first) = tree.children(n).first() {
                    queue.push_back(*first);
                }
            }
            _ => {}
        }
    }
    if names.is_empty() {
        summary
    } else {
        format!("{summary} | Titles: {}", names.join("; "))
    }
}

/// A document's view: its title and its first `sentences` sentences.
pub(crate) fn document(tree: &Tree, id: NodeId, sentences: usize) -> String {
    let Some(node) = tree.get(id) else {
        return String::new();
    };
    if sentences <= 1 {
        return node.label();
    }
    let NodeKind::Document { title, part, .. } = &node.kind else {
        return node.label();
    };
    let lead = node
        .children
        .first()
        .map(|p| match tree.passage_text(*p) {
            Ok(text) => first_sentences(&text, sentences),
            Err(e) => {
                tracing::error!(error = %e, "cannot read a document's first passage");
                String::new()
            }
        })
        .unwrap_or_default();
    let title = match part {
        Some((i, n)) => format!("{title} (part {i} of {n})"),
        None => title.clone(),
    };
    if title.is_empty() {
        lead
    } else {
        format!("{title}: {lead}")
    }
}

/// A passage as the judge sees it: its document's title, then its text (a
/// passage alone often lacks the subject its document's title names).
pub(crate) fn passage(tree: &Tree, id: NodeId, text: &str) -> String {
    let title = tree
        .get(id)
        .and_then(|n| n.parent)
        .and_then(|p| tree.get(p))
        .and_then(|d| match &d.kind {
            NodeKind::Document { title, .. } => Some(title.as_str()),
            _ => None,
        })
        .unwrap_or("");
    if title.is_empty() {
        text.to_string()
    } else {
        format!("{title}: {text}")
    }
}

/// Node → the P(yes) that kept it, filled level by level.
pub(crate) type Probabilities = HashMap<NodeId, f64>;
