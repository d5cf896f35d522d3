//! The final order: the judge's score fused with what the search already
//! knows about each judged passage's document, without another judgment.
//!
//! A document's *evidence* is in [0, 1], the mean of two parts:
//!
//! * **lexical**: `1 / (1 + rank / 5)` for its rank (from 0) in BM25 over
//!   the tree's documents, 0 when it matches no query term — scale-free, so
//!   one weight means the same on every corpus;
//! * **graph**: the best judged P(yes) of another document that lists it
//!   among its nearest neighbours, or that it lists (the tree's stored
//!   lists), decayed by the neighbour's place as the frontier's neighbour
//!   prior is: `P · (1 − ½ · i / k)`. A document close to documents the
//!   judge found relevant is more likely relevant itself (the cluster
//!   hypothesis that GAR and LATTICE rely on).
//!
//! The fused score is `σ(logit(P) + w · (evidence − mean))`, the mean taken
//! over the judged list: still a probability on the judge's scale (the
//! evidence moves passages against one another, not the whole list up), in
//! the same order as the final list, equal to the judge's P at `w = 0`. It
//! mostly breaks near-ties among passages the judge scored alike; a judge's
//! confident answer outweighs any evidence for `w` below its logit gap.
//!
//! On a tree whose embedder has a fitted model ([`fitted_for`]), the
//! exploration's final order and score are instead that model's
//! P(relevant) over the same parts and the passage's BM25 share
//! ([`Evidence`], [`FittedFusion`]): weights fitted on labelled training
//! queries, not chosen by hand, and not centred (the fit calibrates it).
//! Its lexical parts count in proportion to how sharply BM25 singles out
//! its best passages for the query ([`Evidence::lexical_peak`]) and to how
//! many judged passages it matched at all ([`Evidence::lexical_coverage`]):
//! a flat BM25 list (many passages sharing the same few words with the
//! query) and a sparse one (one incidental shared stem in a small folder of
//! notes) are where BM25 fails, and the judge then decides nearly alone.
//!
//! [`fused_scores`] is the one implementation: best-first applies it to the
//! passages it judged, and the bench to `rerank`'s judged list, so a gain is
//! attributed to navigation or to fusion honestly.

use crate::query_form::Form;
use serde::Serialize;
use std::collections::HashMap;
use treenav_judge::probability::{logit, sigmoid};
use treenav_judge::{fitted, BackendKind};
use treenav_tree::lexical::DocumentIndex;
use treenav_tree::{LevelKind, NodeId, Tree};

/// The lexical part's rank scale: the document at rank 5 gets ½.
const RANK_SCALE: f64 = 5.0;
/// How many judged passages matching a query term give BM25 its full say
/// ([`Evidence::lexical_coverage`]): as many as the peak reads.
const COVERAGE_FULL: f64 = 10.0;

/// Each document's rank (from 0) in BM25 over the tree's documents for
/// `query` (documents that match no term are absent). Fails only when a
/// stored lexical index cannot be read.
pub fn lexical_ranks(
    index: &DocumentIndex,
    query: &str,
) -> treenav_tree::Result<HashMap<NodeId, usize>> {
    Ok(index
        .search_scored(query, index.len())?
        .into_iter()
        .enumerate()
        .map(|(rank, (doc, _))| (doc, rank))
        .collect())
}

/// Fused scores (see the module docs) of judged passages, in their order:
/// `judged` holds each passage node with its judge P(yes), `lexical` the
/// documents' BM25 ranks ([`lexical_ranks`]). `weight` 0 gives the judge's
/// scores back unchanged.
pub fn fused_scores(
    tree: &Tree,
    lexical: &HashMap<NodeId, usize>,
    judged: &[(NodeId, f64)],
    weight: f64,
) -> Vec<f64> {
    fused_with_passages(tree, lexical, None, judged, weight)
}

/// [`fused_scores`] with a third part of the evidence when `passages`
/// holds the judged passages' own BM25 scores: `1 / (1 + rank / 5)` for a
/// passage's rank among the judged by that score (0 when it matches no
/// query term). Which passage of a document answers is what word overlap
/// tells best (SQuAD), and the document's rank cannot.
pub fn fused_with_passages(
    tree: &Tree,
    lexical: &HashMap<NodeId, usize>,
    passages: Option<&HashMap<NodeId, f64>>,
    judged: &[(NodeId, f64)],
    weight: f64,
) -> Vec<f64> {
    if weight == 0.0 || judged.is_empty() {
        return judged.iter().map(|(_, p)| *p).collect();
    }
    let evidence: Vec<f64> = evidence(tree, lexical, passages, judged)
        .iter()
        .map(|e| e.mean(passages.is_some()))
        .collect();
    // Centred on the list's mean: the evidence moves passages against one
    // another, never the whole list up (so `score` stays the judge's scale).
    // Summed in sorted order: the same list in any order gives the same bits.
    let mut sorted = evidence.clone();
    sorted.sort_by(f64::total_cmp);
    let mean = sorted.iter().sum::<f64>() / sorted.len() as f64;
    judged
        .iter()
        .zip(evidence)
        .map(|((_, score), e)| sigmoid(logit(*score) + weight * (e - mean)))
        .collect()
}

