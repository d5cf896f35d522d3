//! The lexical side of a tree: a BM25 index over its document nodes (title
//! and all passages: the navigator's lexical entry) and the passage
//! statistics the lexical judge scores with, both with the tree's one
//! [`Analyzer`].
//!
//! Both are computed from the tree once, when it is saved, and stored beside
//! it: the statistics and the document order in `T.tree.lexical`, the index
//! in tantivy's folder `T.tree.tantivy` (memory-mapped when opened). A
//! loaded tree carries them, so opening a tree does not re-read every
//! passage. A `.lexical` file of layout 1 (trees saved before tantivy)
//! holds the hand-written BM25 index of that time, which is no longer
//! read, and its unstemmed statistics: such trees still load, their
//! document index built anew in memory with the same `words` analyzer
//! when they are opened, until rebuilt. Trees saved before format version
//! 4 have no side file: the navigator computes both at start.

use crate::filter::Allowed;
use crate::id::NodeId;
use crate::store::ReadAt;
use crate::store::{read_side_header, side_path, write_atomically, FileAt, SideFile};
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use treenav_text::analyzer::Analyzer;
use treenav_text::index::LexicalIndex;
use treenav_text::stats::CorpusStats;

use crate::format::{word, Header};
use treenav_files::magic::LEXICAL as LEXICAL_MAGIC;
/// Layout 2: statistics with their analyzer, the index in tantivy's folder.
const LEXICAL_VERSION: u32 = 2;
/// The layouts this build reads (1: statistics only; its hand-written
/// index is not read).
pub(crate) const LEXICAL_VERSIONS: &[u32] = &[1, 2];

/// The suffix of the tantivy folder: `T.tree` → `T.tree.tantivy`.
pub const INDEX_SUFFIX: &str = "tantivy";
/// Magic, version, reserved, content hash, documents, statistics bytes,
/// index bytes.
const LEXICAL_HEADER: usize = Header::len(3);

/// The suffix of the lexical side file: `T.tree` → `T.tree.lexical`.
pub const LEXICAL_SUFFIX: &str = "lexical";

/// A BM25 index over document nodes (title + all passages): an inverted
/// index (tantivy, keyed by node id), not a vector index.
#[derive(Debug)]
pub struct DocumentIndex {
    index: LexicalIndex,
    /// The documents in index order (node order).
    nodes: Vec<NodeId>,
}

impl DocumentIndex {
    /// Indexes documents given as (node, text), in that order (see
    /// `Tree::document_index`), in memory with `analyzer`.
    pub fn new(analyzer: Analyzer, documents: Vec<(NodeId, String)>) -> Result<DocumentIndex> {
        let keyed: Vec<(u64, &str)> = documents
            .iter()
            .map(|(n, t)| (u64::from(n.0), t.as_str()))
            .collect();
        let index = LexicalIndex::build(None, analyzer, &keyed).map_err(Error::Lexical)?;
        Ok(DocumentIndex {
            index,
            nodes: documents.into_iter().map(|(n, _)| n).collect(),
        })
    }

    /// How many documents it indexes.
    pub fn len(&self) -> usize {
        self.index.len() as usize
    }

    /// Deletes and adds documents (by node id) in one commit naming
    /// `payload` (see [`LexicalIndex::apply`]).
    pub fn apply(&mut self, deletes: &[u64], adds: &[(u64, String)], payload: &str) -> Result<()> {
        self.index
            .apply(deletes, adds, payload)
            .map_err(Error::Lexical)
    }

    /// The payload of the index's last commit (`None`: as built).
    pub fn payload(&self) -> Result<Option<String>> {
        self.index.payload().map_err(Error::Lexical)
    }

    /// Whether it indexes none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The analyzer of the index and its queries.
    pub fn analyzer(&self) -> Analyzer {
        self.index.analyzer()
    }

    /// The tantivy folder it was opened from, if any (`None`: in memory).
    pub fn folder(&self) -> Option<&Path> {
        self.index.folder()
    }

    /// Whether a read found the index's files damaged.
    pub fn is_damaged(&self) -> bool {
        self.index.is_damaged()
    }

    /// The index's files that fail their checksums (none: whole).
    pub fn verify(&self) -> Result<Vec<PathBuf>> {
        self.index.verify().map_err(Error::encode)
    }

