//! Adding and removing documents without a rebuild.
//!
//! An update loads the tree (its file plus the delta of earlier updates),
//! embeds the new documents with the tree's own embedder (TF-IDF's fitted
//! vocabulary, the same model, or precomputed rows), places each under its
//! nearest leaf cluster top-down by the clusters' centroids (kept as sums
//! of their documents' vectors, so they move with their members), splits
//! a leaf that outgrows the branching limit by 2-means, computes the new
//! documents' neighbour lists among their family of leaves and enters them
//! into the lists they now belong to, and relabels the clusters it
//! touched. Removals detach documents, drop them from every neighbour list
//! (refilled from the neighbours' neighbours), drop emptied leaves and
//! merge small ones into their nearest sibling.
//!
//! What changed is written as a delta beside the tree file (see
//! [`delta`]); the lexical index gets the new documents as a new tantivy
//! segment and the removals as deletes, in one commit whose payload names
//! the delta's generation. A crash at any point leaves the tree as it was
//! before or after the update. One writer at a time: `T.lock` is held for
//! the update ([`Lock`]). [`compact`] folds the delta into a new tree file.

use crate::TreeError;
mod drift;
mod edit;
mod labels;

pub use drift::{drift, Drift};
pub use treenav_tree::delta::{base_of, delta_path};
use treenav_tree::vectors::VectorRows;
pub use treenav_tree::vectors::{vectors_path, BaseId, Embedding, UnitVectors};
pub use treenav_tree::UpdateLog;

use treenav_tree::{delta, vectors};

use crate::full::{units, Unit};
use crate::{Error, Progress, Result};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use treenav_corpus::Corpus;
use treenav_tree::delta::{Delta, StatsChange};
use treenav_tree::embed::Embedder;
use treenav_tree::NodeId;
use treenav_tree::{NodeKind, Tree};

/// What an update did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The tree's update generation now.
    pub generation: u64,
    /// Documents added (new ids).
    pub added: usize,
    /// Documents replaced (ids the tree had).
    pub replaced: usize,
    /// Documents removed.
    pub removed: usize,
    /// Ids asked to be removed that the tree does not have.
    pub not_found: Vec<String>,
    /// Documents given again exactly as the tree holds them (same title,
    /// metadata and passages): left as they are.
    pub unchanged: usize,
    /// Leaf clusters split in this update.
    pub splits: u64,
    /// Clusters merged into a sibling or dropped when emptied.
    pub merges: u64,
    /// Clusters relabelled.
    pub relabelled: usize,
    /// Bytes of the delta file now (every update since the tree file).
    pub delta_bytes: u64,
    /// Whether the tree's documents had to be embedded again (a tree
    /// saved without its vectors).
    pub embedded_again: bool,
    /// Passages the tree held without a vector of their own (added by an
    /// update written before deltas kept them), embedded by this add, once.
    pub passages_embedded_again: usize,
}

pub use treenav_tree::generation::Lock;