/// What the search knows of one judged passage: the judge's logit and the
/// parts of the evidence (see the module docs), each in [0, 1].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// `logit(P)` of the judge's P(yes).
    pub judge: f64,
    /// `1 / (1 + rank / 5)` for its document's BM25 rank, 0 unmatched.
    pub lexical_document: f64,
    /// Its document's support by judged neighbours.
    pub graph: f64,
    /// `1 / (1 + rank / 5)` for its own BM25 rank among the judged, 0
    /// unmatched or when the passages' scores are not known.
    pub lexical_passage: f64,
    /// Its own BM25 score over the best among the judged (0 as above).
    pub bm25_share: f64,
    /// Of the query, the same for every passage: how sharply BM25 singles
    /// out its best judged passages, `1 − s₁₀ / s₁` for the best and the
    /// tenth best judged passage's BM25 score; 1 when fewer than ten match
    /// a query term or the passages' scores are not known. Where it is
    /// low, BM25's list is flat and its order says little (on SciFact and
    /// SQuAD it tells the queries whose BM25 top 10 holds no gold with an
    /// AUC of 0.74–0.89).
    pub lexical_peak: f64,
    /// Of the query: how many judged passages match a query term, over
    /// ten, at most 1 (1 when the passages' scores are not known). The peak
    /// is 1 when fewer than ten match, however few: a single incidental
    /// match (a note's "allows" for a question's "allowance") would
    /// otherwise get BM25's full weight. Held out, the gate π · coverage ·
    /// agreement lost least on its worst collection (docs/calibration.md).
    pub lexical_coverage: f64,
    /// Of the query: how high the judge ranks BM25's best judged passage,
    /// `2 · σ(z − z_max)` for its judge logit z against the best one (1
    /// when the judge ranks it first, towards 0 the lower; 0 when BM25
    /// matched no judged passage, 1 when the passages' scores are not
    /// known). Where the two disagree, BM25 is usually the one that is
    /// wrong (a folder of notes, questions reworded away from their words).
    pub lexical_agreement: f64,
    /// In a cascade: what both stages said of it.
    #[serde(flatten)]
    pub stages: Option<Stages>,
}

impl Evidence {
    /// The mean of the parts the centred fusion weighs.
    fn mean(&self, with_passages: bool) -> f64 {
        match with_passages {
            true => (self.lexical_document + self.graph + self.lexical_passage) / 3.0,
            false => (self.lexical_document + self.graph) / 2.0,
        }
    }
}

/// The evidence of each judged passage, in their order (`passages`: the
/// judged passages' own BM25 scores, when known).
pub fn evidence(
    tree: &Tree,
    lexical: &HashMap<NodeId, usize>,
    passages: Option<&HashMap<NodeId, f64>>,
    judged: &[(NodeId, f64)],
) -> Vec<Evidence> {
    let doc_of = |p: NodeId| tree.parent(p).unwrap_or(p);
    let mut best: HashMap<NodeId, f64> = HashMap::new();
    for (p, score) in judged {
        let slot = best.entry(doc_of(*p)).or_insert(0.0);
        *slot = slot.max(*score);
    }
    let graph = graph_support(tree, &best);
    let matched = passages.map(|scores| by_score(scores, judged));
    let passage_part = matched.as_deref().map(passage_ranks);
    let top = matched
        .as_deref()
        .and_then(<[_]>::first)
        .map_or(0.0, |(_, s)| *s);
    let lexical_peak = matched.as_deref().map_or(1.0, peak);
    let lexical_coverage = matched
        .as_deref()
        .map_or(1.0, |m| (m.len() as f64 / COVERAGE_FULL).min(1.0));
    let lexical_agreement = matched.as_deref().map_or(1.0, |m| agreement(m, judged));
    judged
        .iter()
        .map(|(p, score)| {
            let doc = doc_of(*p);
            let own = passages.and_then(|s| s.get(p).copied()).unwrap_or(0.0);
            Evidence {
                judge: logit(*score),
                lexical_document: lexical
                    .get(&doc)
                    .map_or(0.0, |r| 1.0 / (1.0 + *r as f64 / RANK_SCALE)),
                graph: graph.get(&doc).copied().unwrap_or(0.0),
                lexical_passage: passage_part
                    .as_ref()
                    .and_then(|part| part.get(p).copied())
                    .unwrap_or(0.0),
                bm25_share: if top > 0.0 { own / top } else { 0.0 },
                lexical_peak,
                lexical_coverage,
                lexical_agreement,
                stages: None,
            }
        })
        .collect()
}

