//! The navigator: what the judge sees of each node, and the steps shared by
//! the strategies (the shortlist rerank, ranked passages).

use crate::config::{OnJudgeError, ValidConfig};
pub(crate) use crate::scope::Scope;
use crate::semantic::TreeVectors;
use crate::view::{self, Probabilities};
use crate::{Error, RankedPassage, Result, Retrieval};
use std::sync::Arc;
use std::sync::OnceLock;
use std::time::Instant;
use treenav_judge::{
    Candidate, CorpusStats, Decide, Judge, JudgeOptions, Session, SessionOptions, Usage,
    WithFallback,
};
use treenav_tree::filter::{Allowed, Filter, MetadataTable};
use treenav_tree::lexical::DocumentIndex;
use treenav_tree::{LevelKind, NodeId, NodeKind, Tree};

/// The navigator. Share it (`Arc<Navigator>`) and run queries concurrently.
#[derive(Debug)]
pub struct Navigator {
    pub(crate) tree: Arc<Tree>,
    pub(crate) judge: Arc<dyn Decide>,
    /// The lexical judge (with the tree's statistics) that answers a failed
    /// call when `on_judge_error` is `fallback`.
    pub(crate) fallback: Arc<dyn Decide>,
    pub(crate) config: ValidConfig,
    pub(crate) index: Option<Arc<DocumentIndex>>,
    pub(crate) stats: Arc<CorpusStats>,
    pub(crate) documents: usize,
    /// What the judge sees of each cluster and document node, rendered
    /// when first shown and kept.
    labels: Arc<crate::labels::Labels>,
    /// The documents' metadata, parsed at the first filtered query.
    metadata: Arc<OnceLock<MetadataTable>>,
    /// The scopes of the last filters asked (by their JSON form).
    scopes: Arc<ScopeCache>,
    /// The tree's stored vectors and query embedder, when it has both.
    pub(crate) vectors: Option<Arc<TreeVectors>>,
    /// The embedding judge over them: the cascade's first stage.
    pub(crate) embedding: Option<Arc<dyn Decide>>,
    /// Whether the judge is the embedding judge itself (one stage).
    pub(crate) judge_is_embedding: bool,
    /// The cascade's model fitted for the tree's embedder and this judge,
    /// if there is one (looked up once, here).
    pub(crate) cascade: Option<crate::fusion::FittedCascade>,
}

/// Recent filters' scopes: a filter asked again (a tenant's, a source's)
/// costs no pass over the documents.
type ScopeCache = quick_cache::sync::Cache<String, Arc<Allowed>>;

/// Filters whose scopes are kept (each a bit per node).
const SCOPES_KEPT: usize = 32;

impl Navigator {
    /// A navigator over a loaded tree with a decider (a [`Judge`], or any
    /// [`Decide`]) and a checked config.
    ///
    /// The lexical judge (and the lexical fallback) get the corpus's passage
    /// statistics; with `lexical_entry` on (or under `best-first`, whose
    /// frontier it seeds), a BM25 index over the documents. Both are read
    /// from beside the tree file when it was saved with them (format
    /// version 4), else computed here, once.
    pub fn new(
        tree: Arc<Tree>,
        judge: impl Into<Arc<dyn Decide>>,
        config: ValidConfig,
    ) -> Result<Navigator> {
        let stats = Navigator::corpus_stats(&tree)?;
        Navigator::with_stats(tree, judge, config, stats)
    }

    /// The corpus statistics (IDF) of a tree's passages, which the lexical
    /// judge, the fallback and the lexical entry use: the stored ones, or
    /// computed. Compute once and pass to [`Navigator::with_stats`] when
    /// building several navigators over one tree.
    pub fn corpus_stats(tree: &Tree) -> Result<Arc<CorpusStats>> {
        match tree.lexical() {
            Some(lexical) => Ok(lexical.stats.clone()),
            None => tree.passage_stats().map(Arc::new).map_err(Error::TreeData),
        }
    }

    /// The BM25 index over a tree's documents: the stored one, or built.
    fn document_index(tree: &Tree) -> Result<Arc<DocumentIndex>> {
        match tree.lexical() {
            Some(lexical) => Ok(lexical.index.clone()),
            None => tree.document_index().map(Arc::new).map_err(Error::TreeData),
        }
    }

