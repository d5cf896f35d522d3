//! Embedding queries into a tree's space at query time: the one embedding a
//! query costs (the embedding judge then reads stored vectors only).

use crate::model::Tree;
use crate::{Error, Result};
use ndarray::Array2;
use std::sync::Arc;
use treenav_embed::tfidf::TfidfModel;
use treenav_embed::Embedder;

/// What embeds queries (and the odd passage a tree holds no vector for)
/// into the space of a tree's stored vectors.
#[derive(Debug, Clone)]
pub struct QueryEmbedder {
    kind: Kind,
    described: String,
}

#[derive(Debug, Clone)]
enum Kind {
    /// The build's fitted TF-IDF model.
    Tfidf(Arc<TfidfModel>),
    /// An embedding model (bge-small, MiniLM, an OpenAI-compatible server).
    Model(Box<Embedder>),
}

impl QueryEmbedder {
    /// The query embedder of `tree`: its TF-IDF fit (kept with its vectors)
    /// or the in-process model it records, loaded from its default folder.
    /// `None` when the tree holds no vectors, or records an embedder that
    /// cannot be made here without more (a remote server, precomputed
    /// vectors: give it with [`QueryEmbedder::with_embedder`]); an error
    /// when its model cannot be loaded.
    pub fn for_tree(tree: &Tree) -> Option<Result<QueryEmbedder>> {
        let vectors = tree.passage_vectors().or(tree.document_vectors())?;
        let described = tree.meta().embedder.clone();
        if let Some(model) = &vectors.embedding.tfidf {
            return Some(Ok(QueryEmbedder {
                kind: Kind::Tfidf(Arc::new(model.clone())),
                described,
            }));
        }
        let embedder = embedder_for(&described)?;
        Some(embedder.map(|e| QueryEmbedder {
            kind: Kind::Model(Box::new(e)),
            described,
        }))
    }

    /// `embedder` for texts with no tree (the embedding judge over a list
    /// of chunks).
    pub fn new(embedder: Embedder) -> QueryEmbedder {
        QueryEmbedder {
            described: embedder.describe(),
            kind: Kind::Model(Box::new(embedder)),
        }
    }

    /// `embedder` as the query embedder of `tree`: an error unless it is
    /// the one the tree records.
    pub fn with_embedder(tree: &Tree, embedder: Embedder) -> Result<QueryEmbedder> {
        let described = tree.meta().embedder.clone();
        if embedder.describe() != described {
            return Err(Error::Param(format!(
                "this tree was embedded with {described}, not {}: give the tree's own embedder",
                embedder.describe()
            )));
        }
        Ok(QueryEmbedder {
            kind: Kind::Model(Box::new(embedder)),
            described,
        })
    }

    /// The embedder as the tree records it, e.g. `onnx(bge-small-en, cls)`.
    pub fn describe(&self) -> &str {
        &self.described
    }

    /// Unit rows for `texts`, in order (zero rows for a TF-IDF text with
    /// no known term).
    pub async fn embed(&self, texts: Vec<String>) -> Result<Array2<f32>> {
        match &self.kind {
            Kind::Tfidf(model) => Ok(model.transform(&texts)),
            Kind::Model(embedder) => Ok(embedder.embed(texts, &crate::NoProgress).await?),
        }
    }
}

/// The embedder a tree records, made here when it can be (what its query
/// embedder and its updates use when none is given): the tree's
/// own, built from its record when it can be (TF-IDF needs none; the
/// in-process models load from their default folders); `None` when the
/// caller must give it (a remote server, precomputed vectors).
pub fn embedder_for(recorded: &str) -> Option<Result<Embedder>> {
    use treenav_embed::{EmbedderOptions, KnownEmbedder};
    let options = match KnownEmbedder::of(recorded)? {
        KnownEmbedder::BgeSmallEn => EmbedderOptions::bge_small(),
        KnownEmbedder::MiniLmL6 => EmbedderOptions::Minilm {
            model_dir: None,
            batch_size: 32,
            max_tokens: 128,
        },
    };
    Some(Embedder::new(&options, 0).map_err(Error::from))
}
