//! Units: the document nodes to be (a whole document, or a part of one
//! when it has more passages than the branching limit).

use treenav_corpus::{chunk, Corpus, Document, Fingerprint, Fingerprinter};

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
        document_units(doc, d.passages.len(), branching, &mut out);
    }
    out
}

/// Adds the units of document `doc`, of `n` passages, to `out`.
fn document_units(doc: usize, n: usize, branching: usize, out: &mut Vec<Unit>) {
    if n <= branching {
        out.push(Unit {
            doc,
            part: None,
            passages: 0..n,
        });
        return;
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

pub(crate) fn unit_doc<'c>(corpus: &'c Corpus, u: &Unit) -> Option<&'c Document> {
    corpus.documents.get(u.doc)
}

/// The first `sentences` sentences of the unit's first passage.
pub(crate) fn unit_lead(corpus: &Corpus, u: &Unit, sentences: usize) -> String {
    unit_doc(corpus, u)
        .map(|d| lead_of(d, u, sentences))
        .unwrap_or_default()
}

/// The first `sentences` sentences of unit `u`'s first passage in its
/// document `d`.
fn lead_of(d: &Document, u: &Unit, sentences: usize) -> String {
    d.passages
        .get(u.passages.start)
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
fn unit_text(corpus: &Corpus, u: &Unit, sentences: usize) -> String {
    lead_text(&unit_title(corpus, u), &unit_lead(corpus, u, sentences))
}

/// The texts `units` of `corpus` are embedded from, in order.
pub(crate) fn unit_texts(corpus: &Corpus, units: &[Unit], sentences: usize) -> Vec<String> {
    units
        .iter()
        .map(|u| unit_text(corpus, u, sentences))
        .collect()
}

/// A unit's text from its title and lead.
fn lead_text(title: &str, lead: &str) -> String {
    format!("{title}. {lead}")
}

/// What a plan needs of a corpus: its fingerprint, its units and the text
/// each unit is embedded from (a title and first sentences) — not the
/// passages' texts. Made a document at a time ([`Outliner`]), so that a
/// corpus read as a stream is never held whole.
#[derive(Debug)]
pub struct Outline {
    /// The branching and sentences it was made with.
    pub(crate) branching: usize,
    pub(crate) sentences: usize,
    pub(crate) fingerprint: Fingerprint,
    pub(crate) documents: usize,
    pub(crate) units: Vec<Unit>,
    pub(crate) texts: Vec<String>,
}

impl Outline {
    /// The outline of a loaded corpus, for a build with `branching` and
    /// `sentences` (see [`crate::TreeParams`]).
    pub fn of(corpus: &Corpus, branching: usize, sentences: usize) -> Outline {
        let mut out = Outliner::new(branching, sentences);
        corpus.documents.iter().for_each(|d| out.add(d));
        out.finish()
    }

    /// Checks the outline was made with `params`' branching and sentences.
    pub(crate) fn made_for(&self, params: &super::ValidTreeParams) -> crate::Result<()> {
        let build = (params.branching(), params.embed_sentences());
        if (self.branching, self.sentences) == build {
            return Ok(());
        }
        Err(crate::Error::Param(format!(
            "the outline was made with branching {} and {} sentences, the build's are {} and {}",
            self.branching, self.sentences, build.0, build.1
        )))
    }

    /// The number of documents.
    pub fn documents(&self) -> usize {
        self.documents
    }

    /// The corpus's fingerprint, as [`Corpus::fingerprint`] gives it.
    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }
}

/// Makes an [`Outline`] a document at a time, in corpus order.
pub struct Outliner {
    fingerprint: Fingerprinter,
    outline: Outline,
}

impl Outliner {
    /// An empty outline for a build with `branching` and `sentences`.
    pub fn new(branching: usize, sentences: usize) -> Outliner {
        let fingerprint = Fingerprinter::default();
        Outliner {
            outline: Outline {
                branching,
                sentences,
                fingerprint: fingerprint.finish(),
                documents: 0,
                units: Vec::new(),
                texts: Vec::new(),
            },
            fingerprint,
        }
    }

    /// Adds the next document.
    pub fn add(&mut self, d: &Document) {
        let out = &mut self.outline;
        self.fingerprint.add_document(d);
        let first = out.units.len();
        document_units(
            out.documents,
            d.passages.len(),
            out.branching,
            &mut out.units,
        );
        for u in &out.units[first..] {
            out.texts
                .push(lead_text(&d.title, &lead_of(d, u, out.sentences)));
        }
        out.documents += 1;
    }

    /// The outline of the documents added.
    pub fn finish(mut self) -> Outline {
        self.outline.fingerprint = self.fingerprint.finish();
        self.outline
    }
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
    let documents = unit_texts(corpus, &units, sentences);
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