    /// The top `n` document nodes for a query with their BM25 scores, best
    /// first (equal scores: the lower node id first). Fails only when a
    /// stored index cannot be read.
    pub fn search_scored(&self, query: &str, n: usize) -> Result<Vec<(NodeId, f64)>> {
        self.search_in(query, n, None)
    }

    /// [`DocumentIndex::search_scored`] over the documents a filter lets
    /// through only: their top `n`, however far down the whole ranking.
    pub fn search_allowed(
        &self,
        query: &str,
        n: usize,
        allowed: &Arc<Allowed>,
    ) -> Result<Vec<(NodeId, f64)>> {
        self.search_in(query, n, Some(allowed))
    }

    fn search_in(
        &self,
        query: &str,
        n: usize,
        allowed: Option<&Arc<Allowed>>,
    ) -> Result<Vec<(NodeId, f64)>> {
        let node = |k: u64| u32::try_from(k).ok().map(NodeId);
        let hits = match allowed {
            None => self.index.search(query, n),
            Some(a) => {
                let a = a.clone();
                self.index
                    .search_where(query, n, move |k| node(k).is_some_and(|id| a.contains(id)))
            }
        }
        .map_err(Error::Lexical)?;
        Ok(hits
            .into_iter()
            .filter_map(|(k, score)| Some((node(k)?, f64::from(score))))
            .collect())
    }
}

/// [`CorpusStats`] as stored (layout 2): terms sorted, so the same
/// statistics are the same bytes (a hash map's order changes from run to
/// run), with their analyzer.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredStats {
    documents: u64,
    mean_terms: f64,
    df: Vec<(String, u64)>,
    analyzer: Analyzer,
}

/// Layout 1's statistics: no analyzer (`words`), no tantivy index.
#[derive(serde::Deserialize)]
struct StoredStatsV1 {
    documents: u64,
    mean_terms: f64,
    df: Vec<(String, u64)>,
}

impl StoredStats {
    fn of(stats: &CorpusStats) -> StoredStats {
        let mut df: Vec<(String, u64)> = stats.df.iter().map(|(t, n)| (t.clone(), *n)).collect();
        df.sort_unstable();
        StoredStats {
            documents: stats.documents,
            mean_terms: stats.mean_terms,
            df,
            analyzer: stats.analyzer,
        }
    }

    fn into_stats(self) -> CorpusStats {
        CorpusStats {
            documents: self.documents,
            mean_terms: self.mean_terms,
            df: self.df.into_iter().collect(),
            analyzer: self.analyzer,
        }
    }
}

/// The file in the tantivy folder naming the `.lexical` file it goes with
/// (that file's content hash, which the tree file records): the pairing
/// is checked without making the `.lexical` file depend on tantivy's
/// random segment ids, so two builds of one corpus stay byte-identical.
const PAIRING_FILE: &str = "treenav-lexical.hash";

/// The `.lexical` content hash a tantivy folder says it goes with.
fn paired_hash(dir: &Path) -> Result<String> {
    let kind = treenav_files::Kind::new("lexical index pairing file", 1 << 10);
    Ok(
        treenav_files::read_to_string(&dir.join(PAIRING_FILE), &kind)?
            .trim()
            .to_string(),
    )
}

/// Writes `index` into the folder `dir` beside a tree: into a new folder
/// first, then renamed into place (an old folder is moved aside and
/// removed), so a served tree keeps reading the files it has open.
fn write_index_folder(index: &LexicalIndex, dir: &Path, paired: u128) -> Result<()> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let base = crate::store::temp_path(dir).into_os_string();
    let named = |suffix: &str| {
        let mut name = base.clone();
        name.push(suffix);
        PathBuf::from(name)
    };
    let (tmp, old) = (named("-new"), named("-old"));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp).map_err(io)?;
    let write = || -> Result<()> {
        crate::fault::io_step().map_err(io)?;
        index.write_to(&tmp).map_err(Error::encode)?;
        std::fs::write(tmp.join(PAIRING_FILE), format!("{paired:032x}\n")).map_err(io)?;
        crate::fault::io_step().map_err(io)?;
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&old);
            treenav_files::atomic::rename(dir, &old).map_err(io)?;
            treenav_files::atomic::rename(&tmp, dir).map_err(io)?;
            let _ = std::fs::remove_dir_all(&old);
        } else {
            treenav_files::atomic::rename(&tmp, dir).map_err(io)?;
        }
        Ok(())
    };
    write().inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&tmp);
    })
}

