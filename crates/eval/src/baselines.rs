//! What users would pick instead of the tree, over the same passages.
//!
//! * [`Bm25`]: flat BM25 over every passage (title + text) in tantivy, the
//!   default analyzer (English stemming), k1 = 1.2, b = 0.75.
//! * [`Dense`]: brute-force cosine over passage embeddings (minilm or an
//!   OpenAI-compatible server). A baseline only: the tree never uses it.
//! * [`rrf`]: Reciprocal Rank Fusion of ranked lists (hybrid uses k = 60).
//! * [`judge_rank`]: a list of passages judged by the same judge as the tree
//!   (shared-context batches, calibrated across batches), then the same
//!   shortlist rerank. `rerank` applies it to BM25's top N; `flat` to every
//!   passage.

use crate::Result;
use ndarray::{Array2, ArrayView1};
use std::collections::HashMap;
use treenav_corpus::Corpus;
use treenav_judge::{Candidate, Decide, Session, SessionOptions, Usage};
use treenav_text::analyzer::Analyzer;
use treenav_text::index::{IndexError, LexicalIndex};
use treenav_tree::{Embedder, NodeId, NodeKind, Progress, Tree};

/// Every passage of a corpus, flattened, with its document.
#[derive(Debug, Clone)]
pub struct Collection {
    /// Passage ids.
    pub ids: Vec<String>,
    /// Each passage's document index (into `documents`).
    pub document_of: Vec<usize>,
    /// Document ids.
    pub documents: Vec<String>,
    /// What a model sees of each passage: `Title: text` (as in the tree).
    pub labels: Vec<String>,
    /// Passage index by id.
    pub index: HashMap<String, usize>,
    /// Passages of each document.
    pub passages_of: Vec<Vec<usize>>,
}

impl Collection {
    /// Flattens a corpus.
    pub fn new(corpus: &Corpus) -> Collection {
        let mut c = Collection {
            ids: Vec::new(),
            document_of: Vec::new(),
            documents: Vec::new(),
            labels: Vec::new(),
            index: HashMap::new(),
            passages_of: Vec::new(),
        };
        for (d, doc) in corpus.documents.iter().enumerate() {
            c.documents.push(doc.id.clone());
            let mut mine = Vec::with_capacity(doc.passages.len());
            for p in &doc.passages {
                let i = c.ids.len();
                c.index.insert(p.id.clone(), i);
                c.ids.push(p.id.clone());
                c.document_of.push(d);
                c.labels.push(if doc.title.is_empty() {
                    p.text.clone()
                } else {
                    format!("{}: {}", doc.title, p.text)
                });
                mine.push(i);
            }
            c.passages_of.push(mine);
        }
        c
    }

    /// Number of passages.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether there is no passage.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

/// Flat BM25 over all passages, in tantivy.
#[derive(Debug)]
pub struct Bm25 {
    index: LexicalIndex,
}

impl Bm25 {
    /// Indexes every passage as its label (title + text) with `analyzer`.
    pub fn new(collection: &Collection, analyzer: Analyzer) -> Result<Bm25, IndexError> {
        let labels: Vec<(u64, &str)> = collection
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| (i as u64, l.as_str()))
            .collect();
        Ok(Bm25 {
            index: LexicalIndex::build(None, analyzer, &labels)?,
        })
    }

    /// The top `n` passage indices, best first (ties: lower index first).
    pub fn search(&self, query: &str, n: usize) -> Vec<usize> {
        // An index in memory has nothing to read: a search cannot fail.
        self.index
            .search(query, n)
            .unwrap_or_default()
            .into_iter()
            .map(|(i, _)| i as usize)
            .collect()
    }
}

/// Brute-force dense retrieval over L2-normalised passage embeddings.
#[derive(Debug)]
pub struct Dense {
    embedder: Embedder,
    matrix: Array2<f32>,
}

