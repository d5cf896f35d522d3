//! The `best-first` strategy: one global frontier under a hard judgment budget.
//!
//! Ideas from GAR (MacAvaney et al., CIKM 2022: alternate the first-stage
//! list with neighbours of the best-scored documents so far), LATTICE (path
//! relevance over a global frontier) and Zhuo et al. 2020 (a cluster is worth
//! its best member, so evidence must flow up).
//!
//! * **Frontier.** Two sources, sharing each round's slots (by how well
//!   each one's picks scored in the last round, `search::Split`; or one for
//!   one with `adaptive_split` off): the
//!   *lexical list* and the *graph frontier*. The lexical list has two
//!   orders, sharing its slots the same way: the passages of the tree's
//!   top BM25 documents, best passage BM25 score first (depth: a document
//!   whose passages all match offers several), and each document's best
//!   passage in the documents' BM25 order (reach: a new document per slot;
//!   adaptive split only). The graph frontier holds unjudged
//!   passages of documents near the evidence (other passages of a judged
//!   document, neighbours of a judged document from the tree's stored lists,
//!   the other members of a judged document's leaf cluster) and, with
//!   `cards` on, cluster cards (the root's children, then the children of
//!   judged cards). When one source runs dry the other fills the round.
//! * **Path relevance.** Every node's *own* score is its judged score, raised
//!   to the best judged score beneath it (evidence flows up). Its path score
//!   is `path(n) = α · own(n) + (1 − α) · path(parent(n))`, `path(root) = 0`.
//!   An unjudged passage's priority is the path score of its document (so an
//!   unjudged document in a raised cluster gets `(1 − α) · path(cluster)`),
//!   at least `β · own(d)` when another passage of its document `d` was
//!   judged (so a document that scored well is read on before its
//!   neighbours), or `γ · own(d) · (1 − ½ · rank / k)` when it is the
//!   `rank`-th of the `k` neighbours of a judged document `d` (nearest
//!   first), whichever is higher; a card's priority is its parent's path
//!   score. A document offers its unjudged passages together, best lexical
//!   first, the `j`-th of `m` at `(1 − ½ · j / m)` times that priority, so
//!   a well-scored document can fill several slots of a round.
//!   Ties go to the document that best matches the query lexically.
//! * **Rounds.** The budget (minus the shortlist rerank, which a pointwise
//!   decider does not take) is spread over `rounds` rounds; each round is
//!   one [`treenav_judge::Session::judge_round`]: slates of `slate_size` judged
//!   concurrently, every slate but the session's very first showing its
//!   anchor (the first candidate ever judged) when the decider reads the
//!   context, so every round is on one scale. References count against the
//!   budget.
//! * **Stop** when the budget is spent or nothing is left to judge; the
//!   judged passages, best first, go to the same shortlist rerank as
//!   `levels`.

use crate::fusion::{Evidence, Stages};
use crate::navigate::{Navigator, Scope};
use crate::query_form::Form;
use crate::view::Probabilities;
use crate::{Error, Result, Retrieval, Route, Trace};
use std::collections::{HashMap, HashSet};
use treenav_tree::{LevelKind, NodeId};

pub(crate) mod settings;
mod search;

use search::Search;

use settings::BestFirstConfig;
pub(crate) use settings::{BestFirstConfig as Settings, SETTINGS};

pub(crate) const PROFILE: crate::StrategyProfile = crate::StrategyProfile {
    name: "best-first",
    about: "one frontier under a judgment budget: the embedder explores, the judge reads the best (the default)",
    spends_judge_budget: true,
    reads_document_index: true,
};

/// Runs the search (the cascade where the tree has vectors).
pub(crate) async fn run(navigator: &Navigator, query: &str, scope: &Scope) -> Result<Retrieval> {
    navigator.best_first(query, scope).await
}

/// BM25 documents fetched per judgment of the budget, and at least. At
/// 1000 / 10× every SciFact figure (lexical judge at budget 100, the
/// cross-encoder at 50 and 100) and XQuAD's were the same to the last digit
/// and the 1M tree's p50 ~10% slower: the rank evidence past 300 is under
/// 0.02 and the walk uses the top `budget` only.
const LEXICAL_DEPTH_PER_JUDGMENT: usize = 3;
const LEXICAL_DEPTH_MIN: usize = 300;
/// Passages of the lexical route's documents scored per query, at most (a
/// few µs each): SQuAD dev's articles (up to 98 paragraphs, 48 articles)
/// are read whole at every budget, a long book's first passages only.
const LEXICAL_PASSAGES: usize = 8192;

/// Leaf clusters the descent by centroid reaches (the best this many
/// clusters kept at each level).
const DESCENT_BEAM: usize = 2;
/// The stages' names in the trace.
pub(crate) const STAGE_EXPLORE: &str = "explore";
pub(crate) const STAGE_JUDGE: &str = "judge";