    /// [`Navigator::new`] with the tree's statistics already computed
    /// ([`Navigator::corpus_stats`]).
    pub fn with_stats(
        tree: Arc<Tree>,
        judge: impl Into<Arc<dyn Decide>>,
        config: ValidConfig,
        stats: Arc<CorpusStats>,
    ) -> Result<Navigator> {
        let documents = tree.documents().count();
        if documents == 0 || tree.passages().next().is_none() {
            return Err(Error::Tree("the tree has no document or passage".into()));
        }
        let judge: Arc<dyn Decide> = judge.into();
        let judge = judge
            .with_corpus_stats(stats.clone())
            .map_err(Error::JudgeSetup)?
            .unwrap_or(judge);
        let fallback: Arc<dyn Decide> = Arc::new(
            Judge::new(&JudgeOptions::default())
                .and_then(|j| j.with_corpus_stats(stats.clone()))
                .map_err(Error::JudgeSetup)?,
        );
        let vectors = tree_vectors(&tree, config.best_first().tfidf_vectors);
        let embedding = match &vectors {
            Some(v) => Judge::new(&JudgeOptions::for_tree())
                .map_err(Error::JudgeSetup)?
                .with_vectors(v.clone())
                .map(|j| Arc::new(j) as Arc<dyn Decide>),
            None => None,
        };
        let judge_is_embedding = judge.uses_vectors();
        let judge = match (judge_is_embedding, &vectors) {
            (false, _) => judge,
            (true, Some(v)) => judge.with_vectors(v.clone()).unwrap_or(judge),
            (true, None) => {
                tracing::info!(
                    "the embedding judge needs a tree built with a semantic embedder available here (not tfidf); judging with the lexical judge"
                );
                fallback.clone()
            }
        };
        let judge_is_embedding = judge_is_embedding && vectors.is_some();
        let cascade = vectors
            .as_ref()
            .zip(judge.backend())
            .and_then(|(v, kind)| v.fitted_cascade(kind));
        let mut navigator = Navigator {
            tree,
            judge,
            fallback,
            config,
            index: None,
            stats,
            documents,
            labels: Arc::default(),
            metadata: Arc::new(OnceLock::new()),
            scopes: Arc::new(ScopeCache::new(SCOPES_KEPT)),
            vectors,
            embedding,
            judge_is_embedding,
            cascade,
        };
        if navigator.wants_index() {
            navigator.index = Some(Navigator::document_index(&navigator.tree)?);
        }
        navigator.labels = navigator.empty_labels();
        Ok(navigator)
    }

    /// The same navigator (tree, judge, statistics) with other settings,
    /// sharing what both need: the rendered labels when the card and
    /// document views are unchanged, and the BM25 index. Cheap; a service
    /// calls it per request that overrides a setting. Fails only when the
    /// new settings need a document index that cannot be built.
    pub fn reconfigured(&self, config: ValidConfig) -> Result<Navigator> {
        let (old, new) = (self.config.settings(), config.settings());
        let same_views =
            old.card_titles == new.card_titles && old.lead_sentences == new.lead_sentences;
        let mut navigator = Navigator {
            tree: self.tree.clone(),
            judge: self.judge.clone(),
            fallback: self.fallback.clone(),
            config,
            index: self.index.clone(),
            stats: self.stats.clone(),
            documents: self.documents,
            labels: self.labels.clone(),
            metadata: self.metadata.clone(),
            scopes: self.scopes.clone(),
            vectors: self.vectors.clone(),
            embedding: self.embedding.clone(),
            judge_is_embedding: self.judge_is_embedding,
            cascade: self.cascade,
        };
        if navigator.index.is_none() && navigator.wants_index() {
            navigator.index = Some(Navigator::document_index(&navigator.tree)?);
        }
        if !same_views {
            navigator.labels = navigator.empty_labels();
        }
        Ok(navigator)
    }

    /// The cascade's first stage for a query, when there is one: the
    /// embedding judge itself, or the embedding judge before another
    /// judge when `explore_budget` is above 0.
    pub(crate) fn explorer(&self) -> Option<Arc<dyn Decide>> {
        if self.judge_is_embedding {
            return Some(self.judge.clone());
        }
        match self.config.best_first().explore_budget {
            0 => None,
            _ => self.embedding.clone(),
        }
    }

    /// Whether a judge stage follows the exploration.
    pub(crate) fn cascade(&self) -> bool {
        !self.judge_is_embedding
    }

