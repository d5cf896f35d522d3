//! The passage vectors of a built tree: every passage embedded from its
//! document's title and its own text (`title: text`, what a judge is shown
//! and what a flat dense index embeds), with the build's embedder, so that
//! the embedding judge scores a passage by its own text at query time.

use crate::{NodeId, Progress, Result};
use treenav_tree::embed::Embedder;
use treenav_tree::vectors::{Embedding, UnitVectors};
use treenav_tree::{NodeKind, Tree};

/// The text a passage is embedded from: `title: text` (the text alone for
/// an untitled document). The judge's view of a passage is the same.
pub fn passage_label(title: &str, text: &str) -> String {
    if title.is_empty() {
        text.to_string()
    } else {
        format!("{title}: {text}")
    }
}

/// Passages embedded per call: a multiple of the in-process embedders'
/// 4,096-text chunks (so the batches are the same as in one call), small
/// enough that the texts and the unquantised rows of one call stay a few
/// hundred megabytes however large the corpus.
pub(crate) const PASSAGES_PER_CALL: usize = 16 * 4096;

/// The label of passage `p` of `tree`: its document's title and its text.
fn label(tree: &Tree, p: NodeId) -> Result<String> {
    let title = tree
        .get(p)
        .and_then(|n| n.parent)
        .and_then(|d| tree.get(d))
        .map(|d| match &d.kind {
            NodeKind::Document { title, .. } => title.as_str(),
            _ => "",
        })
        .unwrap_or("");
    Ok(passage_label(title, &tree.passage_text(p)?))
}

/// The passage vectors of `tree` in the space of its `documents`' rows
/// (their embedding names it; a TF-IDF build projects with its fitted
/// model), as wide as those rows: embedded, or taken from precomputed
/// passage rows (in corpus order: `in_corpus_order` is each passage node
/// in that order); `None` for precomputed vectors without passage rows or
/// a declared model. Passages are embedded [`PASSAGES_PER_CALL`] at a
/// time and quantised as they come, so the full-precision rows of a large
/// corpus are never held at once.
pub(crate) async fn embed(
    tree: &Tree,
    in_corpus_order: &[NodeId],
    documents: &UnitVectors,
    embedder: &Embedder,
    progress: &dyn Progress,
) -> Result<Option<UnitVectors>> {
    let per_call = PASSAGES_PER_CALL;
    embed_per_call(
        tree,
        in_corpus_order,
        documents,
        embedder,
        per_call,
        progress,
    )
    .await
}

/// [`embed`], `per_call` passages at a time.
async fn embed_per_call(
    tree: &Tree,
    in_corpus_order: &[NodeId],
    documents: &UnitVectors,
    embedder: &Embedder,
    per_call: usize,
    progress: &dyn Progress,
) -> Result<Option<UnitVectors>> {
    let embedding = &documents.embedding;
    if let Some(rows) = embedder.passage_vectors(in_corpus_order.len()) {
        let rows = rows?;
        return super::blocking(|| precomputed(tree, in_corpus_order, embedding, rows.view()))
            .map(Some);
    }
    if !embedder.embeds_text() {
        return Ok(None);
    }
    let ids: Vec<NodeId> = tree.passages().collect();
    progress.stage("embedding passages", ids.len() as u64);
    let mut out = UnitVectors::new(embedding.clone(), documents.dims());
    embed_into(tree, &ids, &mut out, Some(embedder), per_call, progress).await?;
    Ok(Some(out))
}