/// What BM25 says of a query: its top documents, each one's score and rank.
struct Lexicon {
    docs: Vec<NodeId>,
    doc_lex: HashMap<NodeId, f64>,
    lexical_rank: HashMap<NodeId, usize>,
}

/// One stage's spending: its name, budget, rounds, slate size and final
/// fusion weight.
#[derive(Debug, Clone, Copy)]
struct StageSpec {
    stage: &'static str,
    budget: usize,
    rounds: usize,
    slate_size: usize,
    fusion: f64,
}

impl StageSpec {
    /// The judge's stage: `--judge-budget` over `--rounds` slates of `--slate-size`.
    fn judge(cfg: &BestFirstConfig) -> StageSpec {
        StageSpec {
            stage: STAGE_JUDGE,
            budget: cfg.judge_budget,
            rounds: cfg.rounds,
            slate_size: cfg.slate_size,
            fusion: cfg.fusion,
        }
    }

    /// The embedding judge's exploration: `budget` vectors in rounds of
    /// [`EXPLORE_SLATE`] (a round is sub-millisecond: many rounds let the
    /// graph be followed as far as the budget goes).
    fn explore(cfg: &BestFirstConfig, budget: usize) -> StageSpec {
        StageSpec {
            stage: STAGE_EXPLORE,
            budget,
            rounds: budget.div_ceil(EXPLORE_SLATE).clamp(1, 100),
            slate_size: EXPLORE_SLATE,
            fusion: cfg.explore_fusion,
        }
    }
}

/// Each judged passage with its evidence, as `Retrieval::evidence` keeps it.
type KeptEvidence = Vec<(NodeId, Evidence)>;

/// Candidates per round of the exploration.
const EXPLORE_SLATE: usize = 25;

/// `a` and `b` taken in turn, each once, up to `depth` in all.
fn interleave(a: &[NodeId], b: &[NodeId], depth: usize) -> Vec<NodeId> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(depth);
    let (mut i, mut j) = (0, 0);
    while out.len() < depth && (i < a.len() || j < b.len()) {
        let next = if (out.len() % 2 == 0 && i < a.len()) || j >= b.len() {
            i += 1;
            a[i - 1]
        } else {
            j += 1;
            b[j - 1]
        };
        if seen.insert(next) {
            out.push(next);
        }
    }
    out
}

impl Navigator {
    /// BM25's top documents with their scores, as deep as a search of
    /// `budget` judgments can use them: the list it walks, the priors of
    /// neighbours and the fused order's rank evidence (which is ~0 past a
    /// few hundred). Not every match: tantivy's top-k then skips most of a
    /// large corpus (Block-WAND).
    fn lexical_list(
        &self,
        query: &str,
        budget: usize,
        scope: &Scope,
    ) -> Result<Vec<(NodeId, f64)>> {
        let depth = budget
            .saturating_mul(LEXICAL_DEPTH_PER_JUDGMENT)
            .max(LEXICAL_DEPTH_MIN)
            .min(self.documents);
        match &self.index {
            Some(index) => scope.search(index, query, depth),
            None => Ok(Vec::new()),
        }
    }

    /// A filter can leave fewer BM25 matches than the budget can judge:
    /// the other documents it lets through follow, in tree order, so the
    /// judge still sees what the filter keeps (up to `depth` in all).
    fn fill_from_scope(&self, scope: &Scope, lexical: &mut Vec<NodeId>, depth: usize) {
        if !scope.is_filtered() || lexical.len() >= depth {
            return;
        }
        let listed: HashSet<NodeId> = lexical.iter().copied().collect();
        let rest: Vec<NodeId> = self
            .tree
            .documents()
            .filter(|d| scope.allows(*d) && !listed.contains(d))
            .take(depth - lexical.len())
            .collect();
        lexical.extend(rest);
    }