/// The base id of the tree file at `path`, from its header.
pub fn base_id(path: &Path) -> Result<BaseId> {
    use treenav_tree::store::ReadAt;
    let (file, _) = treenav_tree::store::FileAt::open(path, &treenav_tree::store::SIDE_FILE)?;
    let mut head = [0u8; 28];
    file.read_at(0, &mut head).map_err(|source| TreeError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(base_of(&head))
}

/// A tree open for an update: the lock, the tree with earlier updates,
/// the delta they wrote and every document's vector.
struct Session {
    _lock: Lock,
    path: PathBuf,
    tree: Tree,
    base: BaseId,
    previous: Option<Delta>,
    vectors: UnitVectors,
    /// Rows of the vectors file (the rest came with deltas or this update).
    base_rows: usize,
    base_nodes: u32,
    embedded_again: bool,
    /// Rows of the tree file's passage vectors (those past them are the
    /// updates'), when the tree keeps passage vectors.
    passage_base_rows: Option<usize>,
}

/// The text a document node was embedded from at build time.
fn node_text(tree: &Tree, id: NodeId) -> String {
    match tree.get(id).map(|n| &n.kind) {
        Some(NodeKind::Document { title, lead, .. }) => format!("{title}. {lead}"),
        _ => String::new(),
    }
}

impl Session {
    /// Opens the tree at `path` for an update adding about `room` nodes.
    async fn open(path: &Path, embedder: Option<&Embedder>, room: usize) -> Result<Session> {
        let lock = Lock::acquire(path)?;
        treenav_tree::generation::settle_locked(path)?;
        let tree = treenav_tree::file::load_with_room(path, room)?;
        let updatable = tree
            .lexical()
            .is_some_and(|l| !l.is_layout_1() && l.index.folder().is_some());
        if !updatable {
            return Err(Error::Param(format!(
                "{}: updates need a tree saved with its lexical index in tantivy: run `treenav compact {}` once (or rebuild it)",
                path.display(),
                path.display()
            )));
        }
        let base = base_id(path)?;
        let generation = current_generation(&tree);
        let previous = delta::current(path, base, generation)?;
        let base_nodes = previous
            .as_ref()
            .map_or(tree.len() as u32, |d| d.base_nodes);
        let file_vectors = vectors::read(path, base, base_nodes as usize)?;
        let (vectors, base_rows, embedded_again) = match file_vectors {
            Some(mut v) => {
                let rows = v.len();
                if let Some(d) = &previous {
                    v.extend(&d.vectors, tree.len())?;
                }
                (v, rows, false)
            }
            None => {
                let (v, rows) = embed_again(&tree, base_nodes, embedder).await?;
                let base_only = v.renumbered(|id| (id.0 < base_nodes).then_some(id));
                vectors::write(&base_only?, None, path, base)?;
                (v, rows, true)
            }
        };
        let passage_base_rows = tree.passage_vectors().map(|v| {
            let added = previous.as_ref().map_or(0, |d| d.passage_vectors.len());
            v.len().saturating_sub(added)
        });
        Ok(Session {
            passage_base_rows,
            _lock: lock,
            path: path.to_path_buf(),
            tree,
            base,
            previous,
            vectors,
            base_rows,
            base_nodes,
            embedded_again,
        })
    }

    /// Document nodes by source id (every part of a document).
    fn by_id(&self) -> HashMap<String, Vec<NodeId>> {
        let mut out: HashMap<String, Vec<NodeId>> = HashMap::new();
        for d in self.tree.documents() {
            if let Some(NodeKind::Document { id, .. }) = self.tree.get(d).map(|n| &n.kind) {
                out.entry(id.clone()).or_default().push(d);
            }
        }
        out
    }

    /// The passage texts of documents, for the statistics' change.
    fn passage_texts(&self, docs: &[NodeId]) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for d in docs {
            for p in self.tree.children(*d) {
                out.push(self.tree.passage_text(*p)?.into_owned());
            }
        }
        Ok(out)
    }

    /// The length of the tree's neighbour lists (the build's `k`, as the
    /// longest list shows it; 0 for a tree without lists).
    fn neighbours_per_document(&self) -> usize {
        (0..self.tree.len())
            .map(|i| self.tree.neighbours(NodeId(i as u32)).len())
            .max()
            .unwrap_or(0)
    }
}

/// The generation the tree's lexical index was committed at.
fn current_generation(tree: &Tree) -> delta::Generation {
    tree.lexical()
        .and_then(|l| l.index.payload().ok().flatten())
        .and_then(|p| delta::generation_of(Some(&p)))
        .unwrap_or_default()
}

