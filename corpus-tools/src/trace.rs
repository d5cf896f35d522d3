//! `treenav query --trace`: how the answer was found, in words. Each
//! candidate a judge was shown comes with the score the answer uses and,
//! beside it, what made that score (the embedding's P, how far BM25 and
//! the judged neighbours moved it, or the judge's P), and how the search
//! reached it, the node that brought it named by its title.

use std::collections::HashMap;
use treenav::navigator::fusion::{Evidence, FittedFusion};
use treenav::navigator::{Retrieval, RoundTrace, TraceCandidate};
use treenav::tree::{NodeId, NodeKind, Tree};

/// What the lines below a round mean, said once.
const LEGEND: &str = "each candidate (kept: in the answer): the score the answer uses ← what made it (the embedding's P, then how many logits BM25's rank and the judged neighbours moved it: the fitted fusion, docs/calibration.md; or a judge's P), then how the search reached it";

/// The rounds (best-first) or levels (levels) of a retrieval, explained.
/// `fitted`: the tree's fitted fusion, when it has one.
pub fn explain(o: &mut String, found: &Retrieval, tree: &Tree, fitted: Option<FittedFusion>) {
    let t = &found.trace;
    if t.strategy == treenav::navigator::Strategy::BestFirst && !t.neighbourhoods {
        out!(
            o,
            "\nneighbourhoods off (the tree has no neighbour lists, or --no-neighbours)"
        );
    }
    if !t.rounds.is_empty() {
        out!(o, "\n{LEGEND}");
    }
    let scores = Scores::new(found, tree, fitted);
    for round in &t.rounds {
        out!(
            o,
            "\nround {}: {} shown in {} slates, {} judgments left ({})",
            round.round,
            round.candidates.len(),
            round.slates,
            round.budget_left,
            stage_words(round)
        );
        for c in &round.candidates {
            out!(o, "{}", scores.line(c, round.stage));
        }
    }
    levels(o, found);
}

fn stage_words(round: &RoundTrace) -> &'static str {
    match round.stage {
        "explore" => "the embedding judge explores",
        "judge" => "the judge",
        _ => "judged",
    }
}

/// What a line needs beyond its candidate.
struct Scores<'a> {
    /// The answer's score of each returned passage.
    answer: HashMap<NodeId, f64>,
    /// The exploration's evidence of each passage it judged (kept with
    /// `--trace`).
    evidence: HashMap<NodeId, &'a Evidence>,
    fitted: Option<FittedFusion>,
    /// For a route's `via`: the node that brought a candidate.
    tree: &'a Tree,
}

impl<'a> Scores<'a> {
    fn new(found: &'a Retrieval, tree: &'a Tree, fitted: Option<FittedFusion>) -> Scores<'a> {
        Scores {
            answer: found.passages.iter().map(|p| (p.node, p.score)).collect(),
            evidence: found.evidence.iter().map(|(id, e)| (*id, e)).collect(),
            fitted,
            tree,
        }
    }

    /// One candidate: kept or not, the answer's score ← its parts, the
    /// route in words, the label.
    fn line(&self, c: &TraceCandidate, stage: &str) -> String {
        let kept = if c.kept { "kept" } else { "    " };
        let made = self.made_of(c, stage);
        let via = c
            .via
            .map(|v| format!(" {}", named(self.tree, v)))
            .unwrap_or_default();
        let fallback = if c.fallback {
            " (lexical fallback)"
        } else {
            ""
        };
        let label = treenav::tree::text::one_line(&c.label, 100);
        format!(
            "  {kept} {made} | {}{via}{fallback} | {label}",
            c.route.words()
        )
    }

    /// `0.617 ← embedding 0.062, BM25 +3.2, neighbours +0.0`, or the
    /// judge's P alone where no fitted fusion made the score.
    fn made_of(&self, c: &TraceCandidate, stage: &str) -> String {
        let evidence = self.evidence.get(&c.node);
        match (self.fitted, evidence, stage) {
            (Some(model), Some(e), "explore") => {
                let parts = model.parts(e);
                let score = self
                    .answer
                    .get(&c.node)
                    .copied()
                    .unwrap_or_else(|| model.probability(e));
                format!(
                    "{score:.3} ← embedding {:.3}, BM25 {}, neighbours {}",
                    c.probability,
                    logits(parts.bm25()),
                    logits(parts.graph)
                )
            }
            _ => {
                let who = if stage == "explore" {
                    "embedding"
                } else {
                    "judge"
                };
                match self.answer.get(&c.node) {
                    Some(score) => format!("{score:.3} ← {who} {:.3}", c.probability),
                    None => format!("{who} {:.3}", c.probability),
                }
            }
        }
    }
}

/// A node as a reader knows it: a document's title (a passage's
/// document's), a cluster's summary, cut.
fn named(tree: &Tree, id: NodeId) -> String {
    let node = tree.get(id);
    let document = match node.map(|n| &n.kind) {
        Some(NodeKind::Passage { .. }) => node.and_then(|n| n.parent).and_then(|p| tree.get(p)),
        _ => node,
    };
    match document.map(|n| &n.kind) {
        Some(NodeKind::Document { title, .. }) => {
            format!("“{}”", treenav::tree::text::one_line(title, 60))
        }
        Some(NodeKind::Cluster { summary, .. }) => {
            format!(
                "the cluster “{}”",
                treenav::tree::text::one_line(summary, 40)
            )
        }
        _ => format!("node {}", id.0),
    }
}

/// Logits to one decimal with their sign, `+0.0` for what rounds to zero.
fn logits(x: f64) -> String {
    let tenths = (x * 10.0).round();
    if tenths == 0.0 {
        "+0.0".to_string()
    } else {
        format!("{:+.1}", tenths / 10.0)
    }
}

/// The levels walk's levels (`--strategy levels`).
fn levels(o: &mut String, found: &Retrieval) {
    for level in &found.trace.levels {
        let references: usize = level.calls.iter().map(|c| c.references).sum();
        out!(
            o,
            "\nlevel {} ({}): {} shown in {} calls ({} calibration references), kept {} (budget {})",
            level.depth,
            level.kind,
            level.candidates.len(),
            level.batches,
            references,
            level.kept,
            level.budget
        );
        let mut shown: Vec<_> = level.candidates.iter().collect();
        shown.sort_by(|a, b| b.probability.total_cmp(&a.probability));
        for c in shown.iter().take(level.kept.max(3)) {
            out!(
                o,
                "  {} judge {:.3} | {}{} | {}",
                if c.kept { "kept" } else { "    " },
                c.probability,
                c.route.words(),
                if c.fallback {
                    " (lexical fallback)"
                } else {
                    ""
                },
                treenav::tree::text::one_line(&c.label, 140)
            );
        }
    }
}
