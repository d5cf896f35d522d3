//! One best-first search: the frontier, its rounds and what they judged.

use super::settings::BestFirstConfig;
use super::{Lexicon, StageSpec, LEXICAL_PASSAGES, STAGE_EXPLORE};
use crate::fusion::{Evidence, FittedFusion};
use crate::navigate::{cut, Navigator, Scope};
use crate::{Error, Result, RoundTrace, Route, TraceCandidate};
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use treenav_judge::probability::logit;
use treenav_judge::{Candidate, Scored, Session};
use treenav_tree::{LevelKind, NodeId};


/// A candidate picked for a round: the node, why, and its priority.
#[derive(Debug, Clone, Copy)]
struct Pick {
    node: NodeId,
    route: Route,
    via: Option<NodeId>,
    priority: Option<f64>,
}

/// The state of one best-first search.
pub(super) struct Search<'a> {
    nav: &'a Navigator,
    /// Which stage this search is ([`super::STAGE_EXPLORE`] or [`super::STAGE_JUDGE`]).
    pub(super) stage: &'static str,
    /// Whether an earlier stage's ranking took the lexical list's place
    /// ([`Search::seed`]): its picks are traced as [`Route::Explored`].
    seeded: bool,
    /// Its budget, slate size and final fusion weight.
    pub(super) budget: usize,
    slate_size: usize,
    fusion: f64,
    /// The exploration's fitted fusion for the tree's embedder, if any
    /// (then it orders and scores the stage's passages instead of `fusion`).
    fitted: Option<FittedFusion>,
    /// Vectors the descent by centroid read before the search.
    pub(super) descent_reads: u64,
    /// What the query's filter lets through: nothing else is picked.
    scope: &'a Scope,
    pub(super) session: Session<'a>,
    pub(super) query: &'a str,
    pub(super) cfg: &'a BestFirstConfig,
    pub(super) neighbours: bool,
    /// Calibrated P(yes) of every judged passage and card.
    pub(super) judged: HashMap<NodeId, f64>,
    /// Best judged score at or beneath each document and cluster.
    pub(super) evidence: HashMap<NodeId, f64>,
    /// Documents whose unjudged passages are on the graph frontier.
    touched: Vec<NodeId>,
    touched_set: HashSet<NodeId>,
    /// Best `γ · own(source)` per neighbour document, with the source.
    neighbour_prior: HashMap<NodeId, (f64, NodeId)>,
    /// Document → the cluster whose raised score touched it.
    cluster_via: HashMap<NodeId, NodeId>,
    /// Unjudged cards on the frontier.
    cards: Vec<NodeId>,
    /// The lexical route in its two orders ([`Search::order_lexical`]):
    /// passages by their own BM25, and each document's best passage in the
    /// documents' BM25 order (adaptive split only); how far each got.
    lexical: Vec<NodeId>,
    lexical_next: usize,
    by_document: Vec<NodeId>,
    by_document_next: usize,
    /// Lexical score of each passage of a document the lexical side showed.
    lex: HashMap<NodeId, f64>,
    /// BM25 score of every document that matches the query.
    doc_lex: &'a HashMap<NodeId, f64>,
    /// Rank (from 0) of every document that matches the query, for the
    /// fused final order.
    lexical_rank: &'a HashMap<NodeId, usize>,
    /// The node of the session's calibration anchor (the first candidate
    /// judged), when the session calibrates.
    anchor: Option<NodeId>,
    /// Judgments left for the rounds (the shortlist's are set aside).
    left: usize,
    /// Lexical list (first) against graph frontier (second).
    graph_split: Split,
    /// Within the lexical list: passage order (first) against document
    /// order (second).
    order_split: Split,
    pub(super) rounds: Vec<RoundTrace>,
}