/// Embeds every document of a tree saved without its vectors, with the
/// embedder it was built with: TF-IDF fitted again on the documents of
/// the tree file (the build's own fit when the file is a build's), or the
/// given embedder. The rows of the tree file's documents come first.
async fn embed_again(
    tree: &Tree,
    base_nodes: u32,
    embedder: Option<&Embedder>,
) -> Result<(UnitVectors, usize)> {
    let recorded = tree.meta().embedder.clone();
    let (old, new): (Vec<NodeId>, Vec<NodeId>) = tree.documents().partition(|d| d.0 < base_nodes);
    let text_of = |ids: &[NodeId]| ids.iter().map(|d| node_text(tree, *d)).collect::<Vec<_>>();
    let (embedding, rows_old, rows_new) = if let Some(dims) = tfidf_dims(&recorded) {
        let (model, rows) =
            treenav_tree::embed::tfidf::fit_embed(&text_of(&old), dims, tree.meta().seed);
        let rows_new = model.transform(&text_of(&new));
        let embedding = Embedding {
            embedder: recorded,
            tfidf: Some(model),
            sentences: 1,
        };
        (embedding, rows, rows_new)
    } else {
        let embedder = same_embedder(&recorded, embedder)?;
        if matches!(embedder, Embedder::Vectors { .. }) {
            return Err(Error::Param(format!(
                "this tree was built from precomputed vectors ({recorded}) and was saved without them: rebuild it with this version of treenav to make it updatable"
            )));
        }
        let rows = embedder.embed(text_of(&old), &crate::NoProgress).await?;
        let rows_new = embedder.embed(text_of(&new), &crate::NoProgress).await?;
        let embedding = Embedding {
            embedder: recorded,
            tfidf: None,
            sentences: 1,
        };
        (embedding, rows, rows_new)
    };
    let mut v = UnitVectors::from_rows(embedding, &old, rows_old.view());
    let base_rows = v.len();
    for (id, row) in new.iter().zip(rows_new.rows()) {
        v.set(*id, row)?;
    }
    Ok((v, base_rows))
}

/// `tfidf(dims=N)` → N.
fn tfidf_dims(described: &str) -> Option<usize> {
    described
        .strip_prefix("tfidf(dims=")?
        .strip_suffix(')')?
        .parse()
        .ok()
}

/// The embedder to embed a tree's new documents with: the one given, if it
/// is the one the tree records (precomputed vectors: any file), else an
/// error saying which the tree needs.
fn same_embedder<'e>(recorded: &str, given: Option<&'e Embedder>) -> Result<&'e Embedder> {
    let Some(e) = given else {
        return Err(Error::Param(format!(
            "this tree was embedded with {recorded}: give the same embedder for its new documents"
        )));
    };
    let precomputed = recorded.starts_with("vectors(") && matches!(e, Embedder::Vectors { .. });
    if !precomputed && e.describe() != recorded {
        return Err(Error::Param(format!(
            "this tree was embedded with {recorded}, not {}: give the tree's own embedder",
            e.describe()
        )));
    }
    Ok(e)
}

pub use treenav_tree::embedder_for;

