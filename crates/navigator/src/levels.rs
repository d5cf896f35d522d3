//! The `levels` strategy (the paper's walk): judge a level in shared-context
//! batches, keep the best, expand.

use crate::navigate::{cut, Navigator, Scope};
use crate::view::Probabilities;
use crate::{
    CallTrace, Error, Judging, LevelTrace, Result, Retrieval, Route, Trace, TraceCandidate,
};
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use treenav_judge::{Candidate, Scored, Session};
use treenav_tree::{LevelKind, NodeId};

pub(crate) const PROFILE: crate::StrategyProfile = crate::StrategyProfile {
    name: "levels",
    about: "the paper's walk: every level judged in full, the best of each expanded",
    spends_judge_budget: false,
    reads_document_index: false,
};

/// The walk has no settings of its own: it reads the navigator's
/// (`budgets`, `batch_size`, `calibration`, …).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Settings {}

/// See [`Settings`].
pub(crate) const SETTINGS: &[crate::settings::Setting] = &[];

/// Runs the walk.
pub(crate) async fn run(navigator: &Navigator, query: &str, scope: &Scope) -> Result<Retrieval> {
    navigator.walk(query, scope).await
}

/// The walk so far: what each level showed and kept.
struct Walk {
    probabilities: Probabilities,
    levels: Vec<LevelTrace>,
    docs_shown: HashSet<NodeId>,
}

/// One level's frontier: each candidate node and how it got there.
type Frontier = Vec<(NodeId, Route)>;

impl Navigator {
    /// The `levels` walk: at each depth, the frontier (plus the lexical
    /// entry's documents at the document level) is judged, the best are
    /// selected and traced, and their children become the next frontier,
    /// down to the passages; then the shortlist is reranked.
    pub(crate) async fn walk(&self, query: &str, scope: &Scope) -> Result<Retrieval> {
        let decider = self.decider();
        let mut session = self.session(decider.as_ref());
        let mut walk = Walk {
            probabilities: Probabilities::new(),
            levels: Vec::new(),
            docs_shown: HashSet::new(),
        };
        let mut frontier: Frontier = self
            .tree
            .children(self.tree.root())
            .iter()
            .filter(|c| scope.allows(**c))
            .map(|c| (*c, Route::Tree))
            .collect();
        let mut depth = 1;
        let kept_passages = loop {
            let kind = self.level_kind(&frontier, depth)?;
            if kind == LevelKind::Document {
                self.enter_lexically(query, scope, &mut frontier)?;
                walk.docs_shown.extend(frontier.iter().map(|(id, _)| *id));
            }
            let budget = match kind {
                LevelKind::Passage => self.config.settings().returned_passages,
                LevelKind::Cluster | LevelKind::Document => self.config.budget(depth - 1),
            };
            let started = Instant::now();
            let judged = self
                .judge_level(&mut session, query, &frontier, depth, kind)
                .await?;
            let judge_ms = started.elapsed().as_secs_f64() * 1000.0;
            self.check_cost(&session, depth)?;
            let (mut order, mut budget) = match kind {
                LevelKind::Passage => self.select_passages(&frontier, &judged.scores, budget),
                _ => select(&frontier, &judged.scores, budget),
            };
            if kind != LevelKind::Passage {
                budget += self.widen(scope, &frontier, &judged.scores, &mut order);
            }
            for (i, (id, _)) in frontier.iter().enumerate() {
                walk.probabilities.insert(*id, judged.scores[i]);
            }
            tracing::debug!(
                depth,
                kind = kind.name(),
                shown = frontier.len(),
                calls = judged.calls.len(),
                kept = order.len(),
                "level judged"
            );
            let trace = self.trace_level(&frontier, &judged, &order, depth, kind, budget);
            walk.levels.push(LevelTrace { judge_ms, ..trace });
            let chosen: Vec<(NodeId, f64)> = order
                .iter()
                .map(|i| (frontier[*i].0, judged.scores[*i]))
                .collect();
            if kind == LevelKind::Passage {
                break chosen;
            }
            frontier = self.expand(scope, &chosen);
            depth += 1;
        };
        self.finish_walk(&mut session, query, walk, &kept_passages)
            .await
    }

