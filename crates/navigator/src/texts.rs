//! The embedding judge over lists with no tree (the pruner's chunks, a
//! service's `/v1/prune`): the query and each candidate's text are
//! embedded by the preferred embedder (bge-small), and the cosines are
//! calibrated as over a tree built with it.

use crate::semantic::Queries;
use futures::future::BoxFuture;
use std::sync::Arc;
use treenav_judge::{Candidate, Judge, JudgeOptions, Similarities, VectorSource};
use treenav_tree::{Embedder, EmbedderOptions, QueryEmbedder};

/// Vectors of texts embedded when they are judged: the query once (kept),
/// each candidate's text at every call.
pub struct TextVectors {
    queries: Queries,
}

impl std::fmt::Debug for TextVectors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextVectors")
            .field("embedder", &self.queries.describe())
            .finish_non_exhaustive()
    }
}

impl TextVectors {
    /// Texts embedded by `embedder`.
    pub fn new(embedder: Embedder) -> TextVectors {
        TextVectors {
            queries: Queries::new(QueryEmbedder::new(embedder)),
        }
    }

    async fn score(
        &self,
        query: &str,
        candidates: &[Candidate],
    ) -> treenav_judge::Result<Similarities> {
        let q = self.queries.vector(query).await?;
        let texts = candidates.iter().map(|c| c.text.clone()).collect();
        let rows = self.queries.embed(texts).await?;
        let cosines = rows
            .rows()
            .into_iter()
            .map(|row| row.iter().zip(q.iter()).map(|(a, b)| a * b).sum())
            .collect();
        Ok(Similarities {
            cosines,
            vectors_read: 0,
        })
    }
}

impl VectorSource for TextVectors {
    fn embedder(&self) -> String {
        self.queries.describe().to_string()
    }

    fn similarities<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> BoxFuture<'a, treenav_judge::Result<Similarities>> {
        Box::pin(self.score(query, candidates))
    }
}

/// The judge `options` describe, ready for lists with no tree: the
/// embedding judge gets the preferred embedder ([`EmbedderOptions::preferred`],
/// bge-small) embedding the texts it judges, or an error saying why it
/// cannot run here; every other judge is as [`Judge::new`] makes it.
pub fn list_judge(options: &JudgeOptions) -> treenav_judge::Result<Judge> {
    let judge = Judge::new(options)?;
    if !judge.uses_vectors() {
        return Ok(judge);
    }
    let embedder = match EmbedderOptions::preferred() {
        (options, None) => Embedder::new(&options, 0).map_err(|e| {
            treenav_judge::Error::config(format!("the embedding judge cannot load bge-small: {e}"))
        })?,
        (_, Some(why)) => {
            return Err(treenav_judge::Error::config(format!(
                "the embedding judge over chunks with no tree embeds them with bge-small, which cannot run here: {why}"
            )))
        }
    };
    let vectors: Arc<dyn VectorSource> = Arc::new(TextVectors::new(embedder));
    judge
        .with_vectors(vectors)
        .ok_or_else(|| treenav_judge::Error::config("the judge does not take vectors".to_string()))
}