    /// Best-first navigation under the judgment budget (see the module
    /// docs); with the tree's vectors, the cascade: the embedding judge
    /// explores first, and the judge (when it is another) spends its
    /// budget on what the exploration ranked best and their neighbours.
    pub(crate) async fn best_first(&self, query: &str, scope: &Scope) -> Result<Retrieval> {
        let cfg = self.config.best_first();
        let explore = self.explore_budget();
        let scored = self.lexical_list(query, cfg.judge_budget.max(explore), scope)?;
        let lexical_rank: HashMap<NodeId, usize> = scored
            .iter()
            .enumerate()
            .map(|(rank, (doc, _))| (*doc, rank))
            .collect();
        let doc_lex: HashMap<NodeId, f64> = scored.iter().copied().collect();
        let lexical = Lexicon {
            docs: scored.iter().map(|(id, _)| *id).collect(),
            doc_lex,
            lexical_rank,
        };
        let (Some(explorer), Some(vectors)) = (self.explorer(), self.vectors.clone()) else {
            let decider = self.decider();
            let depth = cfg.judge_budget.max(self.config.returned_passages());
            let mut docs: Vec<NodeId> = lexical.docs.iter().take(depth).copied().collect();
            self.fill_from_scope(scope, &mut docs, depth);
            let spec = StageSpec::judge(cfg);
            let mut search = Search::new(self, scope, query, decider.as_ref(), spec, &lexical);
            search.order_lexical(&docs);
            search.run(cfg.rounds).await?;
            return self.conclude(search, None).await;
        };
        let q = vectors
            .query_vector(query)
            .await
            .map_err(|source| Error::Judge {
                level: 1,
                kind: crate::Judging::BestFirstRound,
                batch: 0,
                source,
            })?;
        let (near, read) = vectors.descend(&q, scope, DESCENT_BEAM);
        let depth = explore.max(self.config.returned_passages());
        let mut docs = interleave(&lexical.docs, &near, depth);
        self.fill_from_scope(scope, &mut docs, depth);
        let spec = StageSpec::explore(cfg, explore);
        let mut first = Search::new(self, scope, query, explorer.as_ref(), spec, &lexical);
        first.descent_reads = read;
        first.order_lexical(&docs);
        first.run(spec.rounds).await?;
        if !self.cascade() {
            return self.conclude(first, None).await;
        }
        let ranked = first.ranked();
        let sure = first.sure_lead(&ranked);
        // Only a lead past the gap reads the passages' sizes.
        if let Some(lead) = sure.filter(|l| *l >= cfg.skip_gap() * self.skip_scale(query, &ranked, cfg)) {
            let mut found = self.conclude(first, None).await?;
            found.trace.judge_skipped = Some(lead);
            return Ok(found);
        }
        let ranked: Vec<NodeId> = ranked.into_iter().map(|(p, _)| p).collect();
        let decider = self.decider();
        let mut second = Search::new(
            self,
            scope,
            query,
            decider.as_ref(),
            StageSpec::judge(cfg),
            &lexical,
        );
        second.seed(&ranked);
        second.run(cfg.rounds).await?;
        self.conclude(second, Some(first)).await
    }

    /// The judged passages, best first, through the shortlist rerank;
    /// after a cascade (`explored`: the first stage), the judge's scores
    /// fused with the exploration's.
    async fn conclude(
        &self,
        mut search: Search<'_>,
        mut explored: Option<Search<'_>>,
    ) -> Result<Retrieval> {
        let r = self.config.returned_passages();
        let (mut passages, evidence, judge_weight) = match explored.as_mut() {
            Some(first) => self.cascade_order(&mut search, first),
            None if search.stage == STAGE_EXPLORE => (search.fused(), search.kept_evidence(), None),
            None => (search.fused(), Vec::new(), None),
        };
        passages.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        self.collapse(&mut passages);
        passages.truncate(r);
        mark_kept(&mut search, explored.as_mut(), &passages);
        let probabilities = judged_probabilities(&search, explored.as_ref());
        let (ranked, rerank) = self
            .finish(&mut search.session, search.query, &passages, &probabilities)
            .await?;
        let mut docs_read: HashSet<NodeId> = search
            .judged
            .keys()
            .filter_map(|id| self.document_of(*id))
            .collect();
        let mut usage = search.session.usage().clone();
        usage.vectors_scored = usage.vectors_scored.saturating_add(search.descent_reads);
        let mut judged = search.session.shown();
        let mut rounds = Vec::new();
        let mut explore_budget = None;
        if let Some(first) = explored {
            docs_read.extend(first.judged.keys().filter_map(|id| self.document_of(*id)));
            usage.add(first.session.usage());
            usage.vectors_scored = usage.vectors_scored.saturating_add(first.descent_reads);
            judged += first.session.shown();
            explore_budget = Some(first.budget);
            rounds = first.rounds;
        }
        if search.stage == STAGE_EXPLORE {
            explore_budget = Some(search.budget);
        }
        rounds.extend(search.rounds);
        Ok(Retrieval {
            query: search.query.to_string(),
            exhausted: ranked.len() < r,
            passages: ranked,
            trace: Trace {
                strategy: crate::Strategy::BestFirst,
                judge: self.judge.kind(),
                judge_budget: (search.stage == STAGE_JUDGE).then_some(search.budget),
                explore_budget,
                judge_skipped: None,
                judge_weight,
                neighbourhoods: search.neighbours,
                levels: Vec::new(),
                rounds,
                rerank,
                usage,
                titles_read: docs_read.len() as f64 / self.documents.max(1) as f64,
                candidates_judged: judged,
                latency_ms: 0.0,
            },
            evidence,
        })
    }