/// [`Evidence::lexical_agreement`] of the judged passages that match a
/// query term (`matched`, best BM25 score first) among all judged.
fn agreement(matched: &[(NodeId, f64)], judged: &[(NodeId, f64)]) -> f64 {
    let Some((top, _)) = matched.first() else {
        return 0.0;
    };
    let best = judged
        .iter()
        .map(|(_, p)| logit(*p))
        .fold(f64::NEG_INFINITY, f64::max);
    judged
        .iter()
        .find(|(p, _)| p == top)
        .map_or(0.0, |(_, p)| 2.0 * sigmoid(logit(*p) - best))
}

/// [`Evidence::lexical_peak`] of the judged passages that match a query
/// term, best BM25 score first ([`by_score`]).
fn peak(matched: &[(NodeId, f64)]) -> f64 {
    /// The rank (from 0) whose score is set against the best's.
    const TENTH: usize = 9;
    match (matched.first(), matched.get(TENTH)) {
        (Some((_, best)), Some((_, tenth))) => 1.0 - tenth / best,
        _ => 1.0,
    }
}

/// A logistic model over a passage's [`Evidence`], fitted on labelled
/// training queries (`scripts/fit-fusion.py`, docs/calibration.md): the
/// final order and P(relevant) in one, `σ(bias + judge · J + graph · G +
/// peak · g + g · (Σ weight · lexical part))`, g the query's lexical gate
/// π · c · a ([`Evidence::lexical_peak`], [`Evidence::lexical_coverage`],
/// [`Evidence::lexical_agreement`]): the lexical parts weigh as much as
/// BM25's list stands out, among enough matches, where the judge does not
/// contradict its best. Its weights are [`fitted::Fusion`], shipped with
/// every other fitted model in `crates/judge/src/fitted.json`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FittedFusion(pub fitted::Fusion);

impl FittedFusion {
    /// P(relevant) of a passage with this evidence.
    pub fn probability(&self, e: &Evidence) -> f64 {
        sigmoid(self.parts(e).logit())
    }

    /// What each part of the evidence adds to the passage's logit (what
    /// `--trace` shows beside the score).
    pub fn parts(&self, e: &Evidence) -> FusionParts {
        let w = &self.0;
        let lexical = w.lexical_document * e.lexical_document
            + w.lexical_passage * e.lexical_passage
            + w.bm25_share * e.bm25_share;
        let gate = e.lexical_peak * e.lexical_coverage * e.lexical_agreement;
        FusionParts {
            bias: w.bias,
            judge: w.judge * e.judge,
            graph: w.graph * e.graph,
            gate: w.lexical_peak * gate,
            lexical: gate * lexical,
        }
    }
}

/// A passage's logit under the [`FittedFusion`], part by part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FusionParts {
    /// The intercept.
    pub bias: f64,
    /// The judge's (the embedding's) logit, weighed.
    pub judge: f64,
    /// The judged neighbours' support, weighed.
    pub graph: f64,
    /// The lexical gate's own weight times the gate.
    pub gate: f64,
    /// BM25's parts, weighed, times the gate.
    pub lexical: f64,
}

impl FusionParts {
    /// The logit: the sum of the parts.
    pub fn logit(&self) -> f64 {
        self.bias + self.judge + self.graph + self.gate + self.lexical
    }

    /// What BM25 added, in logits: its parts and the gate's own weight.
    pub fn bm25(&self) -> f64 {
        self.gate + self.lexical
    }
}

/// The exploration's fitted fusion for a tree's embedder (its recorded
/// description), if one was fitted ([`fitted::fusion`]; others keep the
/// centred fusion).
pub fn fitted_for(embedder: &str) -> Option<FittedFusion> {
    fitted::Embedder::of(embedder)
        .and_then(fitted::fusion)
        .map(FittedFusion)
}

/// What the two stages of a cascade said of one passage: the fitted
/// cascade's evidence ([`FittedCascade`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Stages {
    /// `logit(P)` of the exploration's final score (its fused P); for a
    /// passage the exploration did not judge, the lowest it gave (the
    /// exploration did not reach it).
    pub explored: f64,
    /// Whether the exploration judged it.
    pub reached: bool,
    /// `logit(P)` of the judge's P(yes), when the judge judged it.
    pub judged: Option<f64>,
    /// Of the query: its form and its passages' size.
    #[serde(flatten)]
    pub form: Form,
}

/// The cascade's order over both stages, fitted on labelled training
/// queries (`scripts/fit-fusion.py --cascade`): `bias + explored · zₑ +
/// (judged + judged_gap · g + judged_question · q + judged_short · s) · zⱼ
/// + gap · g` for a passage the judge judged, `g` the query's
/// [`judge_gap`] (the judge counts more where it singles out its best
/// passage), `q` 1 for a question ([`Form::question`]: the judge counts
/// more where the query has the form it learned from) and `s` 1 where the
/// passages it read are sentence-sized ([`Form::short`]: a reader of the
/// pair tells sentences apart better than one vector each). The model only
/// orders the judged passages among the places the exploration gave them
/// ([`FittedCascade::order`]): nothing the judge did not read moves, and
/// every score stays the exploration's calibrated P. Its weights are
/// [`fitted::Cascade`] (`crates/judge/src/fitted.json`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FittedCascade(pub fitted::Cascade);