impl Dense {
    /// Embeds every passage label.
    pub async fn new(
        embedder: Embedder,
        collection: &Collection,
        progress: &dyn Progress,
    ) -> Result<Dense> {
        progress.stage("embed", collection.len() as u64);
        let matrix = embedder.embed(collection.labels.clone(), progress).await?;
        Ok(Dense { embedder, matrix })
    }

    /// The passages' vectors read from `tree` instead of embedded again,
    /// when the tree was embedded by `embedder` and holds a vector for every
    /// passage of the collection (by id); `None` otherwise. Its rows are the
    /// tree's 8-bit ones, dequantised (cosines agree to about two decimals).
    pub fn from_tree(embedder: Embedder, collection: &Collection, tree: &Tree) -> Option<Dense> {
        let vectors = tree.passage_vectors()?;
        if tree.meta().embedder != embedder.describe() {
            return None;
        }
        let node_of: HashMap<&str, NodeId> = tree
            .passages()
            .filter_map(|p| match tree.get(p).map(|n| &n.kind) {
                Some(NodeKind::Passage { id, .. }) => Some((id.as_str(), p)),
                _ => None,
            })
            .collect();
        let mut matrix = Array2::<f32>::zeros((collection.len(), vectors.dims()));
        for (i, id) in collection.ids.iter().enumerate() {
            let row = vectors.get(*node_of.get(id.as_str())?)?;
            matrix.row_mut(i).assign(&ArrayView1::from(&row[..]));
        }
        Some(Dense { embedder, matrix })
    }

    /// Embeds queries (rows in order).
    pub async fn embed_queries(&self, queries: Vec<String>) -> Result<Array2<f32>> {
        Ok(self
            .embedder
            .embed(queries, &treenav_tree::NoProgress)
            .await?)
    }

    /// The top `n` passage indices for an embedded query, best first.
    pub fn search(&self, query: ArrayView1<'_, f32>, n: usize) -> Vec<usize> {
        let sims = self.matrix.dot(&query);
        let mut order: Vec<usize> = (0..sims.len()).collect();
        let n = n.min(order.len());
        if n == 0 {
            return Vec::new();
        }
        let cmp = |a: &usize, b: &usize| sims[*b].total_cmp(&sims[*a]).then(a.cmp(b));
        order.select_nth_unstable_by(n - 1, cmp);
        order.truncate(n);
        order.sort_by(cmp);
        order
    }
}

/// Reciprocal Rank Fusion: each item scores Σ 1 / (k + rank) over the lists
/// (rank from 1); the top `n`, best first (ties: lower index first).
pub fn rrf(lists: &[Vec<usize>], k: f64, n: usize) -> Vec<usize> {
    let mut score: HashMap<usize, f64> = HashMap::new();
    for list in lists {
        for (rank, item) in list.iter().enumerate() {
            *score.entry(*item).or_default() += 1.0 / (k + rank as f64 + 1.0);
        }
    }
    let mut items: Vec<(usize, f64)> = score.into_iter().collect();
    items.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    items.into_iter().take(n).map(|(i, _)| i).collect()
}

/// Passages ranked by a judge, with what it cost.
#[derive(Debug, Clone)]
pub struct Judged {
    /// Passage indices, best first: the reranked shortlist, then the rest.
    pub ranking: Vec<usize>,
    /// The judge's score of each ranked passage (its calibrated P(yes)),
    /// in `ranking`'s order.
    pub scores: Vec<f64>,
    /// Candidates shown to the judge: references and the shortlist rerank included.
    pub candidates_judged: usize,
    /// Judge usage, shortlist included.
    pub usage: Usage,
    /// Sequential steps: the list, then the shortlist rerank when one was asked.
    pub rounds: usize,
}