/// Embeds the passages `ids` of `tree` into `out`, in its space (its
/// embedding's fitted TF-IDF model, else `embedder`, which must then be
/// given), `per_call` at a time: the build's passage vectors, and an
/// update's added passages.
pub(crate) async fn embed_into(
    tree: &Tree,
    ids: &[NodeId],
    out: &mut UnitVectors,
    embedder: Option<&Embedder>,
    per_call: usize,
    progress: &dyn Progress,
) -> Result<()> {
    for chunk in ids.chunks(per_call.max(1)) {
        let texts = chunk
            .iter()
            .map(|p| label(tree, *p))
            .collect::<Result<Vec<_>>>()?;
        let rows = match &out.embedding.tfidf {
            Some(model) => {
                let rows = super::blocking(|| model.transform(&texts));
                progress.inc(texts.len() as u64);
                rows
            }
            None => match embedder {
                Some(embedder) => embedder.embed(texts, progress).await?,
                None => {
                    return Err(crate::Error::Param(format!(
                        "the passages' vectors are {}'s: give that embedder",
                        out.embedding.embedder
                    )))
                }
            },
        };
        if rows.nrows() != chunk.len() {
            return Err(crate::Error::Cluster(format!(
                "the embedder returned {} vectors for {} passages",
                rows.nrows(),
                chunk.len()
            )));
        }
        if rows.ncols() != out.dims() {
            return Err(crate::Error::Cluster(format!(
                "the embedder returned passage vectors of {} dimensions, the documents' have {}",
                rows.ncols(),
                out.dims()
            )));
        }
        super::blocking(|| {
            chunk
                .iter()
                .zip(rows.rows())
                .try_for_each(|(p, row)| out.set(*p, row))
        })?;
    }
    Ok(())
}

/// Precomputed passage rows (row i is `in_corpus_order[i]`'s), stored in
/// the tree's passage order like embedded ones.
fn precomputed(
    tree: &Tree,
    in_corpus_order: &[NodeId],
    embedding: &Embedding,
    rows: ndarray::ArrayView2<'_, f32>,
) -> Result<UnitVectors> {
    let row_of: std::collections::HashMap<NodeId, usize> = in_corpus_order
        .iter()
        .enumerate()
        .map(|(row, id)| (*id, row))
        .collect();
    let mut out = UnitVectors::new(embedding.clone(), rows.ncols());
    for p in tree.passages() {
        if let Some(row) = row_of.get(&p) {
            out.set(p, rows.row(*row))?;
        }
    }
    Ok(out)
}

/// Each unit's passage nodes, units in corpus order: the passages in
/// corpus order (documents in order, each document's passages in order).
pub(crate) fn in_corpus_order(tree: &Tree, node_of_unit: &[NodeId]) -> Vec<NodeId> {
    node_of_unit
        .iter()
        .flat_map(|d| tree.children(*d).iter().copied())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TreeParams;
    use crate::{build_tree, EmbedderOptions, NoProgress, Summarizer, SummarizerOptions};

    fn built() -> (Tree, Embedder) {
        let jsonl = (0..40)
            .map(|i| {
                format!(
                    r#"{{"_id":"d{i}","title":"Doc {i}","text":"Topic {} words. Second sentence {i}.\n\nAnother paragraph about {}."}}"#,
                    i % 4,
                    i % 7
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let options = treenav_corpus::LoadOptions::default();
        let corpus =
            treenav_corpus::load_str(&jsonl, "c.jsonl", treenav_corpus::Format::Beir, &options)
                .expect("corpus");
        let params = TreeParams::default().branching(6).check().expect("params");
        let embedder = Embedder::new(&EmbedderOptions::default(), params.seed()).expect("embedder");
        let summarizer = Summarizer::new(&SummarizerOptions::Extractive).expect("summarizer");
        let tree = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime")
            .block_on(build_tree(
                corpus,
                "c",
                &params,
                &embedder,
                &summarizer,
                &NoProgress,
            ))
            .expect("build");
        (tree, embedder)
    }

    #[test]
    fn passages_embedded_a_few_at_a_time_are_the_ones_embedded_at_once() {
        let (tree, embedder) = built();
        let kept = tree.passage_vectors().expect("passage vectors").clone();
        let documents = tree.document_vectors().expect("document vectors");
        assert!(tree.passages().count() > 7, "several calls of 7");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let embed = |documents: &UnitVectors, per_call: usize| {
            runtime.block_on(embed_per_call(
                &tree,
                &[],
                documents,
                &embedder,
                per_call,
                &NoProgress,
            ))
        };
        for per_call in [7, 1, usize::MAX] {
            let rows = embed(documents, per_call).expect("embed").expect("rows");
            assert_eq!(rows, *kept, "{per_call} a call");
        }
        let narrow = UnitVectors::new(documents.embedding.clone(), documents.dims() + 1);
        let err = embed(&narrow, 7).expect_err("a width unlike the documents'");
        assert!(err.to_string().contains("dimensions"), "{err}");
    }
}