    /// The exploration's budget: `explore_budget`, or the judge budget
    /// when the embedding judge is the judge and no exploration budget is set.
    pub(crate) fn explore_budget(&self) -> usize {
        let cfg = self.config.best_first();
        match (self.judge_is_embedding, cfg.explore_budget) {
            (true, 0) => cfg.judge_budget,
            (_, n) => n,
        }
    }

    /// Whether a query would embed itself (the tree has vectors and an
    /// embedder here, and the embedding judge takes part).
    pub fn embeds_queries(&self) -> bool {
        self.explorer().is_some() && self.vectors.is_some()
    }

    /// Whether the settings use the BM25 index over documents.
    fn wants_index(&self) -> bool {
        self.config.settings().lexical_entry > 0
            || self.config.strategy().profile().reads_document_index
    }

    /// A label cache with nothing rendered yet (room for every node).
    fn empty_labels(&self) -> Arc<crate::labels::Labels> {
        Arc::new(crate::labels::Labels::new(self.tree.len()))
    }

    /// A passage node's id (`None` for another kind of node).
    pub fn passage_id(&self, node: NodeId) -> Option<&str> {
        match self.tree.get(node).map(|n| &n.kind) {
            Some(NodeKind::Passage { id, .. }) => Some(id),
            _ => None,
        }
    }

    /// The tree navigated.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    /// The settings.
    pub fn config(&self) -> &ValidConfig {
        &self.config
    }

    /// Retrieves the passages that answer `query`, with the trace of how.
    /// An empty (or whitespace-only) query is [`Error::EmptyQuery`].
    pub async fn retrieve(&self, query: &str) -> Result<Retrieval> {
        self.retrieve_filtered(query, &Filter::none()).await
    }

    /// [`Navigator::retrieve`] within the documents `filter` lets through:
    /// no other passage, document or cluster is judged or returned. A
    /// filter nothing passes gives an empty result.
    pub async fn retrieve_filtered(&self, query: &str, filter: &Filter) -> Result<Retrieval> {
        if query.trim().is_empty() {
            return Err(Error::EmptyQuery);
        }
        let start = Instant::now();
        let work = async {
            let scope = self.scope(filter).await?;
            match scope.any() {
                false => Ok(self.nothing_passes(query)),
                true => self.config.strategy().run(self, query, &scope).await,
            }
        };
        let mut out = match self.config.deadline() {
            None => work.await?,
            Some(limit) => tokio::time::timeout(limit, work)
                .await
                .map_err(|_| Error::Deadline(limit.as_secs_f64()))??,
        };
        out.trace.latency_ms = start.elapsed().as_secs_f64() * 1000.0;
        tracing::debug!(
            strategy = out.trace.strategy.name(),
            passages = out.passages.len(),
            exhausted = out.exhausted,
            judged = out.trace.candidates_judged,
            calls = out.trace.usage.calls,
            input_tokens = out.trace.usage.input_tokens,
            latency_ms = out.trace.latency_ms,
            "query answered"
        );
        Ok(out)
    }

    /// The scope of a filter: everything for the empty one. A filter is
    /// checked against every document (the metadata parsed at the first
    /// filtered query), on the blocking pool: a large tree's pass never
    /// holds up the runtime's workers, and the query's deadline covers it.
    /// The last [`SCOPES_KEPT`] filters' scopes are kept.
    async fn scope(&self, filter: &Filter) -> Result<Scope> {
        if filter.is_empty() {
            return Ok(Scope::default());
        }
        let key = filter.to_string();
        if let Some(allowed) = self.scopes.get(&key) {
            return Ok(Scope(Some(allowed)));
        }
        let (tree, table, filter) = (self.tree.clone(), self.metadata.clone(), filter.clone());
        let allowed = tokio::task::spawn_blocking(move || {
            let table = table.get_or_init(|| MetadataTable::of(&tree));
            table.check_fields(&filter)?;
            Ok::<_, treenav_tree::filter::FilterError>(Arc::new(table.allowed(&tree, &filter)))
        })
        .await
        .map_err(|e| Error::Tree(format!("the metadata filter stopped: {e}")))?
        .map_err(Error::Filter)?;
        self.scopes.insert(key, allowed.clone());
        Ok(Scope(Some(allowed)))
    }