impl FittedCascade {
    /// The model's logit for a judged passage (`None` for the others) in a
    /// query whose judge gap is `gap`.
    fn logit(&self, s: &Stages, gap: f64) -> Option<f64> {
        let (w, z) = (&self.0, s.judged?);
        Some(w.bias + w.explored * s.explored + self.say(gap, s.form) * z + w.gap * gap)
    }

    /// How much one logit of the judge counts against one of the
    /// exploration's in a query with these stages (its gap and form).
    pub fn judge_weight(&self, stages: &[(NodeId, Stages)]) -> f64 {
        let form = stages.first().map(|(_, s)| s.form).unwrap_or_default();
        self.per_explored(self.say(judge_gap(stages), form))
    }

    /// How much one logit of the judge counts against one of the
    /// exploration's before it has judged (its gap unknown, so 0) in a
    /// query of this form: how far the exploration's lead must reach
    /// before the judge could not overturn it (the skip's scale).
    pub fn judge_say(&self, form: Form) -> f64 {
        self.per_explored(self.say(0.0, form))
    }

    /// A weight of the judge's logit against the exploration's (infinite
    /// when the exploration's logit does not count).
    fn per_explored(&self, say: f64) -> f64 {
        match self.0.explored > 0.0 {
            true => say / self.0.explored,
            false => f64::INFINITY,
        }
    }

    /// The judge's logit's weight in a query with this gap and form.
    fn say(&self, gap: f64, form: Form) -> f64 {
        let w = &self.0;
        let question = if form.question {
            w.judged_question
        } else {
            0.0
        };
        let short = if form.short { w.judged_short } else { 0.0 };
        w.judged + w.judged_gap * gap + question + short
    }

    /// The final scores of one query's passages: every passage keeps the
    /// exploration's P, except that the judged ones trade places among
    /// themselves in the model's order, each taking the exploration's P of
    /// the place it lands in.
    pub fn order(&self, stages: &[(NodeId, Stages)]) -> Vec<(NodeId, f64)> {
        let gap = judge_gap(stages);
        // Each judged passage: its id, the model's logit, the place's logit.
        let mut judged: Vec<(NodeId, f64, f64)> = stages
            .iter()
            .filter_map(|(id, s)| Some((*id, self.logit(s, gap)?, s.explored)))
            .collect();
        let mut slots: Vec<f64> = judged.iter().map(|j| j.2).collect();
        slots.sort_by(|a, b| b.total_cmp(a));
        judged.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let placed: HashMap<NodeId, f64> = judged
            .iter()
            .zip(&slots)
            .map(|((id, _, _), z)| (*id, sigmoid(*z)))
            .collect();
        stages
            .iter()
            .map(|(id, s)| (*id, placed.get(id).copied().unwrap_or(sigmoid(s.explored))))
            .collect()
    }
}

/// How sure the judge is of its best passage: its best logit less its
/// second best (0 with fewer than two judged).
pub fn judge_gap(stages: &[(NodeId, Stages)]) -> f64 {
    lead(stages.iter().filter_map(|(_, s)| s.judged)).unwrap_or(0.0)
}

/// The best of some logits less the second best (`None` with fewer than
/// two): how far a stage's top stands out.
pub fn lead(logits: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut first, mut second) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    for z in logits {
        if z > first {
            (first, second) = (z, first);
        } else if z > second {
            second = z;
        }
    }
    second.is_finite().then_some(first - second)
}

/// The cascade's fitted model for a tree's embedder (its recorded
/// description) and a judge kind, if one was fitted ([`fitted::cascade`];
/// others keep the exploration as a centred prior, [`add_prior`]).
pub fn fitted_cascade_for(embedder: &str, judge: BackendKind) -> Option<FittedCascade> {
    let embedder = fitted::Embedder::of(embedder)?;
    fitted::cascade(embedder, fitted::JudgeKind::of(judge)?).map(FittedCascade)
}

/// What both stages said of each passage either judged (`explored`: the
/// exploration's final P by passage; `judged`: the judge's P), by node, in
/// a query of this `form`.
pub fn stages(
    explored: &HashMap<NodeId, f64>,
    judged: &[(NodeId, f64)],
    form: Form,
) -> Vec<(NodeId, Stages)> {
    let floor = explored
        .values()
        .map(|p| logit(*p))
        .fold(f64::INFINITY, f64::min);
    let floor = if floor.is_finite() { floor } else { 0.0 };
    let by_judge: HashMap<NodeId, f64> = judged.iter().copied().collect();
    let mut out: Vec<(NodeId, Stages)> = explored
        .iter()
        .map(|(p, e)| {
            let s = Stages {
                explored: logit(*e),
                reached: true,
                judged: by_judge.get(p).map(|j| logit(*j)),
                form,
            };
            (*p, s)
        })
        .collect();
    out.extend(
        judged
            .iter()
            .filter(|(p, _)| !explored.contains_key(p))
            .map(|(p, j)| {
                let s = Stages {
                    explored: floor,
                    reached: false,
                    judged: Some(logit(*j)),
                    form,
                };
                (*p, s)
            }),
    );
    out.sort_by_key(|(p, _)| *p);
    out
}

