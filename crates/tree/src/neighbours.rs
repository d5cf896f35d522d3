//! Neighbour lists: for every document, its nearest documents in the build
//! embedding (cosine on L2-normalised rows), searched inside its leaf
//! cluster and that cluster's siblings (the other children of its parent).
//!
//! This is adjacency computed once at build time, like the tree itself: the
//! query side reads the lists and never embeds anything. The search pool of
//! a document is bounded by the branching limit squared, so the work is
//! O(N · b² · d) at most, in parallel over leaf clusters.

use ndarray::{Array2, Axis};
use rayon::prelude::*;

/// Default neighbours per document (GAR used 8–16).
pub const DEFAULT_NEIGHBOURS: usize = 16;

/// For each unit (row of `embeddings`), its `k` nearest other units among
/// the units of its leaf cluster and the leaf clusters sharing its parent,
/// nearest first (ties: lower index first).
///
/// `leaves[g]` lists the units of leaf cluster `g`; `parents` groups leaf
/// clusters under their parent (`None`: all leaves share the root).
pub fn nearest(
    embeddings: &Array2<f32>,
    leaves: &[Vec<usize>],
    parents: Option<&[Vec<usize>]>,
    k: usize,
) -> Vec<Vec<usize>> {
    let n = embeddings.nrows();
    let mut out = vec![Vec::new(); n];
    if k == 0 || n < 2 {
        return out;
    }
    let all: Vec<usize> = (0..leaves.len()).collect();
    let sibling_groups: Vec<&[usize]> = match parents {
        Some(p) => p.iter().map(Vec::as_slice).collect(),
        None => vec![all.as_slice()],
    };
    let mut jobs: Vec<(usize, Vec<usize>)> = Vec::new();
    for group in sibling_groups {
        let pool: Vec<usize> = group
            .iter()
            .filter_map(|g| leaves.get(*g))
            .flatten()
            .copied()
            .collect();
        for g in group {
            if leaves.get(*g).is_some() {
                jobs.push((*g, pool.clone()));
            }
        }
    }
    let lists: Vec<Vec<(usize, Vec<usize>)>> = jobs
        .par_iter()
        .map(|(g, pool)| {
            let members = &leaves[*g];
            let rows = embeddings.select(Axis(0), members);
            let cols = embeddings.select(Axis(0), pool);
            let sims = rows.dot(&cols.t());
            members
                .iter()
                .enumerate()
                .map(|(r, &u)| {
                    let mut scored: Vec<(f32, usize)> = pool
                        .iter()
                        .enumerate()
                        .filter(|(_, &v)| v != u)
                        .map(|(c, &v)| (sims[[r, c]], v))
                        .collect();
                    let cmp = |a: &(f32, usize), b: &(f32, usize)| {
                        b.0.total_cmp(&a.0).then(a.1.cmp(&b.1))
                    };
                    let keep = k.min(scored.len());
                    if keep > 0 && keep < scored.len() {
                        scored.select_nth_unstable_by(keep - 1, cmp);
                        scored.truncate(keep);
                    }
                    scored.sort_by(cmp);
                    // A fresh, exact-size list: collecting from `scored`
                    // in place would keep its pool-sized buffer (63 KB per
                    // document at 100,000 documents: 4.6 GB in all).
                    let mut list = Vec::with_capacity(scored.len());
                    list.extend(scored.iter().map(|(_, v)| *v));
                    (u, list)
                })
                .collect()
        })
        .collect();
    for (u, list) in lists.into_iter().flatten() {
        if let Some(slot) = out.get_mut(u) {
            *slot = list;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_within_siblings_only() {
        // Units 0,1 close together; 2 near 1; 3 far, in another parent group.
        let e = ndarray::arr2(&[[1.0f32, 0.0], [0.98, 0.199], [0.9, 0.436], [0.0, 1.0]]);
        let leaves = vec![vec![0, 1], vec![2], vec![3]];
        let parents = vec![vec![0, 1], vec![2]];
        let n = nearest(&e, &leaves, Some(&parents), 2);
        assert_eq!(n[0], vec![1, 2]);
        assert_eq!(n[2], vec![1, 0]);
        // Unit 3 is alone under its parent: no neighbour.
        assert!(n[3].is_empty());
        // Without parents every leaf is a sibling.
        let n = nearest(&e, &leaves, None, 1);
        assert_eq!(n[3], vec![2]);
        assert!(nearest(&e, &leaves, None, 0).iter().all(Vec::is_empty));
    }
}