    /// A cascade's final scores, over what either stage judged when the
    /// judge has a fitted cascade ([`crate::fusion::FittedCascade`]): the
    /// judge reorders what it judged among the places the exploration gave
    /// those passages, by as much as its scores proved worth, and every
    /// score stays the exploration's. Otherwise the judge's passages alone,
    /// the exploration a centred prior on them. With the exploration's kept
    /// evidence (and both stages' part of it), and the judge's weight
    /// against the exploration where a fitted model set it.
    fn cascade_order(
        &self,
        second: &mut Search<'_>,
        first: &mut Search<'_>,
    ) -> (Vec<(NodeId, f64)>, KeptEvidence, Option<f64>) {
        let prior = first.fused_map();
        let mut evidence = first.kept_evidence();
        let model = self.cascade.filter(|_| second.cfg.fitted_fusion);
        let centred = |second: &mut Search<'_>| {
            let mut passages = second.fused();
            crate::fusion::add_prior(&mut passages, &prior, second.cfg.explore_weight);
            passages
        };
        if model.is_none() && !second.cfg.keep_evidence {
            return (centred(second), evidence, None);
        }
        let judged = second.judged_passages();
        let stages = crate::fusion::stages(&prior, &judged, self.form(second.query, &judged));
        if second.cfg.keep_evidence {
            let by_node: HashMap<NodeId, Stages> = stages.iter().copied().collect();
            for (id, e) in &mut evidence {
                e.stages = by_node.get(id).copied();
            }
            evidence.extend(stages.iter().filter(|(_, s)| !s.reached).map(|(id, s)| {
                let e = Evidence {
                    stages: Some(*s),
                    ..Evidence::default()
                };
                (*id, e)
            }));
        }
        let Some(model) = model else {
            return (centred(second), evidence, None);
        };
        let weight = model.judge_weight(&stages);
        (model.order(&stages), evidence, Some(weight))
    }

    /// How many times `skip_judge_gap` the exploration's lead must be for
    /// the cascade to skip its judge: the judge's say per logit against
    /// the exploration's in this query's form (the passages it would read:
    /// the exploration's best `judge_budget`), at least 1. Where the
    /// fitted model gives the judge the order (over sentences one judge
    /// logit counts 2.3 of the exploration's), a lead of 2 is one the
    /// judge overturns; on paragraphs the scale stays 1. Without a fitted
    /// cascade, 1.
    fn skip_scale(&self, query: &str, ranked: &[(NodeId, f64)], cfg: &BestFirstConfig) -> f64 {
        let Some(model) = self.cascade.filter(|_| cfg.fitted_fusion) else {
            return 1.0;
        };
        let read: Vec<(NodeId, f64)> = ranked.iter().take(cfg.judge_budget).copied().collect();
        model.judge_say(self.form(query, &read)).max(1.0)
    }

    /// What the cascade's model reads of a query besides the scores: its
    /// form and whether the passages its judge read are sentence-sized (a
    /// passage whose text cannot be read does not count).
    fn form(&self, query: &str, judged: &[(NodeId, f64)]) -> Form {
        let words = judged.iter().filter_map(|(id, _)| {
            let text = self.tree.passage_text(*id).ok()?;
            Some(text.split_whitespace().count())
        });
        Form {
            question: crate::query_form::is_question(query),
            short: crate::query_form::sentence_sized(words),
        }
    }

    fn is_passage(&self, id: NodeId) -> bool {
        self.tree.level_of(id) == Some(LevelKind::Passage)
    }

    /// The document a passage belongs to.
    fn document_of(&self, id: NodeId) -> Option<NodeId> {
        if !self.is_passage(id) {
            return None;
        }
        self.tree.parent(id)
    }
}

/// Marks each shown candidate (either stage's) kept when it is among the
/// returned passages.
fn mark_kept(search: &mut Search<'_>, explored: Option<&mut Search<'_>>, passages: &[(NodeId, f64)]) {
    let kept: HashSet<NodeId> = passages.iter().map(|(id, _)| *id).collect();
    let earlier = explored.into_iter().flat_map(|first| &mut first.rounds);
    for round in search.rounds.iter_mut().chain(earlier) {
        for c in &mut round.candidates {
            c.kept = c.route != Route::Reference && kept.contains(&c.node);
        }
    }
}

/// What the rerank reads as each passage's probability: the last stage's
/// judgments, then its evidence, then the first stage's judgments.
fn judged_probabilities(search: &Search<'_>, explored: Option<&Search<'_>>) -> Probabilities {
    let mut probabilities: Probabilities = search.judged.clone();
    let earlier = explored.into_iter().flat_map(|first| &first.judged);
    for (id, e) in search.evidence.iter().chain(earlier) {
        probabilities.entry(*id).or_insert(*e);
    }
    probabilities
}