/// The judged passages that match a query term with their BM25 `scores`,
/// best first (ties by node).
fn by_score(scores: &HashMap<NodeId, f64>, judged: &[(NodeId, f64)]) -> Vec<(NodeId, f64)> {
    let mut matched: Vec<(NodeId, f64)> = judged
        .iter()
        .map(|(p, _)| (*p, scores.get(p).copied().unwrap_or(0.0)))
        .filter(|(_, s)| *s > 0.0)
        .collect();
    matched.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    matched
}

/// Each matched passage's lexical part ([`by_score`]'s order): `1 / (1 +
/// rank / 5)`; a judged passage absent from it gets 0.
fn passage_ranks(matched: &[(NodeId, f64)]) -> HashMap<NodeId, f64> {
    matched
        .iter()
        .enumerate()
        .map(|(rank, (p, _))| (*p, 1.0 / (1.0 + rank as f64 / RANK_SCALE)))
        .collect()
}

/// Adds an earlier stage's opinion to fused scores: each passage's logit
/// gets `weight · (logit(prior) − mean)`, the mean over the passages with a
/// prior (a passage without one counts as that mean): the cascade's
/// exploration weighed beside the judge, the scale still the judge's.
pub fn add_prior(scores: &mut [(NodeId, f64)], prior: &HashMap<NodeId, f64>, weight: f64) {
    if weight == 0.0 || scores.is_empty() {
        return;
    }
    let mut known: Vec<f64> = scores
        .iter()
        .filter_map(|(p, _)| prior.get(p).map(|x| logit(*x)))
        .collect();
    if known.is_empty() {
        return;
    }
    known.sort_by(f64::total_cmp);
    let mean = known.iter().sum::<f64>() / known.len() as f64;
    for (p, score) in scores.iter_mut() {
        let shift = prior.get(p).map_or(0.0, |x| logit(*x) - mean);
        *score = sigmoid(logit(*score) + weight * shift);
    }
}

/// Each judged document's graph support: the best decayed score of another
/// judged document linked to it by a neighbour list, either way.
fn graph_support(tree: &Tree, judged: &HashMap<NodeId, f64>) -> HashMap<NodeId, f64> {
    let mut support: HashMap<NodeId, f64> = HashMap::new();
    if !tree.has_neighbours() {
        return support;
    }
    for (&doc, &score) in judged {
        if tree.level_of(doc) != Some(LevelKind::Document) {
            continue;
        }
        let list = tree.neighbours(doc);
        let k = list.len().max(1) as f64;
        for (i, other) in list.iter().enumerate() {
            let Some(&other_score) = judged.get(other) else {
                continue;
            };
            let decay = 1.0 - 0.5 * i as f64 / k;
            // `doc` lists `other`: each supports the other.
            for (to, from) in [(*other, score), (doc, other_score)] {
                let slot = support.entry(to).or_insert(0.0);
                *slot = slot.max(from * decay);
            }
        }
    }
    support
}

#[cfg(test)]
mod tests {
    use super::*;
    use treenav_tree::NodeKind;

    /// The first passage of document `id`.
    fn first_passage(tree: &Tree, id: &str) -> NodeId {
        let doc = tree
            .documents()
            .find(|d| matches!(tree.get(*d).map(|n| &n.kind), Some(NodeKind::Document { id: x, .. }) if x == id))
            .expect("document");
        tree.children(doc)[0]
    }

    /// Two passages of one document, judged alike: the passage evidence
    /// puts the one whose own words match first; without it they tie.
    #[tokio::test]
    async fn passage_evidence_orders_passages_of_one_document() {
        let tree = crate::tests::tree().await;
        let doc = tree.documents().next().expect("a document");
        let (a, b) = (tree.children(doc)[0], tree.children(doc)[1]);
        let judged = vec![(a, 0.4), (b, 0.4)];
        let ranks = HashMap::new();
        let plain = fused_scores(&tree, &ranks, &judged, 2.0);
        assert_eq!(plain[0], plain[1]);
        let lex: HashMap<NodeId, f64> = [(a, 1.0), (b, 3.0)].into_iter().collect();
        let out = fused_with_passages(&tree, &ranks, Some(&lex), &judged, 2.0);
        assert!(out[1] > out[0], "{out:?}");
        assert!(out.iter().all(|p| (0.0..=1.0).contains(p)));
    }

