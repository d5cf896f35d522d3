//! k-means (linfa, k-means++ init, seeded) and the partition step that keeps
//! every group within the branching limit.

use crate::{Error, Result};
use linfa::traits::{Fit, Predict};
use linfa::DatasetBase;
use linfa_clustering::{KMeans, KMeansInit};
use ndarray::{Array2, ArrayView2, Axis};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256Plus;
use rayon::prelude::*;

/// Lloyd iterations at most per k-means run.
const MAX_ITERATIONS: u64 = 30;

/// Runs k-means on the rows of `points`; returns each row's cluster.
///
/// `k` is clamped to the number of rows. Deterministic for a given seed.
pub fn kmeans(points: ArrayView2<'_, f32>, k: usize, seed: u64) -> Result<Vec<usize>> {
    let n = points.nrows();
    if n == 0 {
        return Ok(Vec::new());
    }
    let k = k.clamp(1, n);
    if k == 1 {
        return Ok(vec![0; n]);
    }
    if k == n {
        return Ok((0..n).collect());
    }
    let data = DatasetBase::from(points.to_owned());
    let mut rng = Xoshiro256Plus::seed_from_u64(seed);
    let init = kmeans_plus_plus(points, k, &mut rng);
    let model = KMeans::params_with_rng(k, rng)
        .init_method(KMeansInit::Precomputed(init))
        .n_runs(1)
        .max_n_iterations(MAX_ITERATIONS)
        .tolerance(1e-4)
        .fit(&data)
        .map_err(|e| Error::Cluster(e.to_string()))?;
    let labels = model.predict(&data);
    Ok(labels.to_vec())
}

/// k-means++ seeding (Arthur & Vassilvitskii, 2007) with each point's
/// distance to its nearest chosen centre kept up to date incrementally:
/// O(n·k·d) in all. linfa's own k-means++ recomputes the distances to every
/// centre at each step, O(n·k²·d), which took over ten minutes for k = 1,000
/// on 100,000 points; its Lloyd iterations are used as they are.
pub fn kmeans_plus_plus(points: ArrayView2<'_, f32>, k: usize, rng: &mut impl Rng) -> Array2<f32> {
    let n = points.nrows();
    let mut centroids = Array2::<f32>::zeros((k, points.ncols()));
    if n == 0 || k == 0 {
        return centroids;
    }
    let first = rng.gen_range(0..n);
    centroids.row_mut(0).assign(&points.row(first));
    let c0 = centroids.row(0).to_owned();
    let mut nearest: Vec<f32> = (0..n)
        .into_par_iter()
        .map(|i| sq_dist(points.row(i), c0.view()))
        .collect();
    for c in 1..k {
        let total: f64 = nearest.iter().map(|&x| f64::from(x)).sum();
        let pick = if total > 0.0 {
            let mut target = rng.gen::<f64>() * total;
            let mut chosen = n - 1;
            for (i, &d) in nearest.iter().enumerate() {
                target -= f64::from(d);
                if target <= 0.0 {
                    chosen = i;
                    break;
                }
            }
            chosen
        } else {
            rng.gen_range(0..n)
        };
        centroids.row_mut(c).assign(&points.row(pick));
        let centre = centroids.row(c);
        nearest.par_iter_mut().enumerate().for_each(|(i, m)| {
            let d = sq_dist(points.row(i), centre);
            if d < *m {
                *m = d;
            }
        });
    }
    centroids
}

/// The mean of the given rows.
pub fn centroid(points: ArrayView2<'_, f32>, members: &[usize]) -> ndarray::Array1<f32> {
    let mut c = ndarray::Array1::<f32>::zeros(points.ncols());
    for &m in members {
        c += &points.row(m);
    }
    if !members.is_empty() {
        c /= members.len() as f32;
    }
    c
}

