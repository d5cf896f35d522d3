//! Units: the document nodes to be (a whole document, or a part of one
//! when it has more passages than the branching limit).

use treenav_corpus::{chunk, Corpus, Document};

/// A document node to be: a whole document, or a part of one.
#[derive(Debug, Clone)]
pub(crate) struct Unit {
    pub(crate) doc: usize,
    pub(crate) part: Option<(u32, u32)>,
    pub(crate) passages: std::ops::Range<usize>,
}

/// The units of a corpus, in corpus order.
pub(crate) fn units(corpus: &Corpus, branching: usize) -> Vec<Unit> {
    let mut out = Vec::new();
    for (doc, d) in corpus.documents.iter().enumerate() {
        let n = d.passages.len();
        if n <= branching {
            out.push(Unit {
                doc,
                part: None,
                passages: 0..n,
            });
            continue;
        }
        let parts = n.div_ceil(branching);
        let size = n.div_ceil(parts);
        for p in 0..parts {
            let start = p * size;
            out.push(Unit {
                doc,
                part: Some((p as u32 + 1, parts as u32)),
                passages: start..(start + size).min(n),
            });
        }
    }
    out
}

pub(crate) fn unit_doc<'c>(corpus: &'c Corpus, u: &Unit) -> Option<&'c Document> {
    corpus.documents.get(u.doc)
}

/// The first `sentences` sentences of the unit's first passage.
pub(crate) fn unit_lead(corpus: &Corpus, u: &Unit, sentences: usize) -> String {
    unit_doc(corpus, u)
        .and_then(|d| d.passages.get(u.passages.start))
        .map(|p| chunk::first_sentences(&p.text, sentences))
        .unwrap_or_default()
}

pub(crate) fn unit_title(corpus: &Corpus, u: &Unit) -> String {
    unit_doc(corpus, u)
        .map(|d| d.title.clone())
        .unwrap_or_default()
}

/// The text a unit is embedded from: its title and first `sentences`
/// sentences.
pub(crate) fn unit_text(corpus: &Corpus, u: &Unit, sentences: usize) -> String {
    format!(
        "{}. {}",
        unit_title(corpus, u),
        unit_lead(corpus, u, sentences)
    )
}

/// The texts a build embeds, in the order precomputed vectors are read
/// (`--embeddings`, `--passage-embeddings`): what another engine embeds
/// to build a tree from its own vectors.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbeddingTexts {
    /// One per document node (a document, or each part of a document
    /// with more passages than the branching limit), in corpus order: its
    /// title and first sentences.
    pub documents: Vec<String>,
    /// One per passage, in corpus order (documents in order, each
    /// document's passages in order): `title: text`.
    pub passages: Vec<String>,
}

/// The texts of `corpus` a build with `branching` and `sentences` (see
/// [`crate::TreeParams`]) embeds.
pub fn embedding_texts(corpus: &Corpus, branching: usize, sentences: usize) -> EmbeddingTexts {
    let units = units(corpus, branching);
    let documents = units
        .iter()
        .map(|u| unit_text(corpus, u, sentences))
        .collect();
    let passages = corpus
        .documents
        .iter()
        .flat_map(|d| {
            d.passages
                .iter()
                .map(|p| super::passage_label(&d.title, &p.text))
        })
        .collect();
    EmbeddingTexts {
        documents,
        passages,
    }
}