/// Judges `passages` (indices into `collection`) for `query` and reranks the
/// best `how.shortlist` of them, as the navigator does at its leaves,
/// through the judge crate's one ranking path ([`Session::rank_by`]):
/// ordered by `key` of the judged scores (the scores themselves, or fused).
pub async fn judge_rank(
    judge: &dyn Decide,
    query: &str,
    collection: &Collection,
    passages: &[usize],
    how: SessionOptions,
    key: impl FnOnce(&[f64]) -> Vec<f64>,
) -> treenav_judge::Result<Judged> {
    let candidates: Vec<Candidate> = passages
        .iter()
        .map(|i| Candidate::new(collection.ids[*i].clone(), collection.labels[*i].clone()))
        .collect();
    let mut session = Session::new(judge, how);
    let ranked = session
        .rank_by(query, &candidates, key)
        .await
        .map_err(|e| e.source)?;
    let reranked = ranked.rerank.iter().any(Option::is_some);
    let scores = ranked
        .order
        .iter()
        .map(|i| ranked.scores.get(*i).copied().unwrap_or(0.0))
        .collect();
    Ok(Judged {
        scores,
        ranking: ranked.order.into_iter().map(|i| passages[i]).collect(),
        candidates_judged: ranked.shown,
        usage: ranked.usage,
        rounds: 1 + usize::from(reranked),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_fuses_by_reciprocal_rank() {
        // Item 2 is second in both lists: 2/(60+2) beats 1/(60+1) + 0.
        let fused = rrf(&[vec![1, 2, 3], vec![4, 2, 5]], 60.0, 3);
        assert_eq!(fused[0], 2);
        assert_eq!(fused[1..], [1, 4]);
        assert!(rrf(&[], 60.0, 3).is_empty());
    }

    /// Dense reads the tree's passage vectors when the tree was embedded
    /// by the same embedder, row i for the collection's passage i.
    #[tokio::test]
    async fn dense_reads_the_trees_passage_vectors_of_its_own_embedder() {
        use treenav_builder::{build_tree, TreeParams};
        use treenav_builder::{Summarizer, SummarizerOptions};
        use treenav_tree::{EmbedderOptions, NoProgress};
        let jsonl: Vec<String> = (0..12)
            .map(|i| format!(r#"{{"_id":"d{i}","title":"T{i}","text":"insulin glucose {i}. football goal {i}."}}"#))
            .collect();
        let options = treenav_corpus::LoadOptions::default();
        let corpus = treenav_corpus::load_str(
            &jsonl.join("\n"),
            "c.jsonl",
            treenav_corpus::Format::Beir,
            &options,
        )
        .expect("corpus");
        let collection = Collection::new(&corpus);
        let params = TreeParams::default().branching(4).check().expect("params");
        let embedder = Embedder::new(&EmbedderOptions::default(), params.seed()).expect("tfidf");
        let summarizer = Summarizer::new(&SummarizerOptions::Extractive).expect("summarizer");
        let tree = build_tree(corpus, "c", &params, &embedder, &summarizer, &NoProgress)
            .await
            .expect("tree");
        let dense = Dense::from_tree(embedder, &collection, &tree).expect("the tree's vectors");
        let vectors = tree.passage_vectors().expect("passage vectors");
        let node = tree
            .passages()
            .find(|p| matches!(tree.get(*p).map(|n| &n.kind), Some(NodeKind::Passage { id, .. }) if *id == collection.ids[3]))
            .expect("node");
        assert_eq!(
            dense.matrix.row(3).to_vec(),
            vectors.get(node).expect("row")
        );
        let other =
            Embedder::new(&EmbedderOptions::Tfidf { dims: 64 }, params.seed()).expect("tfidf");
        assert!(
            Dense::from_tree(other, &collection, &tree).is_none(),
            "another embedder's space"
        );
    }

    #[test]
    fn dense_search_orders_by_cosine() {
        let matrix = ndarray::arr2(&[[1.0f32, 0.0], [0.0, 1.0], [0.6, 0.8]]);
        let dense = Dense {
            embedder: Embedder::Tfidf { dims: 2, seed: 1 },
            matrix,
        };
        let q = ndarray::arr1(&[0.0f32, 1.0]);
        assert_eq!(dense.search(q.view(), 2), vec![1, 2]);
        assert_eq!(dense.search(q.view(), 10), vec![1, 2, 0]);
        assert!(dense.search(q.view(), 0).is_empty());
    }
}
