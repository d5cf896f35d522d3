//! Growing the top-down tree: the root's split into top clusters, each top
//! cluster's subtree (independent of the others: in parallel here, or in
//! shards, see the `shard` module) and the join under the root.

use crate::{Progress, Result};
use ndarray::{Array2, ArrayView2, Axis};
use rayon::prelude::*;
use treenav_cluster::neighbours::{nearest, Lists};
use treenav_cluster::{
    child_seed, cluster_of, default_clusters, split_node, subtree, Group, Step, TopDown,
};

/// The root's split: the top clusters whose subtrees grow independently.
pub(crate) struct RootSplit {
    pub(crate) settings: TopDown,
    pub(crate) split: bool,
    /// (seed, members) of each top cluster.
    pub(crate) tops: Vec<(u64, Vec<usize>)>,
}

/// A grown subtree and the neighbour lists found inside it.
pub(crate) struct Grown {
    pub(crate) group: Group,
    pub(crate) near: Lists,
}

impl RootSplit {
    /// The first step of the top-down build over all rows of `points`.
    pub(crate) fn new(
        points: ArrayView2<'_, f32>,
        b: usize,
        sample: usize,
        seed: u64,
    ) -> RootSplit {
        let n = points.nrows();
        // Leaves as large as the flat construction's clusters on average:
        // N / max(√N, N/b).
        let settings = TopDown {
            branching: b,
            leaf: n.div_ceil(default_clusters(n, b).max(1)),
            sample,
            seed,
        }
        .clamped();
        let all: Vec<usize> = (0..n).collect();
        match split_node(points, all.clone(), settings, settings.seed) {
            Step::Split(groups) => RootSplit {
                settings,
                split: true,
                tops: groups
                    .into_iter()
                    .enumerate()
                    .map(|(i, g)| (child_seed(settings.seed, i), g))
                    .collect(),
            },
            // Nothing to split: the one "top cluster" is the whole corpus,
            // finished again by its shard.
            Step::Leaf(_) | Step::Runs(_) => RootSplit {
                settings,
                split: false,
                tops: vec![(settings.seed, all)],
            },
        }
    }

    /// Every top cluster's subtree, in parallel.
    pub(crate) fn grow_all(
        &self,
        points: ArrayView2<'_, f32>,
        neighbours: usize,
        progress: &dyn Progress,
    ) -> Vec<Grown> {
        let placed = |m: usize| progress.inc(m as u64);
        self.tops
            .par_iter()
            .map(|(seed, members)| {
                grow(
                    points,
                    members.clone(),
                    *seed,
                    self.settings,
                    neighbours,
                    &placed,
                )
            })
            .collect()
    }

    /// The whole tree from the grown top clusters, and every neighbour list.
    pub(crate) fn join(
        &self,
        points: ArrayView2<'_, f32>,
        grown: Vec<Grown>,
        neighbours: usize,
    ) -> Result<(Group, Lists)> {
        let mut near = Vec::new();
        let groups = grown
            .into_iter()
            .map(|g| {
                near.extend(g.near);
                g.group
            })
            .collect();
        let rows_of = |rows: &[usize]| Ok(points.select(Axis(0), rows));
        join(
            self.split,
            self.settings.branching,
            groups,
            near,
            neighbours,
            rows_of,
        )
    }
}

/// The subtree of one top cluster and its neighbour lists (for leaves
/// whose parent is inside it; leaves under the root are found at the join).
pub(crate) fn grow(
    points: ArrayView2<'_, f32>,
    members: Vec<usize>,
    seed: u64,
    settings: TopDown,
    neighbours: usize,
    placed: &(dyn Fn(usize) + Sync),
) -> Grown {
    let group = subtree(points, members, settings, seed, placed);
    let near = match &group {
        Group::Inner(_) => nearest(points, &group.families(), neighbours),
        Group::Leaf(_) => Vec::new(),
    };
    Grown { group, near }
}

/// The root over the top clusters' subtrees (in the plan's order), and
/// the neighbour lists: those found inside the subtrees (`near`), then
/// those of the leaves directly under the root, searched among each other
/// with the vectors `rows_of` gives. Where both name a document, the
/// root's list comes last and is the one kept.
pub(crate) fn join(
    split: bool,
    branching: usize,
    tops: Vec<Group>,
    mut near: Lists,
    neighbours: usize,
    rows_of: impl FnOnce(&[usize]) -> Result<Array2<f32>>,
) -> Result<(Group, Lists)> {
    let root = if split {
        cluster_of(tops, branching)
    } else {
        match tops.into_iter().next() {
            Some(leaf @ Group::Leaf(_)) => Group::Inner(vec![leaf]),
            Some(inner) => inner,
            None => Group::Inner(Vec::new()),
        }
    };
    near.extend(root_neighbours(&root, neighbours, rows_of)?);
    Ok((root, near))
}

/// Neighbour lists of the leaves directly under the root, searched among
/// each other; `rows_of` gives the vectors of ascending rows.
fn root_neighbours(
    root: &Group,
    neighbours: usize,
    rows_of: impl FnOnce(&[usize]) -> Result<Array2<f32>>,
) -> Result<Lists> {
    let family = root.leaf_children();
    if family.is_empty() || neighbours == 0 {
        return Ok(Vec::new());
    }
    let local = Local::new(family.iter().flat_map(|l| l.iter().copied()).collect());
    let points = rows_of(&local.rows)?;
    let local_family: Vec<Vec<usize>> = family.iter().map(|l| local.to_local(l)).collect();
    let slices: Vec<&[usize]> = local_family.iter().map(Vec::as_slice).collect();
    Ok(nearest(points.view(), &[slices], neighbours)
        .into_iter()
        .map(|(u, list)| (local.global(u), local.to_global(&list)))
        .collect())
}

/// A subset of rows renumbered 0.. in ascending order: the renumbering
/// keeps every comparison by row, so work on the subset's matrix gives the
/// same result as on the whole.
pub(crate) struct Local {
    pub(crate) rows: Vec<usize>,
}

impl Local {
    pub(crate) fn new(mut rows: Vec<usize>) -> Local {
        rows.sort_unstable();
        rows.dedup();
        Local { rows }
    }

    pub(crate) fn to_local(&self, rows: &[usize]) -> Vec<usize> {
        rows.iter()
            .map(|r| self.rows.binary_search(r).unwrap_or_else(|i| i))
            .collect()
    }

    /// The row numbered `r` here (`r` itself if out of range).
    pub(crate) fn global(&self, r: usize) -> usize {
        self.rows.get(r).copied().unwrap_or(r)
    }

    pub(crate) fn to_global(&self, rows: &[usize]) -> Vec<usize> {
        rows.iter()
            .filter_map(|r| self.rows.get(*r).copied())
            .collect()
    }
}