impl<'a> Search<'a> {
    /// A search of one stage, before its first round.
    pub(super) fn new(
        nav: &'a Navigator,
        scope: &'a Scope,
        query: &'a str,
        decider: &'a dyn treenav_judge::Decide,
        spec: StageSpec,
        lexicon: &'a Lexicon,
    ) -> Search<'a> {
        let cfg = nav.config.best_first();
        let session = nav.session(decider);
        Search {
            nav,
            stage: spec.stage,
            seeded: false,
            budget: spec.budget,
            slate_size: spec.slate_size,
            fusion: spec.fusion,
            fitted: match spec.stage == STAGE_EXPLORE && cfg.fitted_fusion {
                true => nav.vectors.as_ref().and_then(|v| v.fitted_fusion()),
                false => None,
            },
            descent_reads: 0,
            scope,
            left: spec.budget.saturating_sub(session.shortlist_cost()),
            session,
            query,
            cfg,
            neighbours: cfg.neighbours && nav.tree.has_neighbours(),
            judged: HashMap::new(),
            evidence: HashMap::new(),
            touched: Vec::new(),
            touched_set: HashSet::new(),
            neighbour_prior: HashMap::new(),
            cluster_via: HashMap::new(),
            cards: Vec::new(),
            lexical: Vec::new(),
            lexical_next: 0,
            by_document: Vec::new(),
            by_document_next: 0,
            lex: HashMap::new(),
            doc_lex: &lexicon.doc_lex,
            lexical_rank: &lexicon.lexical_rank,
            anchor: None,
            graph_split: Split::default(),
            order_split: Split::default(),
            rounds: Vec::new(),
        }
    }

    /// The rounds: the budget spread over `rounds`, then widening.
    pub(super) async fn run(&mut self, rounds: usize) -> Result<()> {
        if self.cfg.cards {
            let tree = &self.nav.tree;
            self.cards = tree
                .children(tree.root())
                .iter()
                .copied()
                .filter(|c| {
                    self.scope.allows(*c)
                        && tree.level_of(*c) == Some(LevelKind::Cluster)
                })
                .collect();
        }
        for round in 0..rounds {
            if self.left == 0 {
                break;
            }
            let share = self.left.div_ceil(rounds - round);
            if !self.round(share).await? {
                break;
            }
        }
        if self.cfg.widen {
            self.widen().await?;
        }
        Ok(())
    }

    /// The judged passages in scope with their final scores (the stage's
    /// fusion of the judge's score with the search's evidence), unordered.
    pub(super) fn fused(&mut self) -> Vec<(NodeId, f64)> {
        let mut passages = self.judged_passages();
        let fused = match self.fitted {
            Some(model) => self
                .evidence_of(&passages)
                .iter()
                .map(|e| model.probability(e))
                .collect(),
            None if self.cfg.passage_evidence && self.stage == STAGE_EXPLORE => {
                let ids: Vec<NodeId> = passages.iter().map(|(p, _)| *p).collect();
                self.score_passages(&ids);
                crate::fusion::fused_with_passages(
                    &self.nav.tree,
                    self.lexical_rank,
                    Some(&self.lex),
                    &passages,
                    self.fusion,
                )
            }
            None => crate::fusion::fused_scores(
                &self.nav.tree,
                self.lexical_rank,
                &passages,
                self.fusion,
            ),
        };
        for ((_, p), f) in passages.iter_mut().zip(fused) {
            *p = f;
        }
        passages
    }

    /// The judged passages in scope with the judge's scores, unordered.
    pub(super) fn judged_passages(&self) -> Vec<(NodeId, f64)> {
        self.judged
            .iter()
            .filter(|(id, _)| self.nav.is_passage(**id) && self.scope.allows(**id))
            .map(|(id, p)| (*id, *p))
            .collect()
    }

    /// The evidence of `passages` (judged, with the judge's scores), their
    /// own BM25 scores included.
    fn evidence_of(&mut self, passages: &[(NodeId, f64)]) -> Vec<Evidence> {
        let ids: Vec<NodeId> = passages.iter().map(|(p, _)| *p).collect();
        self.score_passages(&ids);
        crate::fusion::evidence(&self.nav.tree, self.lexical_rank, Some(&self.lex), passages)
    }

    /// Each judged passage with its evidence, when the configuration keeps
    /// it (sorted by node, so runs compare).
    pub(super) fn kept_evidence(&mut self) -> Vec<(NodeId, Evidence)> {
        if !self.cfg.keep_evidence {
            return Vec::new();
        }
        let mut passages = self.judged_passages();
        passages.sort_by_key(|(p, _)| *p);
        let evidence = self.evidence_of(&passages);
        passages.into_iter().map(|(p, _)| p).zip(evidence).collect()
    }

    /// [`Search::fused`] by node.
    pub(super) fn fused_map(&mut self) -> HashMap<NodeId, f64> {
        self.fused().into_iter().collect()
    }

    /// How far the best passage's fitted logit leads the second best's in
    /// `ranked` (this stage's [`Search::ranked`]), when that is at least
    /// `skip_judge_gap`: the exploration is sure, and a cascade need not
    /// ask its judge. `None` without a fitted fusion (its scores are not
    /// calibrated) or with fewer than two passages.
    pub(super) fn sure_lead(&self, ranked: &[(NodeId, f64)]) -> Option<f64> {
        self.fitted?;
        let logits = ranked.iter().map(|(_, p)| logit(*p));
        crate::fusion::lead(logits).filter(|lead| *lead >= self.cfg.skip_gap())
    }

    /// The judged passages with their fused scores, best first.
    pub(super) fn ranked(&mut self) -> Vec<(NodeId, f64)> {
        let mut passages = self.fused();
        passages.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        passages
    }

    /// The next stage's lists: `ranked` (an earlier stage's order) in place
    /// of the lexical list's passages, and each document's best passage in
    /// that order in place of its documents.
    pub(super) fn seed(&mut self, ranked: &[NodeId]) {
        self.seeded = true;
        let mut seen = HashSet::new();
        self.by_document = ranked
            .iter()
            .copied()
            .filter(|p| self.nav.document_of(*p).is_some_and(|d| seen.insert(d)))
            .collect();
        self.lexical = ranked.to_vec();
    }

    /// `top` is k: more rounds past the budget until `returned_passages`
    /// passages are judged or nothing is left to judge.
    async fn widen(&mut self) -> Result<()> {
        let wanted = self.nav.config.returned_passages();
        loop {
            let mut judged: Vec<(NodeId, f64)> = self
                .judged
                .keys()
                .filter(|id| self.nav.is_passage(**id))
                .map(|id| (*id, 0.0))
                .collect();
            self.nav.collapse(&mut judged);
            let have = judged.len();
            if have >= wanted {
                return Ok(());
            }
            // Room for the calibration anchor in each slate.
            let missing = wanted - have;
            let share = missing + missing.div_ceil(self.slate_size.max(2) - 1);
            if !self.round(share).await? {
                return Ok(());
            }
        }
    }

    /// One round: as many candidates as `share` judgments hold (anchor
    /// counted), picked, judged through the session, taken in. `false`
    /// when nothing was left to judge.
    async fn round(&mut self, share: usize) -> Result<bool> {
        let wanted = self.session.round_capacity(share, self.slate_size);
        let picks = self.pick(wanted);
        if picks.is_empty() {
            return Ok(false);
        }
        let candidates: Vec<Candidate> = picks.iter().map(|p| self.nav.candidate(p.node)).collect();
        let started = Instant::now();
        let scored = self
            .session
            .judge_round(self.query, &candidates, self.slate_size)
            .await
            .map_err(|e| Error::Judge {
                level: self.rounds.len() + 1,
                kind: crate::Judging::BestFirstRound,
                batch: e.call,
                source: e.source,
            })?;
        if self.rounds.is_empty() && self.session.calibrates() {
            self.anchor = Some(picks[0].node);
        }
        let judge_ms = started.elapsed().as_secs_f64() * 1000.0;
        let lexical = picks
            .iter()
            .filter(|p| lexical_order(p.route).is_some())
            .count();
        tracing::debug!(
            round = self.rounds.len() + 1,
            picked = picks.len(),
            lexical,
            graph = picks.len() - lexical,
            judge_ms,
            "best-first round judged"
        );
        self.record(&picks, scored);
        if let Some(round) = self.rounds.last_mut() {
            round.judge_ms = judge_ms;
        }
        self.nav.check_cost(&self.session, self.rounds.len())?;
        Ok(true)
    }

    /// Up to `n` candidates: the lexical list and the graph frontier
    /// sharing the slots ([`Split`]), each filling for the other when it
    /// runs dry.
    fn pick(&mut self, n: usize) -> Vec<Pick> {
        let mut graph = self.graph_frontier(n);
        graph.reverse();
        let mut out: Vec<Pick> = Vec::with_capacity(n);
        let mut chosen: HashSet<NodeId> = HashSet::new();
        while out.len() < n {
            let graph_slot = self.graph_split.second(self.cfg.adaptive_split);
            let next = if graph_slot {
                graph.pop().or_else(|| self.next_lexical(&chosen))
            } else {
                self.next_lexical(&chosen).or_else(|| graph.pop())
            };
            match next {
                Some(p) if chosen.insert(p.node) => out.push(p),
                Some(_) => {}
                None => break,
            }
        }
        out
    }

    /// The passages of the BM25 documents the filter lets through, best
    /// lexical score first (equal scores: the better document first): the
    /// lexical route's order; with the adaptive split, also each
    /// document's best passage in the documents' order (reach: a new
    /// document per slot, where the first order may read on in one). Each
    /// document gives at most its first `LEXICAL_PASSAGES / documents`
    /// passages, so a query scores a bounded number however long they are.
    pub(super) fn order_lexical(&mut self, docs: &[NodeId]) {
        let per_document = (LEXICAL_PASSAGES / docs.len().max(1)).max(1);
        let mut passages: Vec<(NodeId, usize)> = docs
            .iter()
            .enumerate()
            .flat_map(|(rank, d)| {
                let children = self.nav.tree.children(*d);
                children[..children.len().min(per_document)]
                    .iter()
                    .map(move |p| (*p, rank))
            })
            .filter(|(p, _)| self.scope.allows(*p))
            .collect();
        let ids: Vec<NodeId> = passages.iter().map(|(p, _)| *p).collect();
        self.score_passages(&ids);
        if self.cfg.adaptive_split {
            let mut best: Vec<Option<(NodeId, f64)>> = vec![None; docs.len()];
            for (p, rank) in &passages {
                let score = self.lex_of(*p);
                if let Some(slot) = best.get_mut(*rank) {
                    if slot.is_none_or(|(_, b)| score > b) {
                        *slot = Some((*p, score));
                    }
                }
            }
            self.by_document = best.into_iter().flatten().map(|(p, _)| p).collect();
        }
        passages.sort_by(|a, b| {
            self.lex_of(b.0)
                .total_cmp(&self.lex_of(a.0))
                .then(a.1.cmp(&b.1))
                .then(a.0.cmp(&b.0))
        });
        self.lexical = passages.into_iter().map(|(p, _)| p).collect();
    }

    /// The next passage of the lexical route not judged nor chosen: from
    /// the order whose turn it is ([`Split`]), else from the other.
    fn next_lexical(&mut self, chosen: &HashSet<NodeId>) -> Option<Pick> {
        let orders = if self.order_split.second(self.cfg.adaptive_split) {
            [Route::LexicalDocument, Route::Lexical]
        } else {
            [Route::Lexical, Route::LexicalDocument]
        };
        orders
            .into_iter()
            .find_map(|route| self.next_in_order(route, chosen))
    }

    /// The next passage of one lexical order not judged nor chosen.
    fn next_in_order(&mut self, route: Route, chosen: &HashSet<NodeId>) -> Option<Pick> {
        let (list, next) = match route {
            Route::LexicalDocument => (&self.by_document, &mut self.by_document_next),
            _ => (&self.lexical, &mut self.lexical_next),
        };
        while let Some(&node) = list.get(*next) {
            *next += 1;
            if self.judged.contains_key(&node) || chosen.contains(&node) {
                continue;
            }
            return Some(Pick {
                node,
                route,
                via: None,
                priority: None,
            });
        }
        None
    }

    fn lex_of(&self, passage: NodeId) -> f64 {
        self.lex.get(&passage).copied().unwrap_or(0.0)
    }

    /// Lexical scores for the `passages` not scored yet (one call).
    fn score_passages(&mut self, passages: &[NodeId]) {
        let todo: Vec<NodeId> = passages
            .iter()
            .copied()
            .filter(|p| !self.lex.contains_key(p))
            .collect();
        if todo.is_empty() {
            return;
        }
        let labels: Vec<String> = todo.iter().map(|p| self.nav.label(*p)).collect();
        let scores = treenav_text::score::bm25(
            &self.nav.stats,
            self.query,
            labels
                .iter()
                .map(|l| (l.as_str(), treenav_text::fingerprint(l.as_bytes()))),
            treenav_text::score::K1,
            treenav_text::score::B,
        );
        for (p, s) in todo.into_iter().zip(scores) {
            self.lex.insert(p, s);
        }
    }

    /// Own score: judged score raised to the best judged beneath.
    fn own(&self, id: NodeId) -> f64 {
        let judged = self.judged.get(&id).copied().unwrap_or(0.0);
        let below = self.evidence.get(&id).copied().unwrap_or(0.0);
        judged.max(below)
    }

    /// `path(n) = α · own(n) + (1 − α) · path(parent(n))`; clusters count
    /// only with `clusters` on.
    fn path(&self, id: NodeId) -> f64 {
        let a = self.cfg.path_weight;
        let mut total = 0.0;
        let mut weight = 1.0;
        let mut current = Some(id);
        while let Some(n) = current {
            // The shape's level and parent: no node record is decoded.
            let counts = match self.nav.tree.level_of(n) {
                None => break,
                Some(LevelKind::Cluster) => self.cfg.clusters,
                Some(_) => true,
            };
            if counts {
                total += weight * a * self.own(n);
            }
            weight *= 1.0 - a;
            current = self.nav.tree.parent(n);
        }
        total
    }

    /// A touched document's prior, the route it came by and the node it
    /// came via: another of its passages judged gives at least β times that
    /// score, via `doc` (else via the cluster that touched it); a
    /// neighbour's prior wins when higher.
    fn document_prior(&self, doc: NodeId) -> (f64, Route, Option<NodeId>) {
        let path = self.path(doc);
        let (tree_prior, via) = match self.evidence.get(&doc) {
            Some(e) => (path.max(self.cfg.sibling_weight * e), Some(doc)),
            None => (path, self.cluster_via.get(&doc).copied()),
        };
        let (mut prior, mut route, mut via) = (tree_prior, Route::Evidence, via);
        if let Some((p, src)) = self.neighbour_prior.get(&doc) {
            if *p > prior {
                (prior, route, via) = (*p, Route::Neighbour, Some(*src));
            }
        }
        (prior, route, via)
    }

    /// The graph frontier's best `n` candidates, best first.
    fn graph_frontier(&mut self, n: usize) -> Vec<Pick> {
        if n == 0 {
            return Vec::new();
        }
        let docs = self.touched.clone();
        let mut open: Vec<(Pick, f64, f64)> = Vec::new();
        for doc in &docs {
            let (prior, route, via) = self.document_prior(*doc);
            // Within a document, its passages in lexical order (when
            // scored; else in document order), the j-th of m at
            // `prior · (1 − ½ · j / m)`; within a priority, the document
            // BM25 likes best first.
            let doc_lex = self.doc_lex.get(doc).copied().unwrap_or(0.0);
            let mut unread: Vec<NodeId> = self
                .nav
                .tree
                .children(*doc)
                .iter()
                .copied()
                .filter(|p| !self.judged.contains_key(p) && self.scope.allows(*p))
                .collect();
            unread.sort_by(|a, b| self.lex_of(*b).total_cmp(&self.lex_of(*a)).then(a.cmp(b)));
            let m = unread.len() as f64;
            for (j, p) in unread.into_iter().take(n).enumerate() {
                let priority = prior * (1.0 - 0.5 * j as f64 / m);
                let pick = Pick {
                    node: p,
                    route,
                    via,
                    priority: Some(priority),
                };
                open.push((pick, priority, doc_lex));
            }
        }
        for card in &self.cards {
            let prior = self
                .nav
                .tree
                .parent(*card)
                .map(|p| self.path(p))
                .unwrap_or(0.0);
            let pick = Pick {
                node: *card,
                route: Route::Tree,
                via: None,
                priority: Some(prior),
            };
            open.push((pick, prior, 0.0));
        }
        let cmp = |a: &(Pick, f64, f64), b: &(Pick, f64, f64)| {
            b.1.total_cmp(&a.1)
                .then(b.2.total_cmp(&a.2))
                .then(a.0.node.cmp(&b.0.node))
        };
        let n = n.min(open.len());
        if n > 0 && n < open.len() {
            open.select_nth_unstable_by(n - 1, cmp);
            open.truncate(n);
        }
        open.sort_by(cmp);
        open.into_iter().map(|(p, _, _)| p).collect()
    }

    /// Records a round's calibrated scores: raises evidence, touches
    /// neighbours and cluster members, opens judged cards, and writes the
    /// round's trace (the anchor shown as a reference in its slates).
    fn record(&mut self, picks: &[Pick], scored: Scored) {
        let mut candidates = Vec::with_capacity(scored.shown);
        // Sums of judged scores: lexical / graph, passage / document order.
        let mut sums = [(0.0, 0usize); 2];
        let mut orders = [(0.0, 0usize); 2];
        for (b, call) in scored.calls.iter().enumerate() {
            for i in call.own.clone() {
                let score = scored.scores[i];
                let order = lexical_order(picks[i].route);
                let side = &mut sums[usize::from(order.is_none())];
                *side = (side.0 + score, side.1 + 1);
                if let Some(o) = order {
                    orders[o] = (orders[o].0 + score, orders[o].1 + 1);
                }
                self.absorb(picks[i].node, score);
                candidates.push(self.trace_candidate(&picks[i], score, b, call.fallback));
            }
            for p in &call.references {
                if let Some(node) = self.anchor {
                    let reference = Pick {
                        node,
                        route: Route::Reference,
                        via: None,
                        priority: None,
                    };
                    candidates.push(self.trace_candidate(&reference, *p, b, call.fallback));
                }
            }
        }
        self.graph_split.observe(sums);
        self.order_split.observe(orders);
        self.left = self.left.saturating_sub(scored.shown);
        self.rounds.push(RoundTrace {
            round: self.rounds.len() + 1,
            stage: self.stage,
            slates: scored.calls.len(),
            candidates,
            budget_left: self.left,
            usage: scored.usage,
            judge_ms: 0.0,
        });
    }

    fn trace_candidate(
        &self,
        pick: &Pick,
        probability: f64,
        slate: usize,
        fallback: bool,
    ) -> TraceCandidate {
        TraceCandidate {
            node: pick.node,
            label: cut(&self.nav.label(pick.node), 300),
            probability,
            kept: false,
            route: match (self.seeded, lexical_order(pick.route)) {
                (true, Some(_)) => Route::Explored,
                _ => pick.route,
            },
            batch: slate,
            fallback,
            via: pick.via,
            priority: pick.priority,
        }
    }

    /// Takes in one judged score: evidence up the path, then what it opens.
    fn absorb(&mut self, node: NodeId, score: f64) {
        self.judged.insert(node, score);
        let tree = &self.nav.tree;
        let mut up = tree.parent(node);
        while let Some(id) = up {
            if id == tree.root() {
                break;
            }
            let e = self.evidence.entry(id).or_insert(0.0);
            *e = e.max(score);
            up = tree.parent(id);
        }
        match tree.level_of(node) {
            Some(LevelKind::Passage) => {
                if let Some(doc) = tree.parent(node) {
                    self.opened_document(doc);
                }
            }
            Some(LevelKind::Cluster) => self.opened_card(node),
            _ => {}
        }
    }

    /// Puts a document's passages on the graph frontier (if in scope).
    fn touch(&mut self, doc: NodeId) {
        if self.scope.allows(doc) && self.touched_set.insert(doc) {
            self.touched.push(doc);
        }
    }

    /// A passage of `doc` was judged: its other passages, its neighbours
    /// and (with clusters) its leaf cluster's members join the frontier.
    fn opened_document(&mut self, doc: NodeId) {
        self.touch(doc);
        let own = self.own(doc);
        if self.neighbours {
            let tree = self.nav.tree.clone();
            let list = tree.neighbours(doc);
            for (rank, n) in list.iter().enumerate() {
                // Nearest first: the weight falls from γ to γ/2 down the list.
                let decay = 1.0 - 0.5 * rank as f64 / list.len() as f64;
                let prior = self.cfg.neighbour_weight * own * decay;
                let slot = self.neighbour_prior.entry(*n).or_insert((prior, doc));
                if prior > slot.0 {
                    *slot = (prior, doc);
                }
                self.touch(*n);
            }
        }
        if self.cfg.clusters {
            if let Some(cluster) = self.nav.tree.parent(doc) {
                if cluster != self.nav.tree.root() {
                    let members: Vec<NodeId> = self.nav.tree.children(cluster).to_vec();
                    for m in members {
                        self.cluster_via.entry(m).or_insert(cluster);
                        self.touch(m);
                    }
                }
            }
        }
    }

    /// A card was judged: its children join the frontier (cards stay cards,
    /// documents join with their passages).
    fn opened_card(&mut self, card: NodeId) {
        self.cards.retain(|c| *c != card);
        let children: Vec<NodeId> = self.nav.tree.children(card).to_vec();
        for c in children {
            match self.nav.tree.level_of(c) {
                _ if !self.scope.allows(c) => {}
                Some(LevelKind::Cluster)
                    if self.cfg.cards && !self.judged.contains_key(&c) =>
                {
                    self.cards.push(c);
                }
                Some(LevelKind::Document) => {
                    self.cluster_via.entry(c).or_insert(card);
                    self.touch(c);
                }
                _ => {}
            }
        }
    }
}