/// Adds the documents of `corpus` to the saved tree at `path`: new ids
/// are added, ids the tree has are replaced. `embedder` is the tree's own
/// (needed unless the tree is TF-IDF's or stores its vectors' model).
pub async fn add(
    path: &Path,
    mut corpus: Corpus,
    embedder: Option<&Embedder>,
    progress: &dyn Progress,
) -> Result<Report> {
    // Room for the new nodes: documents, passages, a few clusters.
    let room = corpus.documents.len() * 2 + corpus.passage_count();
    let mut session = Session::open(path, embedder, room).await?;
    let unchanged = drop_unchanged(&session, &mut corpus)?;
    if corpus.documents.is_empty() {
        return Ok(Report {
            generation: current_generation(&session.tree).number,
            unchanged,
            ..Report::default()
        });
    }
    let branching = session.tree.meta().branching as usize;
    let units = units(&corpus, branching);
    progress.stage("embedding", units.len() as u64);
    let rows = embed_units(&session, &corpus, &units, embedder, progress).await?;
    let (replaced_nodes, replaced) = replaced_by(&session, &corpus);
    let mut change = Change::default();
    change.stats_minus(&session, &session.passage_texts(&replaced_nodes)?);
    let analyzer = session.tree.analyzer();
    let k = session.neighbours_per_document();
    let seed = session.tree.meta().seed;
    progress.stage("placing", units.len() as u64);
    let (nodes, lists) = session.tree.parts_mut()?;
    let mut editor = edit::Editor::new(nodes, lists, &mut session.vectors, branching, k, seed);
    for d in &replaced_nodes {
        editor.remove(*d)?;
    }
    let mut added_nodes = Vec::with_capacity(units.len());
    for (unit, row) in units.iter().zip(rows.rows()) {
        let (kind, passages) = unit_nodes(&corpus, unit);
        let row: Vec<f32> = row.to_vec();
        added_nodes.push(editor.insert(kind, passages, &row)?);
        progress.inc(1);
    }
    editor.mend_lists();
    let relabel = editor.to_relabel();
    let relabelled = labels::refresh(editor.nodes, &relabel).len();
    let (dirty, dirty_lists, mut log) = (editor.dirty, editor.dirty_lists, editor.log);
    log.updates = 1;
    log.added = (corpus.documents.len() - replaced) as u64;
    log.removed = 0;
    let new_texts: Vec<String> = corpus
        .documents
        .iter()
        .flat_map(|d| &d.passages)
        .map(|p| p.text.clone())
        .collect();
    change.stats_plus(analyzer, &new_texts);
    change.deletes = replaced_nodes;
    change.adds = lexical_texts(&session.tree, &added_nodes)?;
    let passages_embedded_again =
        embed_passages(&mut session, &added_nodes, embedder, progress).await?;
    let mut report = commit(&mut session, change, dirty, dirty_lists, log)?;
    report.added = corpus.documents.len() - replaced;
    report.replaced = replaced;
    report.relabelled = relabelled;
    report.unchanged = unchanged;
    report.passages_embedded_again = passages_embedded_again;
    Ok(report)
}

/// The nodes of the documents `corpus` replaces (ids the tree holds) and
/// how many documents that is.
fn replaced_by(session: &Session, corpus: &Corpus) -> (Vec<NodeId>, usize) {
    let existing = session.by_id();
    let held: Vec<&Vec<NodeId>> = corpus
        .documents
        .iter()
        .filter_map(|d| existing.get(&d.id))
        .collect();
    let replaced = held.len();
    (held.into_iter().flatten().copied().collect(), replaced)
}

/// Leaves out of `corpus` the documents the tree holds exactly as given
/// (adding the same documents again changes nothing, not even the
/// generation); how many were left out.
fn drop_unchanged(session: &Session, corpus: &mut Corpus) -> Result<usize> {
    let given = corpus.documents.len();
    let held = session.by_id();
    let mut kept = Vec::with_capacity(given);
    for d in std::mem::take(&mut corpus.documents) {
        match held.get(&d.id) {
            Some(nodes) if holds_as_given(&session.tree, nodes, &d)? => {}
            _ => kept.push(d),
        }
    }
    corpus.documents = kept;
    Ok(given - corpus.documents.len())
}

/// Whether the tree's document nodes `nodes` (its parts) hold `doc` as
/// given: the same title and metadata, the same passages (ids and texts)
/// in the same order.
fn holds_as_given(tree: &Tree, nodes: &[NodeId], doc: &treenav_corpus::Document) -> Result<bool> {
    let mut parts: Vec<(u32, NodeId)> = Vec::with_capacity(nodes.len());
    for n in nodes {
        match tree.get(*n).map(|n| &n.kind) {
            Some(NodeKind::Document {
                title,
                metadata,
                part,
                ..
            }) if *title == doc.title && *metadata == doc.metadata => {
                parts.push((part.map_or(0, |(i, _)| i), *n));
            }
            _ => return Ok(false),
        }
    }
    parts.sort_unstable();
    let mut given = doc.passages.iter();
    for (_, n) in parts {
        for p in tree.children(n) {
            let Some(expected) = given.next() else {
                return Ok(false);
            };
            let same_id = matches!(tree.get(*p).map(|n| &n.kind), Some(NodeKind::Passage { id, .. }) if *id == expected.id);
            if !same_id || tree.passage_text(*p)? != expected.text {
                return Ok(false);
            }
        }
    }
    Ok(given.next().is_none())
}