/// A tree's document index and passage statistics, together.
#[derive(Debug, Clone)]
pub struct Lexical {
    /// The BM25 index over document nodes.
    pub index: Arc<DocumentIndex>,
    /// The passage statistics.
    pub stats: Arc<CorpusStats>,
    /// The side file it was read from (`None` when computed in memory).
    pub path: Option<PathBuf>,
    /// That file, open, to notice it rewritten in place.
    pub(crate) file: Option<Arc<FileAt>>,
    /// Read from a layout-1 file (its index built anew when opened).
    pub(crate) layout_1: bool,
}

impl Lexical {
    /// Writes both beside the tree file `tree_path`: the index as the
    /// folder `T.tantivy`, then the statistics and document order as the
    /// side file `T.lexical` (layout 2), which records the index's
    /// `meta.json` hash. A layout-1 index is not written again: the caller
    /// computes a new one ([`crate::Tree::lexical_or_computed`]).
    pub(crate) fn write(&self, tree_path: &Path) -> Result<SideFile> {
        let path = side_path(tree_path, LEXICAL_SUFFIX);
        if self.layout_1 {
            return Err(Error::Param(format!(
                "{}: a layout-1 lexical side is not written again; compute the lexical side anew",
                path.display()
            )));
        }
        let index = &self.index.index;
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let stats = postcard::to_stdvec(&StoredStats::of(&self.stats)).map_err(Error::encode)?;
        let documents = self.index.nodes.len() as u64;
        let mut bytes = Vec::with_capacity(self.index.nodes.len() * 4 + stats.len());
        for node in &self.index.nodes {
            bytes.extend_from_slice(&node.0.to_le_bytes());
        }
        bytes.extend_from_slice(&stats);
        // The folder first, naming the `.lexical` content it goes with.
        let dir = side_path(tree_path, INDEX_SUFFIX);
        write_index_folder(index, &dir, twox_hash::XxHash3_128::oneshot(&bytes))?;
        let body = |out: &mut dyn Write| -> Result<()> { out.write_all(&bytes).map_err(io) };
        let stats_len = stats.len() as u64;
        let header_of = |hash: u128, _len: u64| {
            Header {
                magic: LEXICAL_MAGIC,
                version: LEXICAL_VERSION,
                hash,
                words: &[documents, stats_len, 0],
            }
            .to_bytes()
        };
        write_atomically(&path, LEXICAL_HEADER, body, header_of)
    }

    /// Whether the index is layout 1's hand-written one.
    pub fn is_layout_1(&self) -> bool {
        self.layout_1
    }

