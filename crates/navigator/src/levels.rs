//! The `levels` strategy (the paper's walk): judge a level in shared-context
//! batches, keep the best, expand.

use crate::config::OnJudgeError;
use crate::navigate::{cut, Navigator};
use crate::view::Probabilities;
use crate::{Error, LevelTrace, Result, Retrieval, Route, Trace, TraceCandidate};
use std::collections::{HashMap, HashSet};
use std::time::Instant;
use treenav_judge::rank::BatchPlan;
use treenav_judge::{Candidate, Usage};
use treenav_tree::NodeId;

/// One level's judged candidates.
struct Judged {
    scores: Vec<f64>,
    batch_of: Vec<usize>,
    fallback: Vec<bool>,
    batches: usize,
    usage: Usage,
}

impl Navigator {
    pub(crate) async fn walk(&self, query: &str) -> Result<Retrieval> {
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
            let started = Instant::now();
            let judged = self.judge_level(query, &frontier, depth, kind).await?;
            let judge_ms = started.elapsed().as_secs_f64() * 1000.0;
            usage.add(&judged.usage);
            self.check_cost(&usage, depth)?;
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
                    via: None,
                    priority: None,
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
                judge_ms,
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

        let (passages, rerank, shown) = self.finish(query, &kept_passages, &probabilities).await?;
        if let Some(u) = &rerank {
            usage.add(u);
        }
        let candidates_judged = levels.iter().map(|l| l.candidates.len()).sum::<usize>() + shown;
        Ok(Retrieval {
            query: query.to_string(),
            passages,
            trace: Trace {
                strategy: "levels",
                judge_budget: None,
                neighbourhoods: false,
                levels,
                rounds: Vec::new(),
                rerank,
                usage,
                titles_read: docs_shown.len() as f64 / self.documents.max(1) as f64,
                candidates_judged,
                latency_ms: 0.0,
            },
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
