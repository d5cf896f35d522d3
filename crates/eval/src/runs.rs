//! What `treenav bench --run-dir DIR` writes, for other evaluation tools
//! (trec_eval, ir_measures, ranx, pyserini) and paired tests:
//!
//! * `qrels.documents.txt`, `qrels.passages.txt`: the gold as TREC qrels
//!   (`qid 0 docid 1`), documents and passages (a BEIR set's passage gold is
//!   every passage of a gold document, as the bench scores it);
//! * per system (and `system@B` in the sweep) `FILE.documents.run` and
//!   `FILE.passages.run`, FILE being the system's name with `+` written
//!   `-` and `:W` written `-wW` (`tree+fused:4@50` → `tree-fused-w4@50`,
//!   names a shell or another OS takes as they are): TREC runs
//!   (`qid Q0 docid rank score NAME`), the
//!   document ranking being each document at its first passage's rank. The
//!   scores are rank-derived (`1 / rank`): the order is what the system
//!   returned, whichever score produced it;
//! * `FILE.metrics.jsonl`: one line per query, `{"query", "passage",
//!   "document"}` with that query's metrics.
//!
//! Every file is written to a temporary name and renamed.
//!
//! [`paired_p`] is the paired randomisation test the Markdown table reports.

use crate::baselines::Collection;
use crate::dataset::Query;
use crate::gold::{metrics, Gold};
use crate::metrics::Metrics;
use crate::outcome::Outcome;
use crate::{Error, Result};
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;

/// One query's metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct QueryMetrics {
    /// Passage level.
    pub passage: Metrics,
    /// Document level.
    pub document: Metrics,
}

/// Each query's metrics, in query order.
pub(crate) fn per_query(outcomes: &[Outcome], golds: &[Gold], c: &Collection) -> Vec<QueryMetrics> {
    outcomes
        .iter()
        .zip(golds)
        .map(|(o, g)| {
            let (passage, document) = metrics(&o.ranking, g, c);
            QueryMetrics { passage, document }
        })
        .collect()
}

/// Writes `text` to `path` through a temporary file and a rename.
pub(crate) fn write_atomically(path: &Path, text: impl AsRef<[u8]>) -> Result<()> {
    treenav_files::atomic::write(path, text.as_ref()).map_err(|source| Error::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// The qrels files (once per run directory).
pub(crate) fn write_qrels(
    dir: &Path,
    queries: &[Query],
    golds: &[Gold],
    c: &Collection,
) -> Result<()> {
    let (mut documents, mut passages) = (String::new(), String::new());
    for (q, g) in queries.iter().zip(golds) {
        for d in &g.documents {
            let _ = writeln!(documents, "{} 0 {} 1", q.id, c.documents[*d]);
        }
        let mut relevant: Vec<usize> = g.passage_unit.keys().copied().collect();
        relevant.sort_unstable();
        for p in relevant {
            let _ = writeln!(passages, "{} 0 {} 1", q.id, c.ids[p]);
        }
    }
    write_atomically(&dir.join("qrels.documents.txt"), &documents)?;
    write_atomically(&dir.join("qrels.passages.txt"), &passages)
}

/// One system's runs and per-query metrics, named `name`.
pub(crate) fn write_system(
    dir: &Path,
    name: &str,
    queries: &[Query],
    outcomes: &[Outcome],
    metrics: &[QueryMetrics],
    c: &Collection,
) -> Result<()> {
    let (mut documents, mut passages, mut lines) = (String::new(), String::new(), String::new());
    for ((q, o), m) in queries.iter().zip(outcomes).zip(metrics) {
        for (rank, p) in o.ranking.iter().enumerate() {
            let _ = writeln!(
                passages,
                "{} Q0 {} {} {:.6} {name}",
                q.id,
                c.ids[*p],
                rank + 1,
                1.0 / (rank + 1) as f64
            );
        }
        let mut seen = HashSet::new();
        let docs = o
            .ranking
            .iter()
            .map(|p| c.document_of[*p])
            .filter(|d| seen.insert(*d));
        for (rank, d) in docs.enumerate() {
            let _ = writeln!(
                documents,
                "{} Q0 {} {} {:.6} {name}",
                q.id,
                c.documents[d],
                rank + 1,
                1.0 / (rank + 1) as f64
            );
        }
        let line = serde_json::json!({"query": q.id, "passage": m.passage, "document": m.document});
        let _ = writeln!(lines, "{line}");
    }
    let file = file_name(name);
    write_atomically(&dir.join(format!("{file}.documents.run")), &documents)?;
    write_atomically(&dir.join(format!("{file}.passages.run")), &passages)?;
    write_atomically(&dir.join(format!("{file}.metrics.jsonl")), &lines)
}

/// A system's name as a file name: `+` as `-`, `:` as `-w`.
pub fn file_name(system: &str) -> String {
    system.replace('+', "-").replace(':', "-w")
}

/// Two-sided p-value of a paired randomisation test (Fisher; Smucker et
/// al. 2007) of the mean difference between `a` and `b` (per-query values
/// in the same query order): each round flips the sign of every
/// difference with probability ½. 10,000 rounds, a fixed seed. `None` for
/// lists of different lengths or no query.
pub fn paired_p(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.is_empty() {
        return None;
    }
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    let observed = diffs.iter().sum::<f64>().abs();
    let rounds = 10_000;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(0x0072_656e_6176);
    let mut extreme = 0usize;
    for _ in 0..rounds {
        let s: f64 = diffs
            .iter()
            .map(|d| if rng.gen::<bool>() { *d } else { -*d })
            .sum();
        if s.abs() >= observed - 1e-12 {
            extreme += 1;
        }
    }
    Some((extreme + 1) as f64 / (rounds + 1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_randomisation_test_tells_a_real_difference_from_noise() {
        let a: Vec<f64> = (0..60).map(|i| f64::from(i % 2 == 0)).collect();
        // Identical lists: nothing to tell apart.
        assert!(paired_p(&a, &a).expect("p") > 0.99);
        // b is a with every query 0.3 lower: clearly different.
        let b: Vec<f64> = a.iter().map(|x| x - 0.3).collect();
        assert!(paired_p(&a, &b).expect("p") < 0.001);
        // Differences that cancel out: no evidence.
        let c: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| if i % 4 < 2 { x + 0.2 } else { x - 0.2 })
            .collect();
        assert!(paired_p(&a, &c).expect("p") > 0.5);
        assert_eq!(paired_p(&a, &a[1..]), None);
        assert_eq!(paired_p(&[], &[]), None);
    }
}