fn sq_dist(a: ndarray::ArrayView1<'_, f32>, b: ndarray::ArrayView1<'_, f32>) -> f32 {
    a.iter().zip(b.iter()).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Sorts members by distance to their centroid, most central first (ties by index).
fn sort_by_centrality(points: ArrayView2<'_, f32>, members: &mut [usize]) {
    let c = centroid(points, members);
    let mut keyed: Vec<(f32, usize)> = members
        .iter()
        .map(|&m| (sq_dist(points.row(m), c.view()), m))
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (slot, (_, m)) in members.iter_mut().zip(keyed) {
        *slot = m;
    }
}

/// Partitions the rows of `points` into about `k` groups by k-means, splitting
/// any group larger than `branching` again until all fit. Groups are non-empty,
/// ordered by their smallest member, and list their members most central first.
pub fn partition(
    points: ArrayView2<'_, f32>,
    k: usize,
    branching: usize,
    seed: u64,
) -> Result<Vec<Vec<usize>>> {
    let all: Vec<usize> = (0..points.nrows()).collect();
    let mut out = Vec::new();
    split(points, all, k, branching.max(1), seed, &mut out)?;
    for g in &mut out {
        sort_by_centrality(points, g);
    }
    out.sort_by_key(|g| g.iter().copied().min().unwrap_or(usize::MAX));
    Ok(out)
}

fn split(
    points: ArrayView2<'_, f32>,
    members: Vec<usize>,
    k: usize,
    branching: usize,
    seed: u64,
    out: &mut Vec<Vec<usize>>,
) -> Result<()> {
    if members.is_empty() {
        return Ok(());
    }
    let sub = points.select(Axis(0), &members);
    let labels = kmeans(sub.view(), k, seed)?;
    let k_used = labels.iter().copied().max().map_or(0, |m| m + 1);
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); k_used];
    for (i, label) in labels.into_iter().enumerate() {
        groups[label].push(members[i]);
    }
    groups.retain(|g| !g.is_empty());
    let degenerate = groups.len() == 1 && groups[0].len() > branching;
    if degenerate {
        // k-means could not separate these points (e.g. identical vectors):
        // cut them into even runs, most central first.
        let mut g = groups.pop().unwrap_or_default();
        sort_by_centrality(points, &mut g);
        let parts = g.len().div_ceil(branching);
        let size = g.len().div_ceil(parts);
        out.extend(g.chunks(size).map(<[usize]>::to_vec));
        return Ok(());
    }
    for (i, g) in groups.into_iter().enumerate() {
        if g.len() > branching {
            let sub_k = g.len().div_ceil(branching).max(2);
            split(
                points,
                g,
                sub_k,
                branching,
                seed.wrapping_add(1 + i as u64),
                out,
            )?;
        } else {
            out.push(g);
        }
    }
    Ok(())
}

/// Rows of the centroids of `groups`, one per group, L2-normalised.
pub fn group_centroids(points: ArrayView2<'_, f32>, groups: &[Vec<usize>]) -> Array2<f32> {
    let mut out = Array2::<f32>::zeros((groups.len(), points.ncols()));
    for (i, g) in groups.iter().enumerate() {
        let mut c = centroid(points, g);
        let norm = c.dot(&c).sqrt();
        if norm > 0.0 {
            c /= norm;
        }
        out.row_mut(i).assign(&c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_two_blobs() -> Result<()> {
        let mut pts = Array2::<f32>::zeros((20, 2));
        for i in 0..20 {
            let base = if i < 10 { 0.0 } else { 10.0 };
            pts[[i, 0]] = base + (i % 10) as f32 * 0.01;
            pts[[i, 1]] = base;
        }
        let groups = partition(pts.view(), 2, 100, 3)?;
        assert_eq!(groups.len(), 2);
        let mut sorted: Vec<Vec<usize>> = groups
            .iter()
            .map(|g| {
                let mut g = g.clone();
                g.sort();
                g
            })
            .collect();
        sorted.sort();
        assert_eq!(sorted[0], (0..10).collect::<Vec<_>>());
        assert_eq!(sorted[1], (10..20).collect::<Vec<_>>());
        Ok(())
    }

    #[test]
    fn identical_points_still_respect_branching() -> Result<()> {
        let pts = Array2::<f32>::zeros((25, 4));
        let groups = partition(pts.view(), 1, 10, 0)?;
        assert!(groups.iter().all(|g| g.len() <= 10 && !g.is_empty()));
        assert_eq!(groups.iter().map(Vec::len).sum::<usize>(), 25);
        Ok(())
    }
}