    /// `top` is k: adds the next best candidates of a level to `order` until
    /// the passages beneath the kept ones can fill `returned_passages`.
    /// Returns how many it added.
    fn widen(
        &self,
        scope: &Scope,
        frontier: &Frontier,
        scores: &[f64],
        order: &mut Vec<usize>,
    ) -> usize {
        let wanted = self.config.returned_passages();
        let mut have = 0;
        for i in order.iter() {
            have += self.passages_under(scope, frontier[*i].0, wanted - have.min(wanted));
        }
        if have >= wanted {
            return 0;
        }
        let kept: HashSet<usize> = order.iter().copied().collect();
        let mut rest: Vec<usize> = (0..frontier.len()).filter(|i| !kept.contains(i)).collect();
        rest.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
        let mut added = 0;
        for i in rest {
            if have >= wanted {
                break;
            }
            have += self.passages_under(scope, frontier[i].0, wanted - have);
            order.push(i);
            added += 1;
        }
        added
    }

    /// The passage level's pick: the best `r` passages, at most
    /// `per_document` of a document.
    fn select_passages(
        &self,
        frontier: &Frontier,
        scores: &[f64],
        r: usize,
    ) -> (Vec<usize>, usize) {
        let (order, _) = select(frontier, scores, frontier.len());
        let mut ranked: Vec<(NodeId, f64)> =
            order.iter().map(|i| (frontier[*i].0, scores[*i])).collect();
        self.collapse(&mut ranked);
        let position: HashMap<NodeId, usize> = frontier
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (*id, i))
            .collect();
        let order: Vec<usize> = ranked
            .iter()
            .take(r)
            .filter_map(|(id, _)| position.get(id).copied())
            .collect();
        (order, r)
    }

    /// Passages the result could take beneath a node (itself, if a
    /// passage; at most `per_document` of a document), counted up to `cap`.
    fn passages_under(&self, scope: &Scope, id: NodeId, cap: usize) -> usize {
        let per_document = self.config.per_document();
        let (mut count, mut stack) = (0, vec![id]);
        while let Some(n) = stack.pop() {
            if count >= cap {
                break;
            }
            if !scope.allows(n) {
                continue;
            }
            match self.tree.get(n).map(|x| &x.kind) {
                Some(treenav_tree::NodeKind::Passage { .. }) => count += 1,
                Some(treenav_tree::NodeKind::Document { .. }) => {
                    count += self.tree.children(n).len().min(per_document);
                }
                _ => stack.extend_from_slice(self.tree.children(n)),
            }
        }
        count
    }

    /// The kind of the level `frontier` holds.
    fn level_kind(&self, frontier: &Frontier, depth: usize) -> Result<LevelKind> {
        frontier
            .first()
            .and_then(|(id, _)| self.tree.get(*id))
            .and_then(|n| n.kind.level())
            .ok_or_else(|| Error::Tree(format!("level {depth} has no candidate")))
    }

    /// Adds the lexical entry's documents to the document level (marking
    /// those the tree brought too).
    fn enter_lexically(&self, query: &str, scope: &Scope, frontier: &mut Frontier) -> Result<()> {
        let Some(index) = &self.index else {
            return Ok(());
        };
        let position: HashMap<NodeId, usize> = frontier
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (*id, i))
            .collect();
        let hits = scope.search(index, query, self.config.settings().lexical_entry)?;
        for (id, _) in hits {
            match position.get(&id) {
                Some(&i) => frontier[i].1 = Route::Both,
                None => frontier.push((id, Route::Lexical)),
            }
        }
        Ok(())
    }

    /// One level's trace (its judge time is filled in by the caller).
    fn trace_level(
        &self,
        frontier: &Frontier,
        judged: &Scored,
        order: &[usize],
        depth: usize,
        kind: LevelKind,
        budget: usize,
    ) -> LevelTrace {
        let kept: HashSet<usize> = order.iter().copied().collect();
        let candidates = frontier
            .iter()
            .enumerate()
            .map(|(i, (id, route))| TraceCandidate {
                node: *id,
                label: cut(&self.label(*id), 300),
                via: None,
                priority: None,
                probability: judged.scores[i],
                kept: kept.contains(&i),
                route: *route,
                batch: judged.call_of(i),
                fallback: judged.calls[judged.call_of(i)].fallback,
            })
            .collect();
        LevelTrace {
            depth,
            kind,
            budget,
            kept: order.len(),
            batches: judged.calls.len(),
            calls: judged
                .calls
                .iter()
                .map(|c| CallTrace {
                    candidates: c.own.len(),
                    references: c.references.len(),
                    fallback: c.fallback,
                })
                .collect(),
            candidates,
            usage: judged.usage.clone(),
            judge_ms: 0.0,
        }
    }

    /// The next frontier: the children of the chosen nodes, in order.
    fn expand(&self, scope: &Scope, chosen: &[(NodeId, f64)]) -> Frontier {
        chosen
            .iter()
            .flat_map(|(id, _)| self.tree.children(*id).iter())
            .filter(|c| scope.allows(**c))
            .map(|c| (*c, Route::Tree))
            .collect()
    }

    /// Reranks the kept passages and assembles the retrieval and its trace.
    async fn finish_walk(
        &self,
        session: &mut Session<'_>,
        query: &str,
        walk: Walk,
        kept_passages: &[(NodeId, f64)],
    ) -> Result<Retrieval> {
        let (passages, rerank) = self
            .finish(session, query, kept_passages, &walk.probabilities)
            .await?;
        Ok(Retrieval {
            query: query.to_string(),
            exhausted: passages.len() < self.config.returned_passages(),
            passages,
            trace: Trace {
                strategy: crate::Strategy::Levels,
                judge: self.judge.kind(),
                judge_budget: None,
                explore_budget: None,
                judge_skipped: None,
                judge_weight: None,
                neighbourhoods: false,
                levels: walk.levels,
                rounds: Vec::new(),
                rerank,
                // What the session spent and showed: references and the
                // shortlist included.
                usage: session.usage().clone(),
                titles_read: walk.docs_shown.len() as f64 / self.documents.max(1) as f64,
                candidates_judged: session.shown(),
                latency_ms: 0.0,
            },
            evidence: Vec::new(),
        })
    }

    /// Judges one level through the session: shared-context calls within
    /// the decider's limits, all at once, calibrated across calls.
    async fn judge_level(
        &self,
        session: &mut Session<'_>,
        query: &str,
        frontier: &[(NodeId, Route)],
        depth: usize,
        kind: LevelKind,
    ) -> Result<Scored> {
        let candidates: Vec<Candidate> =
            frontier.iter().map(|(id, _)| self.candidate(*id)).collect();
        session
            .judge_list(query, &candidates)
            .await
            .map_err(|e| Error::Judge {
                level: depth,
                kind: Judging::Level(kind),
                batch: e.call,
                source: e.source,
            })
    }
}

/// The candidates kept (indices into the frontier, best first, ties to the
/// lower node id): the best `budget`, then every document the lexical entry
/// brought that is not among them, so navigation can only add recall to
/// flat lexical retrieval. Returns the order and the budget that applied.
fn select(frontier: &Frontier, scores: &[f64], budget: usize) -> (Vec<usize>, usize) {
    let mut order: Vec<usize> = (0..frontier.len()).collect();
    order.sort_by(|a, b| {
        scores[*b]
            .total_cmp(&scores[*a])
            .then(frontier[*a].0.cmp(&frontier[*b].0))
    });
    order.truncate(budget);
    let protected: Vec<usize> = (0..frontier.len())
        .filter(|i| matches!(frontier[*i].1, Route::Lexical | Route::Both) && !order.contains(i))
        .collect();
    let budget = budget + protected.len();
    order.extend(protected);
    (order, budget)
}