    /// The answer when the filter lets no passage through: no passage,
    /// nothing judged.
    fn nothing_passes(&self, query: &str) -> Retrieval {
        Retrieval {
            query: query.to_string(),
            passages: Vec::new(),
            exhausted: true,
            trace: crate::Trace {
                strategy: self.config.strategy(),
                judge: self.judge.kind(),
                judge_budget: None,
                explore_budget: None,
                judge_skipped: None,
                judge_weight: None,
                neighbourhoods: false,
                levels: Vec::new(),
                rounds: Vec::new(),
                rerank: None,
                usage: Usage::default(),
                titles_read: 0.0,
                candidates_judged: 0,
                latency_ms: 0.0,
            },
            evidence: Vec::new(),
        }
    }

    /// What the judge sees of a node: a cluster's card, a document's view,
    /// a passage with its document's title (empty for the root or an
    /// unknown id).
    pub fn label(&self, id: NodeId) -> String {
        let cached = matches!(
            self.tree.level_of(id),
            Some(LevelKind::Cluster | LevelKind::Document)
        );
        let kept = cached
            .then(|| {
                self.labels
                    .get_or_render(id.index(), || self.render_label(id))
            })
            .flatten();
        match kept {
            Some(label) => label.to_string(),
            None => self.render_label(id),
        }
    }

    fn render_label(&self, id: NodeId) -> String {
        let s = self.config.settings();
        match self.tree.get(id).map(|n| &n.kind) {
            Some(NodeKind::Cluster { .. }) => view::card(&self.tree, id, s.card_titles),
            Some(NodeKind::Document { .. }) => view::document(&self.tree, id, s.lead_sentences),
            Some(NodeKind::Passage { .. }) => match self.tree.passage_text(id) {
                Ok(text) => view::passage(&self.tree, id, &text),
                Err(e) => {
                    tracing::error!(error = %e, "cannot read a passage's text");
                    String::new()
                }
            },
            Some(NodeKind::Root) => String::new(),
            None => String::new(),
        }
    }

    pub(crate) fn candidate(&self, id: NodeId) -> Candidate {
        let shown = crate::semantic::candidate_id(&self.tree, id);
        if let Some(vectors) = &self.vectors {
            vectors.remember(&shown, id);
        }
        Candidate::new(shown, self.label(id))
    }

    /// The decider a query asks: the judge, backed by the lexical fallback
    /// when `on_judge_error` is `fallback`.
    pub(crate) fn decider(&self) -> Arc<dyn Decide> {
        match self.config.settings().on_judge_error {
            OnJudgeError::Fallback => {
                Arc::new(WithFallback::new(self.judge.clone(), self.fallback.clone()))
            }
            OnJudgeError::Fail => self.judge.clone(),
        }
    }