    /// Every part of the evidence is in [0, 1] (the judge part is a
    /// logit); the passage parts are 0 unless the passages' own scores are
    /// given; the best-matching passage gets a share of 1.
    #[tokio::test]
    async fn the_evidence_parts_stay_in_range() {
        let tree = crate::tests::tree().await;
        let index = tree.document_index().expect("index");
        let ranks = lexical_ranks(&index, "insulin glucose").expect("ranks");
        let judged: Vec<(NodeId, f64)> = tree
            .passages()
            .take(8)
            .enumerate()
            .map(|(i, p)| (p, 0.1 + 0.1 * i as f64))
            .collect();
        let lex: HashMap<NodeId, f64> = judged
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (*p, i as f64 % 3.0))
            .collect();
        let without = evidence(&tree, &ranks, None, &judged);
        assert!(without
            .iter()
            .all(|e| e.lexical_passage == 0.0 && e.bm25_share == 0.0));
        let with = evidence(&tree, &ranks, Some(&lex), &judged);
        for (e, (_, p)) in with.iter().zip(&judged) {
            assert!((e.judge - logit(*p)).abs() < 1e-12);
            for part in [e.lexical_document, e.graph, e.lexical_passage, e.bm25_share] {
                assert!((0.0..=1.0).contains(&part), "{e:?}");
            }
        }
        assert!(with
            .iter()
            .any(|e| e.bm25_share == 1.0 && e.lexical_passage == 1.0));
        // Fewer than ten passages match: BM25's list counts in full.
        assert!(with.iter().chain(&without).all(|e| e.lexical_peak == 1.0));
    }

    /// The peak is one number per query: 1 − the tenth best judged
    /// passage's BM25 score over the best's.
    #[test]
    fn the_peak_sets_the_tenth_best_score_against_the_best() {
        let judged: Vec<(NodeId, f64)> = (0..12).map(|i| (NodeId(i), 0.5)).collect();
        let flat: HashMap<NodeId, f64> = (0..12)
            .map(|i| (NodeId(i), 10.0 - 0.1 * i as f64))
            .collect();
        assert!((peak(&by_score(&flat, &judged)) - (1.0 - 9.1 / 10.0)).abs() < 1e-12);
        let sharp: HashMap<NodeId, f64> = (0..12)
            .map(|i| (NodeId(i), 1.0 / (1.0 + i as f64)))
            .collect();
        assert!((peak(&by_score(&sharp, &judged)) - 0.9).abs() < 1e-12);
        let few: HashMap<NodeId, f64> = (0..12)
            .map(|i| (NodeId(i), f64::from(u8::from(i < 9))))
            .collect();
        assert_eq!(peak(&by_score(&few, &judged)), 1.0);
    }

    /// The agreement is 1 when the judge ranks BM25's best first, falls
    /// as it ranks it lower, and is 0 when BM25 matched nothing.
    #[test]
    fn the_agreement_reads_where_the_judge_puts_bm25s_best() {
        let (a, b) = (NodeId(1), NodeId(2));
        let judged = [(a, 0.9), (b, 0.5)];
        assert!((agreement(&[(a, 3.0), (b, 1.0)], &judged) - 1.0).abs() < 1e-12);
        let low = agreement(&[(b, 3.0)], &judged);
        let want = 2.0 * sigmoid(logit(0.5) - logit(0.9));
        assert!((low - want).abs() < 1e-12 && low < 0.25, "{low}");
        assert_eq!(agreement(&[], &judged), 0.0);
    }

    /// The fitted fusion is picked by the embedder's description, and a
    /// higher judge score or a better BM25 rank never lowers P.
    #[test]
    fn the_fitted_fusion_is_picked_by_embedder_and_rises_with_its_evidence() {
        assert!(fitted_for("tfidf(v1)").is_none());
        assert!(fitted_for("minilm(all-MiniLM-L6-v2)").is_none());
        let model = fitted_for("onnx(bge-small-en, cls)").expect("bge-small is fitted");
        let base = Evidence {
            judge: -1.0,
            lexical_document: 0.5,
            graph: 0.2,
            lexical_passage: 0.5,
            bm25_share: 0.5,
            lexical_peak: 0.8,
            lexical_coverage: 1.0,
            lexical_agreement: 1.0,
            stages: None,
        };
        let p = model.probability(&base);
        assert!(p > 0.0 && p < 1.0);
        // A flat BM25 list: the same lexical evidence moves P less.
        let flat = Evidence {
            lexical_peak: 0.1,
            ..base
        };
        let lift = |e: &Evidence| {
            let none = Evidence {
                lexical_document: 0.0,
                lexical_passage: 0.0,
                bm25_share: 0.0,
                ..*e
            };
            logit(model.probability(e)) - logit(model.probability(&none))
        };
        assert!(lift(&base) > 2.0 * lift(&flat) && lift(&flat) > 0.0);
        // A sparse one (two judged passages match a query term): the same.
        let sparse = Evidence {
            lexical_coverage: 0.2,
            ..base
        };
        assert!(lift(&base) > 2.0 * lift(&sparse) && lift(&sparse) > 0.0);
        // One whose best the judge ranks far down: the same.
        let contradicted = Evidence {
            lexical_agreement: 0.2,
            ..base
        };
        assert!(lift(&base) > 2.0 * lift(&contradicted) && lift(&contradicted) > 0.0);
        for better in [
            Evidence { judge: 0.0, ..base },
            Evidence {
                lexical_document: 1.0,
                ..base
            },
            Evidence {
                lexical_passage: 1.0,
                ..base
            },
            Evidence {
                bm25_share: 1.0,
                ..base
            },
        ] {
            assert!(model.probability(&better) > p, "{better:?}");
        }
    }

    /// Both stages' evidence covers what either judged: a passage only
    /// the judge reached gets the exploration's lowest logit; no cascade is
    /// fitted for a tfidf tree.
    #[test]
    fn both_stages_evidence_covers_what_either_judged() {
        let (a, b, c) = (NodeId(1), NodeId(2), NodeId(3));
        let explored: HashMap<NodeId, f64> = [(a, 0.8), (b, 0.2)].into();
        let all = stages(&explored, &[(b, 0.9), (c, 0.6)], Form::default());
        assert_eq!(all.iter().map(|(p, _)| *p).collect::<Vec<_>>(), [a, b, c]);
        let (sa, sb, sc) = (all[0].1, all[1].1, all[2].1);
        assert!(sa.reached && sa.judged.is_none());
        assert!((sa.explored - logit(0.8)).abs() < 1e-12);
        assert!(sb.reached && (sb.judged.unwrap_or(0.0) - logit(0.9)).abs() < 1e-12);
        assert!(!sc.reached && (sc.explored - logit(0.2)).abs() < 1e-12);
        assert!(fitted_cascade_for("tfidf(v1)", BackendKind::CrossEncoder).is_none());
    }

    /// The fitted cascade moves only the judged passages, among the places
    /// the exploration gave them, each taking the P of its new place; the
    /// judge's weight grows with its gap.
    #[test]
    fn the_cascade_reorders_the_judged_passages_in_the_explorations_places() {
        let (a, b, c, d) = (NodeId(1), NodeId(2), NodeId(3), NodeId(4));
        let explored: HashMap<NodeId, f64> = [(a, 0.8), (b, 0.6), (d, 0.3)].into();
        let all = stages(&explored, &[(b, 0.5), (c, 0.2), (d, 0.99)], Form::default());
        let gap = judge_gap(&all);
        assert!((gap - (logit(0.99) - logit(0.5))).abs() < 1e-12);
        let with = |judged: f64, judged_gap: f64, judged_question: f64, judged_short: f64| {
            FittedCascade(fitted::Cascade {
                bias: -0.5,
                explored: 0.8,
                judged,
                judged_gap,
                judged_question,
                judged_short,
                gap: 0.1,
            })
        };
        let model = |judged: f64, judged_gap: f64| with(judged, judged_gap, 0.0, 0.0);
        let order = |m: FittedCascade, all: &[(NodeId, Stages)]| -> Vec<f64> {
            m.order(all).iter().map(|(_, p)| *p).collect()
        };
        // The judge trusted: d takes b's place and P, b d's; c (unreached)
        // keeps the floor's place, a (not judged) its own.
        let moved = order(model(2.0, 0.0), &all);
        assert_eq!(moved, [0.8, 0.3, 0.3, 0.6].map(|p| sigmoid(logit(p))));
        // The judge ignored: the exploration's order and scores come back.
        let kept = order(model(0.0, 0.0), &all);
        assert_eq!(kept, [0.8, 0.6, 0.3, 0.3].map(|p| sigmoid(logit(p))));
        // The judge weighed by its gap alone: its sure top still moves up...
        assert_eq!(order(model(0.0, 1.0), &all), moved);
        // ...but not when it is unsure (a gap of zero).
        let unsure = stages(&explored, &[(b, 0.5), (d, 0.5)], Form::default());
        assert_eq!(judge_gap(&unsure), 0.0);
        let p = order(model(0.0, 1.0), &unsure);
        assert_eq!(p, [0.8, 0.6, 0.3].map(|p| sigmoid(logit(p))));
        assert_eq!(judge_gap(&[]), 0.0);
        // The judge weighed by the query's form alone: it moves its top up
        // in a question, and leaves a claim's order to the exploration.
        let judged = [(b, 0.5), (c, 0.2), (d, 0.99)];
        let form = |question: bool, short: bool| Form { question, short };
        let asked = stages(&explored, &judged, form(true, false));
        let by_form = with(0.0, 0.0, 2.0, 0.0);
        assert_eq!(order(by_form, &asked), moved);
        assert_eq!(order(by_form, &all), kept);
        // And by the size of the passages it read alone: it moves its top
        // up over sentences, a statement's as well, and not over paragraphs.
        let over_sentences = stages(&explored, &judged, form(false, true));
        let by_size = with(0.0, 0.0, 0.0, 2.0);
        assert_eq!(order(by_size, &over_sentences), moved);
        assert_eq!(order(by_size, &asked), kept);
        // Both: their weights add.
        let both = stages(&explored, &[(b, 0.5), (d, 0.99)], form(true, true));
        let added = with(0.1, 0.0, 0.3, 0.4);
        assert!((added.judge_weight(&both) - 0.8 / 0.8).abs() < 1e-12);
        // Before judging (the skip's scale) the gap does not count yet.
        let by_all = with(0.1, 1.0, 0.3, 0.4);
        assert!((by_all.judge_say(form(true, true)) - 1.0).abs() < 1e-12);
        assert!((by_all.judge_say(form(false, false)) - 0.125).abs() < 1e-12);
        // What the trace reports: the judge's weight per logit against the
        // exploration's (0.8 here).
        assert!((by_form.judge_weight(&asked) - 2.5).abs() < 1e-12);
        assert_eq!(by_form.judge_weight(&all), 0.0);
        let by_gap = model(0.4, 0.1).judge_weight(&all);
        assert!((by_gap - (0.4 + 0.1 * gap) / 0.8).abs() < 1e-12);
    }

    #[tokio::test]
    async fn weight_zero_gives_the_judge_scores_back() {
        let tree = crate::tests::tree().await;
        let index = tree.document_index().expect("index");
        let judged: Vec<(NodeId, f64)> = tree.passages().take(3).map(|p| (p, 0.3)).collect();
        let out = fused_scores(
            &tree,
            &lexical_ranks(&index, "insulin").expect("ranks"),
            &judged,
            0.0,
        );
        assert_eq!(out, vec![0.3, 0.3, 0.3]);
    }

    #[tokio::test]
    async fn evidence_breaks_a_tie_toward_the_lexical_match_and_keeps_a_probability() {
        let tree = crate::tests::tree().await;
        let index = tree.document_index().expect("index");
        // d0 is about insulin, d1 about football (and lava): scored alike
        // by the judge, the one matching the query goes first after fusion.
        let (matching, other) = (first_passage(&tree, "d0"), first_passage(&tree, "d1"));
        let query = "insulin blood glucose";
        let judged = vec![(other, 0.4), (matching, 0.4)];
        let out = fused_scores(
            &tree,
            &lexical_ranks(&index, query).expect("ranks"),
            &judged,
            2.0,
        );
        assert!(out[1] > out[0], "{out:?}");
        assert!(out.iter().all(|s| *s > 0.0 && *s < 1.0));
        // A confident judge answer is not overturned by the evidence.
        let judged = vec![(other, 0.95), (matching, 0.2)];
        let out = fused_scores(
            &tree,
            &lexical_ranks(&index, query).expect("ranks"),
            &judged,
            2.0,
        );
        assert!(out[0] > out[1], "{out:?}");
    }

    #[tokio::test]
    async fn the_evidence_is_centred_so_the_list_keeps_the_judge_scale() {
        let tree = crate::tests::tree().await;
        let index = tree.document_index().expect("index");
        let judged: Vec<(NodeId, f64)> = tree.passages().take(12).map(|p| (p, 0.3)).collect();
        let out = fused_scores(
            &tree,
            &lexical_ranks(&index, "insulin glucose").expect("ranks"),
            &judged,
            4.0,
        );
        let mean_logit = out.iter().map(|s| logit(*s)).sum::<f64>() / out.len() as f64;
        assert!((mean_logit - logit(0.3)).abs() < 1e-9, "{out:?}");
    }

    #[tokio::test]
    async fn a_neighbour_of_a_relevant_document_gains_support() {
        let tree = crate::tests::tree().await;
        assert!(tree.has_neighbours());
        let index = tree.document_index().expect("index");
        let d0 = tree
            .get(first_passage(&tree, "d0"))
            .and_then(|n| n.parent)
            .expect("document");
        let near = tree.neighbours(d0)[0];
        let far = tree
            .documents()
            .find(|d| {
                *d != d0 && !tree.neighbours(d0).contains(d) && !tree.neighbours(*d).contains(&d0)
            })
            .expect("a document unrelated to d0");
        let (near_p, far_p) = (tree.children(near)[0], tree.children(far)[0]);
        // No query term matches: only the graph part differs.
        let judged = vec![
            (first_passage(&tree, "d0"), 0.9),
            (far_p, 0.3),
            (near_p, 0.3),
        ];
        let out = fused_scores(
            &tree,
            &lexical_ranks(&index, "zzzz").expect("ranks"),
            &judged,
            2.0,
        );
        assert!(out[2] > out[1], "{out:?}");
    }
}
