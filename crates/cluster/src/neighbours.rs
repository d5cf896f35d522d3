//! Neighbour lists: for every document, its nearest documents in the build
//! embedding (cosine on L2-normalised rows), searched inside its leaf
//! cluster and the other leaf clusters under the same parent.
//!
//! This is adjacency computed once at build time, like the tree itself: the
//! query side reads the lists and never embeds anything. The search pool of
//! a document is bounded by the branching limit squared, so the work is
//! O(N · b² · d) at most, in parallel over leaf clusters.

use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;

/// Default neighbours per document (GAR used 8–16).
pub const DEFAULT_NEIGHBOURS: usize = 16;

/// Neighbour lists: each unit with its nearest units, nearest first.
pub type Lists = Vec<(usize, Vec<usize>)>;

/// For each unit of each family (the leaf clusters sharing a parent:
/// [`crate::Group::families`]), its `k` nearest other units
/// among the units of the family, nearest first (ties: lower index first).
/// Units are rows of `embeddings`; the result pairs each unit with its list.
pub fn nearest(embeddings: ArrayView2<'_, f32>, families: &[Vec<&[usize]>], k: usize) -> Lists {
    if k == 0 {
        return Vec::new();
    }
    families
        .par_iter()
        .flat_map_iter(|family| {
            let pool: Vec<usize> = family.iter().flat_map(|l| l.iter().copied()).collect();
            let cols = embeddings.select(Axis(0), &pool);
            let lists: Vec<Vec<(usize, Vec<usize>)>> = family
                .par_iter()
                .map(|members| nearest_in_pool(embeddings, members, &pool, &cols, k))
                .collect();
            lists.into_iter().flatten()
        })
        .collect()
}

/// Each member's `k` nearest units of `pool` (whose rows are `cols`).
fn nearest_in_pool(
    embeddings: ArrayView2<'_, f32>,
    members: &[usize],
    pool: &[usize],
    cols: &Array2<f32>,
    k: usize,
) -> Vec<(usize, Vec<usize>)> {
    let rows = embeddings.select(Axis(0), members);
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
            let cmp = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
            let keep = k.min(scored.len());
            if keep > 0 && keep < scored.len() {
                scored.select_nth_unstable_by(keep - 1, cmp);
                scored.truncate(keep);
            }
            scored.sort_by(cmp);
            // A fresh, exact-size list: collecting from `scored` in place
            // would keep its pool-sized buffer (63 KB per document at
            // 100,000 documents: 4.6 GB in all).
            let mut list = Vec::with_capacity(scored.len());
            list.extend(scored.iter().map(|(_, v)| *v));
            (u, list)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_within_siblings_only() {
        // Units 0,1 close together; 2 near 1; 3 far, in another family.
        let e = ndarray::arr2(&[[1.0f32, 0.0], [0.98, 0.199], [0.9, 0.436], [0.0, 1.0]]);
        let (a, b, c): (&[usize], &[usize], &[usize]) = (&[0, 1], &[2], &[3]);
        let lists = |families: &[Vec<&[usize]>], k| {
            let mut out = vec![Vec::new(); 4];
            for (u, list) in nearest(e.view(), families, k) {
                out[u] = list;
            }
            out
        };
        let n = lists(&[vec![a, b], vec![c]], 2);
        assert_eq!(n[0], vec![1, 2]);
        assert_eq!(n[2], vec![1, 0]);
        // Unit 3 is alone in its family: no neighbour.
        assert!(n[3].is_empty());
        // All in one family.
        let n = lists(&[vec![a, b, c]], 1);
        assert_eq!(n[3], vec![2]);
        assert!(nearest(e.view(), &[vec![a, b, c]], 0).is_empty());
    }
}