    /// A decision session for one query with these settings.
    pub(crate) fn session<'d>(&self, decider: &'d dyn Decide) -> Session<'d> {
        let s = self.config.settings();
        Session::new(
            decider,
            SessionOptions {
                batch_size: s.batch_size,
                calibration: s.calibration,
                shortlist: s.shortlist,
                max_cost_usd: s.max_cost_usd,
            },
        )
    }

    /// Keeps at most `per_document` passages of each document in a list,
    /// best first (passages of no document are kept).
    pub(crate) fn collapse(&self, passages: &mut Vec<(NodeId, f64)>) {
        let cap = self.config.per_document();
        if cap == usize::MAX {
            return;
        }
        let mut seen: std::collections::HashMap<NodeId, usize> = Default::default();
        passages.retain(|(id, _)| match self.tree.parent(*id) {
            Some(doc) => {
                let n = seen.entry(doc).or_insert(0);
                *n += 1;
                *n <= cap
            }
            None => true,
        });
    }

    /// Stops with [`Error::CostCap`] once the session is over the cost cap.
    pub(crate) fn check_cost(&self, session: &Session<'_>, level: usize) -> Result<()> {
        match session.over_cost() {
            Some((cap, spent)) => Err(Error::CostCap { cap, spent, level }),
            None => Ok(()),
        }
    }

    /// Turns kept passages (best first) into ranked passages and reranks the
    /// shortlist with one multiple-choice question through the session (a
    /// pointwise decider's order by score stands). Returns the passages and
    /// the rerank's usage.
    pub(crate) async fn finish(
        &self,
        session: &mut Session<'_>,
        query: &str,
        kept: &[(NodeId, f64)],
        probabilities: &Probabilities,
    ) -> Result<(Vec<RankedPassage>, Option<Usage>)> {
        let mut passages: Vec<RankedPassage> = kept
            .iter()
            .map(|(id, p)| self.ranked(*id, *p, probabilities))
            .collect::<Result<Vec<Option<RankedPassage>>>>()?
            .into_iter()
            .flatten()
            .collect();
        let candidates: Vec<Candidate> = passages
            .iter()
            .map(|p| {
                if let Some(vectors) = &self.vectors {
                    vectors.remember(&p.id, p.node);
                }
                Candidate::new(p.id.clone(), view::passage(&self.tree, p.node, &p.text))
            })
            .collect();
        let scores: Vec<f64> = passages.iter().map(|p| p.score).collect();
        let mut order: Vec<usize> = (0..passages.len()).collect();
        let choice = session
            .shortlist(query, &candidates, &mut order, &scores)
            .await
            .map_err(Error::Rerank)?;
        let Some(choice) = choice else {
            return Ok((passages, None));
        };
        tracing::debug!(
            shortlist = choice.probabilities.len(),
            "shortlist reranked by one multiple-choice question"
        );
        // The shortlist decides which of its passages comes first; the
        // scores it holds are dealt out again in rank order, so `score`
        // stays one probability scale, non-increasing down the list.
        let mut head: Vec<f64> = order
            .iter()
            .take(choice.probabilities.len())
            .map(|i| passages[*i].score)
            .collect();
        head.sort_by(|a, b| b.total_cmp(a));
        for ((i, p), s) in order.iter().zip(&choice.probabilities).zip(head) {
            passages[*i].rerank_probability = Some(*p);
            passages[*i].score = s;
        }
        let mut slots: Vec<Option<RankedPassage>> = passages.into_iter().map(Some).collect();
        let passages = order.iter().filter_map(|i| slots[*i].take()).collect();
        Ok((passages, Some(choice.usage)))
    }

    /// A kept passage with its ordering score; its probability is the
    /// judge's (from `probabilities`, else the score).
    fn ranked(
        &self,
        id: NodeId,
        score: f64,
        probabilities: &Probabilities,
    ) -> Result<Option<RankedPassage>> {
        let Some(node) = self.tree.get(id) else {
            return Ok(None);
        };
        let NodeKind::Passage { id: pid, .. } = &node.kind else {
            return Ok(None);
        };
        let Some(parent) = node.parent.and_then(|p| self.tree.get(p)) else {
            return Ok(None);
        };
        let NodeKind::Document { id: doc, title, .. } = &parent.kind else {
            return Ok(None);
        };
        let text = self
            .tree
            .passage_text(id)
            .map_err(Error::TreeData)?
            .into_owned();
        let metadata = match &parent.kind {
            NodeKind::Document {
                metadata: Some(m), ..
            } => match serde_json::from_str(m) {
                Ok(serde_json::Value::Object(o)) => o,
                _ => serde_json::Map::new(),
            },
            _ => serde_json::Map::new(),
        };
        let path = self.tree.path(id);
        let path_probabilities = path
            .iter()
            .skip(1)
            .map(|n| probabilities.get(n).copied().unwrap_or(f64::NAN))
            .collect();
        Ok(Some(RankedPassage {
            id: pid.clone(),
            document_id: doc.clone(),
            title: title.clone(),
            text,
            node: id,
            path,
            path_probabilities,
            probability: probabilities.get(&id).copied().unwrap_or(score),
            score,
            rerank_probability: None,
            metadata,
        }))
    }
}

/// The tree's vectors with its query embedder, when it holds vectors and
/// its embedder can be made here (a missing model is said once, in the log).
fn tree_vectors(tree: &Arc<Tree>, tfidf: bool) -> Option<Arc<TreeVectors>> {
    if !tfidf && tree.meta().embedder.starts_with("tfidf(") {
        return None;
    }
    match treenav_tree::QueryEmbedder::for_tree(tree)? {
        Ok(embedder) => Some(Arc::new(TreeVectors::new(tree.clone(), embedder))),
        Err(e) => {
            tracing::warn!(error = %e, "the tree's embedder cannot be loaded: no embedding judge");
            None
        }
    }
}

/// The first `max` characters of a label, for the trace.
pub(crate) fn cut(text: &str, max: usize) -> String {
    treenav_text::truncate(text, max)
}
