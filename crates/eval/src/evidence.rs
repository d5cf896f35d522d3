//! The tree system's explored passages with their evidence and gold
//! labels, as JSON lines: what `scripts/fit-fusion.py` fits the
//! exploration's fusion on (`treenav bench --evidence FILE`).
//!
//! One line per (query, judged passage):
//! `{"query": id, "passage": index, "relevant": bool, "judge", "lexical_document",
//! "graph", "lexical_passage", "bm25_share", "lexical_peak", "lexical_coverage",
//! "lexical_agreement"}`, relevance as the bench counts it
//! (for document-level gold, any passage of a gold document). In a cascade
//! (a judge after the exploration) each line also carries what both stages
//! said (`"explored", "reached", "judged"`, the query's form, `"question"`,
//! and whether the passages the judge read are sentence-sized, `"short"`,
//! [`treenav_navigator::fusion::Stages`]),
//! and a passage only the judge reached has a line of its own with zero
//! parts (`"reached": false`): what `fit-fusion.py --cascade` fits.

use crate::dataset::Query;
use crate::gold::Gold;
use crate::outcome::Outcome;
use crate::runs::write_atomically;
use crate::Result;
use serde::Serialize;
use std::path::Path;
use treenav_navigator::fusion::Evidence;

#[derive(Serialize)]
struct Line<'a> {
    query: &'a str,
    passage: usize,
    relevant: bool,
    #[serde(flatten)]
    evidence: &'a Evidence,
}

/// Writes every outcome's evidence with its labels to `path` (atomically).
pub(crate) fn write(
    path: &Path,
    queries: &[Query],
    golds: &[Gold],
    outcomes: &[Outcome],
) -> Result<()> {
    let mut text = String::new();
    for ((q, gold), outcome) in queries.iter().zip(golds).zip(outcomes) {
        let relevant = gold.passages();
        for (passage, evidence) in &outcome.evidence {
            let line = Line {
                query: &q.id,
                passage: *passage,
                relevant: relevant.contains(passage),
                evidence,
            };
            // Plain numbers and strings: serialising cannot fail.
            text.push_str(&serde_json::to_string(&line).unwrap_or_default());
            text.push('\n');
        }
    }
    write_atomically(path, text)
}
