//! How far a tree's clusters have drifted from a fresh build's after
//! updates: the spread of leaf sizes, and the share of documents whose
//! nearest leaf centroid (among their leaf and its siblings, where the
//! build chose) is not their own leaf's.

use serde::Serialize;
use treenav_tree::vectors::UnitVectors;
use treenav_tree::NodeId;
use treenav_tree::{NodeKind, Tree};

/// Documents checked at most for the misplaced share (evenly spread).
const SAMPLE: usize = 20_000;

/// Drift of a tree's clusters.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    /// Leaf clusters.
    pub leaves: usize,
    /// Fewest documents in a leaf.
    pub smallest: usize,
    /// Most documents in a leaf.
    pub largest: usize,
    /// Mean documents per leaf.
    pub mean: f64,
    /// Standard deviation of the leaf sizes over their mean.
    pub spread: f64,
    /// Share of the documents checked whose nearest sibling-leaf centroid
    /// is not their own leaf's (`None`: the tree has no vectors kept).
    pub misplaced: Option<f64>,
    /// Documents checked for it.
    pub checked: usize,
}

/// The leaves of a tree (clusters, or the root, whose children are documents).
fn leaves(tree: &Tree) -> Vec<NodeId> {
    (0..tree.len() as u32)
        .map(NodeId)
        .filter(|id| !tree.is_removed(*id))
        .filter(|id| {
            let node = tree.get(*id);
            let documents = node
                .and_then(|n| n.children.first())
                .and_then(|c| tree.get(*c))
                .is_some_and(|c| matches!(c.kind, NodeKind::Document { .. }));
            documents && node.is_some_and(|n| !matches!(n.kind, NodeKind::Document { .. }))
        })
        .collect()
}

fn centroid(vectors: &UnitVectors, docs: &[NodeId]) -> Vec<f32> {
    let mut sum = vec![0f32; vectors.dims()];
    for d in docs {
        vectors.add_to(*d, &mut sum);
    }
    let n = sum
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::MIN_POSITIVE);
    sum.iter().map(|x| x / n).collect()
}

/// The drift of `tree` (with `vectors`, when kept, for the misplaced share).
pub fn drift(tree: &Tree, vectors: Option<&UnitVectors>) -> Drift {
    let leaves = leaves(tree);
    let sizes: Vec<usize> = leaves.iter().map(|l| tree.children(*l).len()).collect();
    let mean = sizes.iter().sum::<usize>() as f64 / sizes.len().max(1) as f64;
    let var = sizes
        .iter()
        .map(|s| (*s as f64 - mean).powi(2))
        .sum::<f64>()
        / sizes.len().max(1) as f64;
    let mut out = Drift {
        leaves: leaves.len(),
        smallest: sizes.iter().copied().min().unwrap_or(0),
        largest: sizes.iter().copied().max().unwrap_or(0),
        mean,
        spread: if mean > 0.0 { var.sqrt() / mean } else { 0.0 },
        misplaced: None,
        checked: 0,
    };
    let Some(vectors) = vectors else { return out };
    let centres: std::collections::HashMap<NodeId, Vec<f32>> = leaves
        .iter()
        .map(|l| (*l, centroid(vectors, tree.children(*l))))
        .collect();
    let documents: Vec<NodeId> = tree.documents().collect();
    let step = documents.len().div_ceil(SAMPLE).max(1);
    let (mut checked, mut misplaced) = (0usize, 0usize);
    for d in documents.iter().step_by(step) {
        let Some(leaf) = tree.get(*d).and_then(|n| n.parent) else {
            continue;
        };
        let family: Vec<NodeId> = match tree.get(leaf).and_then(|n| n.parent) {
            Some(p) => tree.children(p).to_vec(),
            None => vec![leaf],
        };
        let Some(v) = vectors.get(*d) else { continue };
        let dot = |c: &Vec<f32>| c.iter().zip(&v).map(|(a, b)| a * b).sum::<f32>();
        let best = family
            .iter()
            .filter_map(|l| Some((dot(centres.get(l)?), *l)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        checked += 1;
        misplaced += usize::from(best.is_some_and(|(_, l)| l != leaf));
    }
    out.checked = checked;
    out.misplaced = Some(misplaced as f64 / checked.max(1) as f64);
    out
}