    /// Opens the side file of the tree file `tree_path`, which must be the
    /// one `expected` describes and index `documents.0` documents, each a
    /// node `documents.1` accepts as a document of the tree. A layout-1
    /// file's index is built anew by `rebuild` with its analyzer.
    pub(crate) fn open(
        tree_path: &Path,
        expected: SideFile,
        documents: (u64, &dyn Fn(NodeId) -> bool),
        indexed: Option<u64>,
        rebuild: &dyn Fn(Analyzer) -> Result<DocumentIndex>,
    ) -> Result<Lexical> {
        let path = side_path(tree_path, LEXICAL_SUFFIX);
        let bad = |problem: String| Error::BadFile {
            path: path.clone(),
            problem,
        };
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let (source, len) = FileAt::open(&path, &crate::store::SIDE_FILE)?;
        let (version, [count, stats_len, _index_len]) =
            read_header(&source, len, expected).map_err(&bad)?;
        if count != documents.0 {
            return Err(bad(format!(
                "indexes {count} documents, the tree has {}",
                documents.0
            )));
        }
        let nodes = read_nodes(&source, count).map_err(io)?;
        if let Some(n) = nodes.iter().find(|n| !(documents.1)(**n)) {
            return Err(bad(format!("node {} is not a document of the tree", n.0)));
        }
        let stats_at = LEXICAL_HEADER as u64 + count * 4;
        let mut raw = vec![0u8; stats_len as usize];
        source.read_at(stats_at, &mut raw).map_err(io)?;
        let undecodable =
            |e: postcard::Error| bad(format!("cannot decode the passage statistics: {e}"));
        let source = Arc::new(source);
        let (stats, index) = if version == 1 {
            let v1: StoredStatsV1 = postcard::from_bytes(&raw).map_err(undecodable)?;
            let stats = CorpusStats {
                documents: v1.documents,
                mean_terms: v1.mean_terms,
                df: v1.df.into_iter().collect(),
                analyzer: Analyzer::Words,
            };
            (stats, rebuild(Analyzer::Words)?)
        } else {
            let stored: StoredStats = postcard::from_bytes(&raw).map_err(undecodable)?;
            let dir = side_path(tree_path, INDEX_SUFFIX);
            // After updates, the index holds the documents the delta says.
            let holds = indexed.unwrap_or(count);
            let index = open_index_folder(&dir, expected.hash, holds, stored.analyzer)?;
            (stored.into_stats(), DocumentIndex { index, nodes })
        };
        if !stats.mean_terms.is_finite() || stats.mean_terms < 0.0 {
            return Err(bad(format!(
                "mean passage length {} out of range",
                stats.mean_terms
            )));
        }
        Ok(Lexical {
            index: Arc::new(index),
            stats: Arc::new(stats),
            path: Some(path),
            file: Some(source),
            layout_1: version == 1,
        })
    }
}

/// The `count` document node ids after the header.
fn read_nodes(source: &FileAt, count: u64) -> std::io::Result<Vec<NodeId>> {
    let mut raw = vec![0u8; count as usize * 4];
    source.read_at(LEXICAL_HEADER as u64, &mut raw)?;
    Ok(raw
        .chunks_exact(4)
        .map(|c| NodeId(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
        .collect())
}

/// Opens the tantivy folder beside a tree: the one paired with its
/// `.lexical` file (content hash `paired`), holding `documents` texts
/// analyzed with `analyzer`.
fn open_index_folder(
    dir: &Path,
    paired: u128,
    documents: u64,
    analyzer: Analyzer,
) -> Result<LexicalIndex> {
    let bad = |problem: String| Error::BadFile {
        path: dir.to_path_buf(),
        problem,
    };
    if !dir.is_dir() {
        return Err(bad(
            "the tree's lexical index folder is missing: copy it beside the tree file, or rebuild the tree".into(),
        ));
    }
    let pairing = paired_hash(dir).map_err(|e| {
        bad(format!(
            "is not a tree's lexical index folder ({PAIRING_FILE} cannot be read: {e}): copy the tree's own folder beside it, or rebuild the tree"
        ))
    })?;
    if pairing != format!("{paired:032x}") {
        return Err(bad(
            "this lexical index folder does not belong to its tree file (another build's): copy the matching folder beside the tree, or rebuild".into(),
        ));
    }
    let index = LexicalIndex::open(dir).map_err(|e| bad(e.to_string()))?;
    if index.len() != documents || index.analyzer() != analyzer {
        return Err(bad(format!(
            "indexes {} documents with the {} analyzer; the tree has {documents} with {analyzer}",
            index.len(),
            index.analyzer()
        )));
    }
    Ok(index)
}

/// Reads and checks a lexical file's header against what its tree expects;
/// returns its layout, the document count and the statistics' and index's
/// sizes.
fn read_header(source: &FileAt, len: u64, expected: SideFile) -> Result<(u32, [u64; 3]), String> {
    let head: [u8; LEXICAL_HEADER] = read_side_header(
        source,
        len,
        expected,
        LEXICAL_MAGIC,
        ".lexical",
        LEXICAL_VERSIONS,
    )?;
    let version = crate::format::version_of(&head);
    let sizes = [word(&head, 0), word(&head, 1), word(&head, 2)];
    let total = sizes[0]
        .checked_mul(4)
        .and_then(|n| n.checked_add(sizes[1]))
        .and_then(|n| n.checked_add(sizes[2]))
        .and_then(|n| n.checked_add(LEXICAL_HEADER as u64));
    if total != Some(len) {
        return Err("its section sizes do not add up to its size".into());
    }
    Ok((version, sizes))
}
