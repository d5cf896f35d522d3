//! What the judge sees of a node, and the lexical entry index.

use std::collections::HashMap;
use treenav_corpus::chunk::first_sentences;
use treenav_text::bm25::Bm25Index;
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
        .and_then(|p| tree.get(*p))
        .map(|p| first_sentences(&p.label(), sentences))
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

/// A BM25 index over document nodes (title + all passages): an inverted
/// index, not a vector index, used for the lexical entry.
#[derive(Debug)]
pub(crate) struct LexicalIndex {
    index: Bm25Index,
    /// Index position → document node.
    nodes: Vec<NodeId>,
}

impl LexicalIndex {
    pub(crate) fn build(tree: &Tree) -> LexicalIndex {
        let (nodes, texts): (Vec<NodeId>, Vec<String>) = tree
            .documents()
            .filter_map(|id| {
                let node = tree.get(id)?;
                let NodeKind::Document { title, .. } = &node.kind else {
                    return None;
                };
                let mut text = title.clone();
                for p in &node.children {
                    if let Some(NodeKind::Passage { text: t, .. }) = tree.get(*p).map(|n| &n.kind) {
                        text.push('\n');
                        text.push_str(t);
                    }
                }
                Some((id, text))
            })
            .unzip();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        LexicalIndex {
            index: Bm25Index::new(&texts),
            nodes,
        }
    }

    /// The top `n` document nodes for a query, best first.
    pub(crate) fn search(&self, query: &str, n: usize) -> Vec<NodeId> {
        self.search_scored(query, n)
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }

    /// The top `n` document nodes for a query with their BM25 scores, best
    /// first (ties: the lower node id first, so results are deterministic:
    /// documents are indexed in node order).
    pub(crate) fn search_scored(&self, query: &str, n: usize) -> Vec<(NodeId, f64)> {
        self.index
            .search(query, n)
            .into_iter()
            .filter_map(|(i, score)| Some((*self.nodes.get(i as usize)?, f64::from(score))))
            .collect()
    }
}

/// All passage texts, for the lexical judge's corpus statistics.
pub(crate) fn passage_texts(tree: &Tree) -> Vec<&str> {
    tree.nodes()
        .iter()
        .filter_map(|n| match &n.kind {
            NodeKind::Passage { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// Node → the P(yes) that kept it, filled level by level.
pub(crate) type Probabilities = HashMap<NodeId, f64>;
