//! The passage vectors of a built tree: every passage embedded from its
//! document's title and its own text (`title: text`, what a judge is shown
//! and what a flat dense index embeds), with the build's embedder, so that
//! the embedding judge scores a passage by its own text at query time.

use crate::embed::Embedder;
use crate::model::{NodeKind, Tree};
use crate::vectors::{Embedding, UnitVectors};
use crate::{NodeId, Progress, Result};

/// The text a passage is embedded from: `title: text` (the text alone for
/// an untitled document). The judge's view of a passage is the same.
pub fn passage_label(title: &str, text: &str) -> String {
    if title.is_empty() {
        text.to_string()
    } else {
        format!("{title}: {text}")
    }
}

/// Each passage node of `tree` with its label.
fn labels(tree: &Tree) -> Result<(Vec<NodeId>, Vec<String>)> {
    let mut ids = Vec::new();
    let mut texts = Vec::new();
    for p in tree.passages() {
        let title = tree
            .get(p)
            .and_then(|n| n.parent)
            .and_then(|d| tree.get(d))
            .map(|d| match &d.kind {
                NodeKind::Document { title, .. } => title.as_str(),
                _ => "",
            })
            .unwrap_or("");
        texts.push(passage_label(title, &tree.passage_text(p)?));
        ids.push(p);
    }
    Ok((ids, texts))
}

/// The passage vectors of `tree` in the build's space (`embedding` names
/// it; a TF-IDF build projects with its fitted model): embedded, or taken
/// from precomputed passage rows (in corpus order: `in_corpus_order` is
/// each passage node in that order); `None` for precomputed vectors
/// without passage rows or a declared model.
pub(crate) async fn embed(
    tree: &Tree,
    in_corpus_order: &[NodeId],
    embedding: &Embedding,
    embedder: &Embedder,
    progress: &dyn Progress,
) -> Result<Option<UnitVectors>> {
    if let Some(rows) = embedder.passage_vectors(in_corpus_order.len()) {
        let rows = rows?;
        return Ok(Some(super::blocking(|| {
            precomputed(tree, in_corpus_order, embedding, rows.view())
        })));
    }
    if !embedder.embeds_text() {
        return Ok(None);
    }
    let (ids, texts) = labels(tree)?;
    progress.stage("embedding passages", ids.len() as u64);
    let rows = match &embedding.tfidf {
        Some(model) => {
            let model = model.clone();
            let n = texts.len() as u64;
            let rows = super::blocking(move || model.transform(&texts));
            progress.inc(n);
            rows
        }
        None => embedder.embed(texts, progress).await?,
    };
    if rows.nrows() != ids.len() {
        return Err(crate::Error::Cluster(format!(
            "the embedder returned {} vectors for {} passages",
            rows.nrows(),
            ids.len()
        )));
    }
    Ok(Some(super::blocking(|| {
        UnitVectors::from_rows(embedding.clone(), &ids, rows.view())
    })))
}

/// Precomputed passage rows (row i is `in_corpus_order[i]`'s), stored in
/// the tree's passage order like embedded ones.
fn precomputed(
    tree: &Tree,
    in_corpus_order: &[NodeId],
    embedding: &Embedding,
    rows: ndarray::ArrayView2<'_, f32>,
) -> UnitVectors {
    let row_of: std::collections::HashMap<NodeId, usize> = in_corpus_order
        .iter()
        .enumerate()
        .map(|(row, id)| (*id, row))
        .collect();
    let mut out = UnitVectors::new(embedding.clone(), rows.ncols());
    for p in tree.passages() {
        if let Some(row) = row_of.get(&p) {
            out.set(p, rows.row(*row));
        }
    }
    out
}

/// Each unit's passage nodes, units in corpus order: the passages in
/// corpus order (documents in order, each document's passages in order).
pub(crate) fn in_corpus_order(tree: &Tree, node_of_unit: &[NodeId]) -> Vec<NodeId> {
    node_of_unit
        .iter()
        .flat_map(|d| tree.children(*d).iter().copied())
        .collect()
}