/// Which of the lexical list's orders a route is (0: passages, 1:
/// documents); `None` for the graph's routes.
fn lexical_order(route: Route) -> Option<usize> {
    match route {
        Route::Lexical => Some(0),
        Route::LexicalDocument => Some(1),
        _ => None,
    }
}

/// Two sources sharing a round's slots: the lexical list and the graph
/// frontier, or, within the lexical list, its passage and document orders.
/// Adaptive (the default), each slot goes by the share [`second_share`]
/// gives the second source from the last round's mean judged scores;
/// otherwise one for one (GAR).
#[derive(Debug, Default)]
struct Split {
    /// Mean judged score of the last round's picks from each source.
    means: [Option<f64>; 2],
    /// Slots owed to the second source (adaptive).
    credit: f64,
    /// The second source's turn (one for one).
    turn: bool,
}

impl Split {
    /// Whether the next slot goes to the second source.
    fn second(&mut self, adaptive: bool) -> bool {
        if adaptive {
            self.credit += second_share(self.means);
            let slot = self.credit >= 1.0;
            if slot {
                self.credit -= 1.0;
            }
            slot
        } else {
            let slot = self.turn;
            self.turn = !slot;
            slot
        }
    }

    /// Takes in a round's (sum, count) of judged scores per source; a
    /// source the round did not try keeps its last mean.
    fn observe(&mut self, sums: [(f64, usize); 2]) {
        for (mean, (sum, n)) in self.means.iter_mut().zip(sums) {
            if n > 0 {
                *mean = Some(sum / n as f64);
            }
        }
    }
}

/// The second source's share of the next round's slots, from the last
/// mean judged score of each source's picks: one half until both have been
/// judged, then the second's mean over both (smoothed), within 20–80% so
/// neither source stops.
fn second_share(means: [Option<f64>; 2]) -> f64 {
    match means {
        [Some(first), Some(second)] => ((second + 0.05) / (second + first + 0.1)).clamp(0.2, 0.8),
        _ => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::second_share;

    #[test]
    fn a_source_gets_slots_as_its_picks_score() {
        assert_eq!(second_share([None, None]), 0.5);
        assert_eq!(second_share([Some(0.9), None]), 0.5);
        assert!((second_share([Some(0.4), Some(0.4)]) - 0.5).abs() < 1e-12);
        // A strong lexical list keeps most slots, never all of them.
        assert_eq!(second_share([Some(0.95), Some(0.05)]), 0.2);
        assert_eq!(second_share([Some(0.0), Some(0.9)]), 0.8);
        let mid = second_share([Some(0.3), Some(0.6)]);
        assert!(mid > 0.5 && mid < 0.8, "{mid}");
    }
}
