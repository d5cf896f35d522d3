//! The walk: judge a level in shared-context batches, keep the best, expand.

use crate::batch::BatchPlan;
use crate::config::{OnJudgeError, ValidConfig};
use crate::view::{self, LexicalIndex, Probabilities};
use crate::{Error, LevelTrace, RankedPassage, Result, Retrieval, Route, Trace, TraceCandidate};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;
use treenav_judge::{Candidate, CorpusStats, Judge, JudgeOptions, Usage};
use treenav_tree::{NodeId, NodeKind, Tree};

/// The navigator. Share it (`Arc<Navigator>`) and run queries concurrently.
#[derive(Debug)]
pub struct Navigator {
    tree: Arc<Tree>,
    judge: Judge,
    fallback: Judge,
    config: ValidConfig,
    index: Option<LexicalIndex>,
    documents: usize,
    /// What the judge sees of each cluster and document node, built once.
    labels: Vec<Option<Arc<str>>>,
}

/// One level's judged candidates.
struct Judged {
    scores: Vec<f64>,
    batch_of: Vec<usize>,
    fallback: Vec<bool>,
    batches: usize,
    usage: Usage,
}

impl Navigator {
    /// A navigator over a loaded tree with a judge and a checked config.
    ///
    /// The lexical judge (and the lexical fallback) get the corpus's passage
    /// statistics; with `lexical_entry` on, a BM25 index over the documents
    /// is built here, once.
    pub fn new(tree: Arc<Tree>, judge: Judge, config: ValidConfig) -> Result<Navigator> {
        let documents = tree.documents().count();
        if documents == 0 || tree.passages().next().is_none() {
            return Err(Error::Tree("the tree has no document or passage".into()));
        }
        let stats = Arc::new(CorpusStats::from_texts(view::passage_texts(&tree)));
        let judge = judge
            .with_corpus_stats(stats.clone())
            .map_err(|e| Error::Config(e.to_string()))?;
        let fallback = Judge::new(&JudgeOptions::default())
            .and_then(|j| j.with_corpus_stats(stats))
            .map_err(|e| Error::Config(e.to_string()))?;
        let index = (config.settings().lexical_entry > 0).then(|| LexicalIndex::build(&tree));
        let mut navigator = Navigator {
            tree,
            judge,
            fallback,
            config,
            index,
            documents,
            labels: Vec::new(),
        };
        navigator.labels = (0..navigator.tree.len())
            .map(|i| {
                let id = NodeId(i as u32);
                match navigator.tree.get(id).map(|n| &n.kind) {
                    Some(NodeKind::Cluster { .. } | NodeKind::Document { .. }) => {
                        Some(Arc::from(navigator.render_label(id)))
                    }
                    _ => None,
                }
            })
            .collect();
        Ok(navigator)
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
    pub async fn retrieve(&self, query: &str) -> Result<Retrieval> {
        let start = Instant::now();
        let mut out = match self.config.deadline() {
            None => self.walk(query).await?,
            Some(limit) => tokio::time::timeout(limit, self.walk(query))
                .await
                .map_err(|_| Error::Deadline(limit.as_secs_f64()))??,
        };
        out.trace.latency_ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok(out)
    }

    fn label(&self, id: NodeId) -> String {
        match self.labels.get(id.index()) {
            Some(Some(label)) => label.to_string(),
            _ => self.render_label(id),
        }
    }

    fn render_label(&self, id: NodeId) -> String {
        let s = self.config.settings();
        match self.tree.get(id).map(|n| &n.kind) {
            Some(NodeKind::Cluster { .. }) => view::card(&self.tree, id, s.card_titles),
            Some(NodeKind::Document { .. }) => view::document(&self.tree, id, s.lead_sentences),
            Some(NodeKind::Passage { text, .. }) => view::passage(&self.tree, id, text),
            Some(NodeKind::Root) => String::new(),
            None => String::new(),
        }
    }

    fn candidate(&self, id: NodeId) -> Candidate {
        let node_id = match self.tree.get(id).map(|n| &n.kind) {
            Some(NodeKind::Document { id: doc, part, .. }) => match part {
                Some((i, _)) => format!("{doc}#part{i}"),
                None => doc.clone(),
            },
            Some(NodeKind::Passage { id: p, .. }) => p.clone(),
            _ => format!("cluster-{}", id.0),
        };
        Candidate::new(node_id, self.label(id))
    }

    async fn walk(&self, query: &str) -> Result<Retrieval> {
        let s = self.config.settings();
        let mut frontier: Vec<(NodeId, Route)> = self
            .tree
            .children(self.tree.root())
            .iter()
            .map(|c| (*c, Route::Tree))
            .collect();
        let mut probabilities = Probabilities::new();
        let mut levels = Vec::new();
        let mut usage = Usage::default();
        let mut docs_shown: HashSet<NodeId> = HashSet::new();
        let mut depth = 1;
        let kept_passages: Vec<(NodeId, f64)> = loop {
            let kind = frontier
                .first()
                .and_then(|(id, _)| self.tree.get(*id))
                .map(|n| n.kind.name())
                .ok_or_else(|| Error::Tree(format!("level {depth} has no candidate")))?;
            if kind == "document" {
                if let Some(index) = &self.index {
                    let position: HashMap<NodeId, usize> = frontier
                        .iter()
                        .enumerate()
                        .map(|(i, (id, _))| (*id, i))
                        .collect();
                    for id in index.search(query, s.lexical_entry) {
                        match position.get(&id) {
                            Some(&i) => frontier[i].1 = Route::Both,
                            None => frontier.push((id, Route::Lexical)),
                        }
                    }
                }
                docs_shown.extend(frontier.iter().map(|(id, _)| *id));
            }
            let leaf = kind == "passage";
            let budget = if leaf {
                s.returned_passages
            } else {
                self.config.budget(depth - 1)
            };
            let judged = self.judge_level(query, &frontier, depth, kind).await?;
            usage.add(&judged.usage);
            if let Some(cap) = s.max_cost_usd {
                if usage.cost_usd > cap {
                    return Err(Error::CostCap {
                        cap,
                        spent: usage.cost_usd,
                        level: depth,
                    });
                }
            }
            let mut order: Vec<usize> = (0..frontier.len()).collect();
            order.sort_by(|a, b| {
                judged.scores[*b]
                    .total_cmp(&judged.scores[*a])
                    .then(frontier[*a].0.cmp(&frontier[*b].0))
            });
            order.truncate(budget);
            // Documents brought by the lexical entry are always expanded, so
            // navigation can only add recall to flat lexical retrieval.
            let protected: Vec<usize> = (0..frontier.len())
                .filter(|i| {
                    matches!(frontier[*i].1, Route::Lexical | Route::Both) && !order.contains(i)
                })
                .collect();
            let budget = budget + protected.len();
            order.extend(protected);
            let kept: HashSet<usize> = order.iter().copied().collect();
            for (i, (id, _)) in frontier.iter().enumerate() {
                probabilities.insert(*id, judged.scores[i]);
            }
            let candidates = frontier
                .iter()
                .enumerate()
                .map(|(i, (id, route))| TraceCandidate {
                    node: *id,
                    label: cut(&self.label(*id), 300),
                    probability: judged.scores[i],
                    kept: kept.contains(&i),
                    route: *route,
                    batch: judged.batch_of[i],
                    fallback: judged.fallback[i],
                })
                .collect();
            levels.push(LevelTrace {
                depth,
                kind,
                budget,
                kept: order.len(),
                batches: judged.batches,
                candidates,
                usage: judged.usage,
            });
            let chosen: Vec<(NodeId, f64)> = order
                .iter()
                .map(|i| (frontier[*i].0, judged.scores[*i]))
                .collect();
            if leaf {
                break chosen;
            }
            frontier = chosen
                .iter()
                .flat_map(|(id, _)| self.tree.children(*id).iter().map(|c| (*c, Route::Tree)))
                .collect();
            depth += 1;
        };

        let mut passages: Vec<RankedPassage> = kept_passages
            .iter()
            .filter_map(|(id, p)| self.ranked(*id, *p, &probabilities))
            .collect();
        let m = s.shortlist.min(passages.len());
        let mut rerank_usage = None;
        if m >= 2 {
            let shortlist: Vec<Candidate> = passages[..m]
                .iter()
                .map(|p| Candidate::new(p.id.clone(), view::passage(&self.tree, p.node, &p.text)))
                .collect();
            let choice = self
                .judge
                .choose(query, &shortlist)
                .await
                .map_err(Error::Rerank)?;
            usage.add(&choice.usage);
            for (p, prob) in passages[..m].iter_mut().zip(&choice.probabilities) {
                p.rerank_probability = Some(*prob);
            }
            passages[..m].sort_by(|a, b| {
                b.rerank_probability
                    .unwrap_or(0.0)
                    .total_cmp(&a.rerank_probability.unwrap_or(0.0))
                    .then(b.probability.total_cmp(&a.probability))
            });
            rerank_usage = Some(choice.usage);
        }
        let candidates_judged = levels.iter().map(|l| l.candidates.len()).sum();
        Ok(Retrieval {
            query: query.to_string(),
            passages,
            trace: Trace {
                levels,
                rerank: rerank_usage,
                usage,
                titles_read: docs_shown.len() as f64 / self.documents.max(1) as f64,
                candidates_judged,
                latency_ms: 0.0,
            },
        })
    }

    fn ranked(
        &self,
        id: NodeId,
        probability: f64,
        probabilities: &Probabilities,
    ) -> Option<RankedPassage> {
        let node = self.tree.get(id)?;
        let NodeKind::Passage { id: pid, text } = &node.kind else {
            return None;
        };
        let parent = node.parent.and_then(|p| self.tree.get(p))?;
        let NodeKind::Document { id: doc, title, .. } = &parent.kind else {
            return None;
        };
        let path = self.tree.path(id);
        let path_probabilities = path
            .iter()
            .skip(1)
            .map(|n| probabilities.get(n).copied().unwrap_or(f64::NAN))
            .collect();
        Some(RankedPassage {
            id: pid.clone(),
            document_id: doc.clone(),
            title: title.clone(),
            text: text.clone(),
            node: id,
            path,
            path_probabilities,
            probability,
            rerank_probability: None,
        })
    }

    /// Judges one level in batches of `batch_size`, all at once; with
    /// calibration, shows the same references in every batch and shifts each
    /// batch's logits so that the references' mean logit agrees across batches.
    async fn judge_level(
        &self,
        query: &str,
        frontier: &[(NodeId, Route)],
        depth: usize,
        kind: &'static str,
    ) -> Result<Judged> {
        let s = self.config.settings();
        let candidates: Vec<Candidate> =
            frontier.iter().map(|(id, _)| self.candidate(*id)).collect();
        let plan = BatchPlan::new(candidates.len(), s.batch_size, s.calibration);
        let batches: Vec<Vec<Candidate>> = plan
            .batches()
            .iter()
            .map(|members| members.iter().map(|i| candidates[*i].clone()).collect())
            .collect();
        let results =
            futures::future::join_all(batches.iter().map(|shown| self.judge.judge(query, shown)))
                .await;
        let mut usage = Usage::default();
        let mut per_batch: Vec<Vec<f64>> = Vec::with_capacity(batches.len());
        let mut fell_back: Vec<bool> = Vec::with_capacity(batches.len());
        for (b, result) in results.into_iter().enumerate() {
            match result {
                Ok(j) => {
                    usage.add(&j.usage);
                    per_batch.push(j.probabilities);
                    fell_back.push(false);
                }
                Err(source) if s.on_judge_error == OnJudgeError::Fallback => {
                    tracing::warn!(level = depth, batch = b, error = %source, "judge failed; lexical fallback");
                    let j = self
                        .fallback
                        .judge(query, &batches[b])
                        .await
                        .map_err(|source| Error::Judge {
                            level: depth,
                            kind,
                            batch: b,
                            source,
                        })?;
                    usage.add(&j.usage);
                    per_batch.push(j.probabilities);
                    fell_back.push(true);
                }
                Err(source) => {
                    return Err(Error::Judge {
                        level: depth,
                        kind,
                        batch: b,
                        source,
                    })
                }
            }
        }
        let scores = plan.combine(&per_batch).map_err(|(b, msg)| Error::Judge {
            level: depth,
            kind,
            batch: b,
            source: treenav_judge::Error::config(msg),
        })?;
        let batch_of: Vec<usize> = (0..candidates.len()).map(|i| plan.batch_of(i)).collect();
        let fallback = batch_of.iter().map(|b| fell_back[*b]).collect();
        Ok(Judged {
            scores,
            batch_of,
            fallback,
            batches: batches.len(),
            usage,
        })
    }
}

/// The first `max` characters of a label, for the trace.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}