/// Removes the documents with the given source ids (every part of each)
/// from the saved tree at `path`. Ids the tree does not have are reported,
/// not an error.
pub async fn remove(path: &Path, ids: &[String], embedder: Option<&Embedder>) -> Result<Report> {
    let mut session = Session::open(path, embedder, 0).await?;
    let existing = session.by_id();
    let mut not_found = Vec::new();
    let mut nodes_to_remove = Vec::new();
    let mut seen = HashSet::new();
    for id in ids {
        if !seen.insert(id) {
            continue;
        }
        match existing.get(id) {
            Some(nodes) => nodes_to_remove.extend(nodes.iter().copied()),
            None => not_found.push(id.clone()),
        }
    }
    let removed = seen.len() - not_found.len();
    if nodes_to_remove.is_empty() {
        // Nothing the tree holds: no new generation, nothing written.
        return Ok(Report {
            generation: current_generation(&session.tree).number,
            not_found,
            ..Report::default()
        });
    }
    let mut change = Change::default();
    change.stats_minus(&session, &session.passage_texts(&nodes_to_remove)?);
    let branching = session.tree.meta().branching as usize;
    let k = session.neighbours_per_document();
    let seed = session.tree.meta().seed;
    let (nodes, lists) = session.tree.parts_mut()?;
    let mut editor = edit::Editor::new(nodes, lists, &mut session.vectors, branching, k, seed);
    for d in &nodes_to_remove {
        editor.remove(*d)?;
    }
    editor.mend_lists();
    let relabel = editor.to_relabel();
    let relabelled = labels::refresh(editor.nodes, &relabel).len();
    let (dirty, dirty_lists, mut log) = (editor.dirty, editor.dirty_lists, editor.log);
    log.updates = 1;
    log.removed = removed as u64;
    change.deletes = nodes_to_remove;
    let mut report = commit(&mut session, change, dirty, dirty_lists, log)?;
    report.removed = removed;
    report.not_found = not_found;
    report.relabelled = relabelled;
    Ok(report)
}

/// The new documents' vectors, by the tree's own embedder.
async fn embed_units(
    session: &Session,
    corpus: &Corpus,
    units: &[Unit],
    embedder: Option<&Embedder>,
    progress: &dyn Progress,
) -> Result<ndarray::Array2<f32>> {
    let rows = match &session.vectors.embedding.tfidf {
        Some(model) => {
            let texts = crate::full::unit_texts(corpus, units, session.vectors.embedding.sentences);
            progress.inc(units.len() as u64);
            model.transform(&texts)
        }
        None => {
            let embedder = same_embedder(&session.vectors.embedding.embedder, embedder)?;
            let sentences = session.vectors.embedding.sentences.max(1);
            let texts = || crate::full::unit_texts(corpus, units, sentences);
            let documents = corpus.documents.len();
            let rows =
                crate::full::embed_units(documents, units, texts, embedder, progress).await?;
            Arc::try_unwrap(rows).unwrap_or_else(|shared| (*shared).clone())
        }
    };
    if rows.ncols() != session.vectors.dims() {
        return Err(Error::Param(format!(
            "the new documents' vectors have {} dimensions, the tree's {}",
            rows.ncols(),
            session.vectors.dims()
        )));
    }
    Ok(rows)
}

