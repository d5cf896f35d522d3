//! The lexical side of a tree: a BM25 index over its document nodes (title
//! and all passages: the navigator's lexical entry) and the passage
//! statistics the lexical judge scores with.
//!
//! Both are computed from the tree once, when it is saved, and stored beside
//! it (`T.tree.lexical`); a loaded tree carries them, so opening a tree does
//! not re-read every passage. Trees saved before format version 4 have no
//! side file: the navigator computes both at start, as it always did.

use crate::id::NodeId;
use crate::store::{read_side_header, side_path, u64_at, write_atomically, FileAt, SideFile};
use crate::{Error, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use treenav_text::bm25::{Bm25Index, ReadAt};
use treenav_text::stats::CorpusStats;

/// The first bytes of a lexical side file.
pub const LEXICAL_MAGIC: &[u8; 8] = b"TRNVLEXI";
const LEXICAL_VERSION: u32 = 1;
/// Magic, version, reserved, content hash, documents, statistics bytes,
/// index bytes.
const LEXICAL_HEADER: usize = 8 + 4 + 4 + 16 + 8 + 8 + 8;

/// The suffix of the lexical side file: `T.tree` → `T.tree.lexical`.
pub const LEXICAL_SUFFIX: &str = "lexical";

/// A BM25 index over document nodes (title + all passages): an inverted
/// index, not a vector index.
#[derive(Debug)]
pub struct DocumentIndex {
    index: Bm25Index,
    /// Index position → document node (documents in node order).
    nodes: Vec<NodeId>,
}

impl DocumentIndex {
    /// Indexes documents given as (node, text), in that order (see
    /// `Tree::document_index`).
    pub fn new(documents: Vec<(NodeId, String)>) -> DocumentIndex {
        let (nodes, texts): (Vec<NodeId>, Vec<String>) = documents.into_iter().unzip();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        DocumentIndex {
            index: Bm25Index::new(&texts),
            nodes,
        }
    }

    /// How many documents it indexes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether it indexes none.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The top `n` document nodes for a query with their BM25 scores, best
    /// first (ties: the lower node id first, as documents are indexed in
    /// node order). Fails only when a stored index cannot be read.
    pub fn search_scored(&self, query: &str, n: usize) -> Result<Vec<(NodeId, f64)>> {
        let hits = self
            .index
            .search(query, n)
            .map_err(|e| Error::InvalidTree(format!("lexical index: {e}")))?;
        Ok(hits
            .into_iter()
            .filter_map(|(i, score)| Some((*self.nodes.get(i as usize)?, f64::from(score))))
            .collect())
    }
}

/// [`CorpusStats`] as stored: terms sorted, so the same statistics are
/// the same bytes (a hash map's order changes from run to run).
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredStats {
    documents: u64,
    mean_terms: f64,
    df: Vec<(String, u64)>,
}

impl From<&CorpusStats> for StoredStats {
    fn from(stats: &CorpusStats) -> StoredStats {
        let mut df: Vec<(String, u64)> = stats.df.iter().map(|(t, n)| (t.clone(), *n)).collect();
        df.sort_unstable();
        StoredStats {
            documents: stats.documents,
            mean_terms: stats.mean_terms,
            df,
        }
    }
}

impl From<StoredStats> for CorpusStats {
    fn from(stored: StoredStats) -> CorpusStats {
        CorpusStats {
            documents: stored.documents,
            mean_terms: stored.mean_terms,
            df: stored.df.into_iter().collect(),
        }
    }
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
}

impl Lexical {
    /// Writes both as the side file of the tree file `tree_path`.
    pub(crate) fn write(&self, tree_path: &Path) -> Result<SideFile> {
        let path = side_path(tree_path, LEXICAL_SUFFIX);
        let io = |source| Error::Io {
            path: path.clone(),
            source,
        };
        let stats = postcard::to_stdvec(&StoredStats::from(&*self.stats))
            .map_err(|e| Error::Encode(e.to_string()))?;
        let index_len = self.index.index.stored_len();
        let documents = self.index.nodes.len() as u64;
        let body = |out: &mut dyn Write| -> Result<()> {
            for node in &self.index.nodes {
                out.write_all(&node.0.to_le_bytes()).map_err(io)?;
            }
            out.write_all(&stats).map_err(io)?;
            let mut out = out;
            self.index
                .index
                .write_to(&mut out)
                .map_err(|e| Error::Encode(format!("lexical index: {e}")))
        };
        let stats_len = stats.len() as u64;
        let header_of = |hash: u128, _len: u64| {
            let mut h = Vec::with_capacity(LEXICAL_HEADER);
            h.extend_from_slice(LEXICAL_MAGIC);
            h.extend_from_slice(&LEXICAL_VERSION.to_le_bytes());
            h.extend_from_slice(&0u32.to_le_bytes());
            h.extend_from_slice(&hash.to_le_bytes());
            for n in [documents, stats_len, index_len] {
                h.extend_from_slice(&n.to_le_bytes());
            }
            h
        };
        write_atomically(&path, LEXICAL_HEADER, body, header_of)
    }

    /// Opens the side file of the tree file `tree_path`, which must be the
    /// one `expected` describes and index `documents.0` documents, each a
    /// node `documents.1` accepts as a document of the tree.
    pub(crate) fn open(
        tree_path: &Path,
        expected: SideFile,
        documents: (u64, &dyn Fn(NodeId) -> bool),
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
        let [count, stats_len, index_len] = read_header(&source, len, expected).map_err(&bad)?;
        if count != documents.0 {
            return Err(bad(format!(
                "indexes {count} documents, the tree has {}",
                documents.0
            )));
        }
        let mut raw = vec![0u8; count as usize * 4];
        source
            .read_at(LEXICAL_HEADER as u64, &mut raw)
            .map_err(io)?;
        let nodes: Vec<NodeId> = raw
            .chunks_exact(4)
            .map(|c| NodeId(u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect();
        if let Some(n) = nodes.iter().find(|n| !(documents.1)(**n)) {
            return Err(bad(format!("node {} is not a document of the tree", n.0)));
        }
        let stats_at = LEXICAL_HEADER as u64 + count * 4;
        let mut raw = vec![0u8; stats_len as usize];
        source.read_at(stats_at, &mut raw).map_err(io)?;
        let stats: CorpusStats = postcard::from_bytes::<StoredStats>(&raw)
            .map_err(|e| bad(format!("cannot decode the passage statistics: {e}")))?
            .into();
        if !stats.mean_terms.is_finite() || stats.mean_terms < 0.0 {
            return Err(bad(format!(
                "mean passage length {} out of range",
                stats.mean_terms
            )));
        }
        let source = Arc::new(source);
        let index = Bm25Index::open(source.clone(), stats_at + stats_len, index_len)
            .map_err(|e| bad(e.to_string()))?;
        Ok(Lexical {
            index: Arc::new(DocumentIndex { index, nodes }),
            stats: Arc::new(stats),
            path: Some(path),
            file: Some(source),
        })
    }
}

/// Reads and checks a lexical file's header against what its tree expects;
/// returns the document count and the statistics' and index's sizes.
fn read_header(source: &FileAt, len: u64, expected: SideFile) -> Result<[u64; 3], String> {
    let head: [u8; LEXICAL_HEADER] =
        read_side_header(source, len, expected, LEXICAL_MAGIC, ".lexical")?;
    let sizes = [u64_at(&head, 32), u64_at(&head, 40), u64_at(&head, 48)];
    let total = sizes[0]
        .checked_mul(4)
        .and_then(|n| n.checked_add(sizes[1]))
        .and_then(|n| n.checked_add(sizes[2]))
        .and_then(|n| n.checked_add(LEXICAL_HEADER as u64));
    if total != Some(len) {
        return Err("its section sizes do not add up to its size".into());
    }
    Ok(sizes)
}