/// Embeds the passages of the added documents `docs` into the tree's
/// passage vectors, when it keeps them and its embedder embeds text (not
/// precomputed vectors), so the embedding judge scores each by its own
/// text, as after a build; and, once, every passage the tree holds without
/// a vector (added by an update written before deltas kept them). How
/// many of those there were.
async fn embed_passages(
    session: &mut Session,
    docs: &[NodeId],
    embedder: Option<&Embedder>,
    progress: &dyn Progress,
) -> Result<usize> {
    let Some(shared) = session.tree.passage_vectors().cloned() else {
        return Ok(0);
    };
    let text_embedder = match (&shared.embedding.tfidf, embedder) {
        (Some(_), _) => None,
        (None, Some(e)) if e.embeds_text() => Some(e),
        (None, _) => return Ok(0),
    };
    let added: HashSet<NodeId> = docs
        .iter()
        .flat_map(|d| session.tree.children(*d).iter().copied())
        .collect();
    let ids: Vec<NodeId> = session
        .tree
        .passages()
        .filter(|p| !shared.contains(*p))
        .collect();
    let again = ids.iter().filter(|p| !added.contains(p)).count();
    progress.stage("embedding passages", ids.len() as u64);
    session.tree.set_passage_vectors(None);
    let mut vectors = Arc::try_unwrap(shared).unwrap_or_else(|shared| (*shared).clone());
    let per_call = crate::full::PASSAGES_PER_CALL;
    let embedded = crate::full::embed_passages_into(
        &session.tree,
        &ids,
        &mut vectors,
        text_embedder,
        per_call,
        progress,
    )
    .await;
    session.tree.set_passage_vectors(Some(Arc::new(vectors)));
    embedded.map(|()| again)
}

/// A unit's document node and its passage nodes (texts held in them).
fn unit_nodes(corpus: &Corpus, unit: &Unit) -> (NodeKind, Vec<NodeKind>) {
    let kind = crate::full::document_kind(corpus, unit);
    let passages = corpus
        .documents
        .get(unit.doc)
        .map(|d| {
            d.passages[unit.passages.clone()]
                .iter()
                .map(|p| NodeKind::Passage {
                    id: p.id.clone(),
                    text: p.text.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    (kind, passages)
}

/// The lexical index's text of each document node (title, then passages).
fn lexical_texts(tree: &Tree, docs: &[NodeId]) -> Result<Vec<(u64, String)>> {
    docs.iter()
        .map(|d| {
            let mut text = match tree.get(*d).map(|n| &n.kind) {
                Some(NodeKind::Document { title, .. }) => title.clone(),
                _ => String::new(),
            };
            for p in tree.children(*d) {
                text.push('\n');
                text.push_str(&tree.passage_text(*p)?);
            }
            Ok((u64::from(d.0), text))
        })
        .collect()
}

/// What an update changes beyond the arena.
#[derive(Default)]
struct Change {
    stats: HashMap<String, i64>,
    documents: i64,
    terms: i64,
    deletes: Vec<NodeId>,
    adds: Vec<(u64, String)>,
}

impl Change {
    fn count(&mut self, analyzer: treenav_text::analyzer::Analyzer, texts: &[String], sign: i64) {
        for text in texts {
            let terms = analyzer.terms(text);
            self.terms += sign * terms.len() as i64;
            let distinct: BTreeSet<String> = terms.into_iter().collect();
            for t in distinct {
                *self.stats.entry(t).or_insert(0) += sign;
            }
            self.documents += sign;
        }
    }

    fn stats_plus(&mut self, analyzer: treenav_text::analyzer::Analyzer, texts: &[String]) {
        self.count(analyzer, texts, 1);
    }

    fn stats_minus(&mut self, session: &Session, texts: &[String]) {
        self.count(session.tree.analyzer(), texts, -1);
    }
}

/// Writes the update: the new delta as `T.delta.next`, the lexical index's
/// commit naming its generation, then `T.delta.next` renamed over
/// `T.delta`.
fn commit(
    session: &mut Session,
    mut change: Change,
    dirty: BTreeSet<u32>,
    dirty_lists: BTreeSet<u32>,
    log: UpdateLog,
) -> Result<Report> {
    session.tree.validate()?;
    let previous = session.previous.take().unwrap_or_default();
    let generation = previous.generation + 1;
    let mut ids: BTreeSet<u32> = previous.nodes.iter().map(|(i, _)| *i).collect();
    ids.extend(dirty);
    let mut list_ids: BTreeSet<u32> = previous.neighbours.iter().map(|(i, _)| *i).collect();
    list_ids.extend(dirty_lists);
    let mut df = previous.df_map();
    for (t, n) in std::mem::take(&mut change.stats) {
        *df.entry(t).or_insert(0) += n;
    }
    let mut df: Vec<(String, i64)> = df.into_iter().filter(|(_, n)| *n != 0).collect();
    df.sort_unstable();
    let indexed = session
        .tree
        .lexical()
        .map_or(0, |l| l.index.len() as u64)
        .saturating_sub(change.deletes.len() as u64)
        + change.adds.len() as u64;
    let old = previous.log;
    let delta = Delta {
        generation,
        base_nodes: session.base_nodes,
        nodes: ids
            .into_iter()
            .filter_map(|i| Some((i, session.tree.get(NodeId(i))?.clone())))
            .collect(),
        neighbours: list_ids
            .into_iter()
            .map(|i| (i, session.tree.neighbours(NodeId(i)).to_vec()))
            .collect(),
        stats: StatsChange {
            documents: previous.stats.documents + change.documents,
            terms: previous.stats.terms + change.terms,
            df,
        },
        vectors: session.vectors.rows_from(session.base_rows)?,
        passage_vectors: match (session.tree.passage_vectors(), session.passage_base_rows) {
            (Some(v), Some(base)) => v.rows_from(base)?,
            _ => VectorRows::default(),
        },
        indexed,
        log: UpdateLog {
            updates: old.updates + log.updates,
            added: old.added + log.added,
            removed: old.removed + log.removed,
            splits: old.splits + log.splits,
            merges: old.merges + log.merges,
        },
    };
    let path = write_delta(session, &delta, &change)?;
    let delta_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(Report {
        generation,
        splits: log.splits,
        merges: log.merges,
        delta_bytes,
        embedded_again: session.embedded_again,
        ..Report::default()
    })
}

/// Writes `delta` as `T.delta.next`, commits the lexical index naming it
/// (its generation and hash), then renames it over `T.delta`; the delta's
/// path.
fn write_delta(session: &mut Session, delta: &Delta, change: &Change) -> Result<PathBuf> {
    let generation = delta.generation;
    let next = delta::next_path(&session.path);
    let hash = delta::write(delta, &next, session.base)?;
    let deletes: Vec<u64> = change.deletes.iter().map(|d| u64::from(d.0)).collect();
    let lexical = session
        .tree
        .lexical_mut()
        .ok_or_else(|| Error::Param("the tree has no lexical index".into()))?;
    treenav_tree::fault::io_step().map_err(|source| TreeError::Io {
        path: next.clone(),
        source,
    })?;
    Arc::get_mut(&mut lexical.index)
        .ok_or_else(|| Error::Task("the lexical index is shared".into()))?
        .apply(&deletes, &change.adds, &delta::payload(generation, hash))?;
    let path = delta_path(&session.path);
    treenav_tree::fault::io_step()
        .and_then(|()| treenav_files::atomic::rename(&next, &path))
        .map_err(|source| TreeError::Io {
            path: path.clone(),
            source,
        })?;
    Ok(path)
}

/// What a compaction did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compacted {
    /// Nodes before (removed ones included) and after.
    pub nodes_before: usize,
    /// Nodes after.
    pub nodes_after: usize,
    /// The updates folded in.
    pub updates: Option<UpdateLog>,
}

/// Folds the delta into a new tree file: removed nodes dropped, ids
/// renumbered, the text store, lexical index and vectors written anew
/// (as `treenav build` writes them), the delta removed.
pub fn compact(path: &Path) -> Result<Compacted> {
    let lock = Lock::acquire(path)?;
    treenav_tree::generation::settle_locked(path)?;
    // Loaded with its vectors, those its updates added included.
    let tree = treenav_tree::file::load(path)?;
    let before = tree.len();
    let updates = tree.updates().cloned();
    let compacted = tree.compacted()?;
    let after = compacted.len();
    treenav_tree::file::save_locked(&compacted, path, &lock)?;
    Ok(Compacted {
        nodes_before: before,
        nodes_after: after,
        updates,
    })
}

#[cfg(test)]
mod tests;
