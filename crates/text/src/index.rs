//! The lexical index: BM25 over keyed texts, held by tantivy (posting
//! lists with skip data, Block-WAND top-k, segments, an mmap'd directory),
//! with one [`Analyzer`] for the index and its queries. Built in memory
//! (baselines, trees computed at start) or in a folder beside a tree.
//!
//! tantivy's BM25 uses k1 = 1.2 and b = 0.75, fixed; IDF is
//! `ln(1 + (N - n + 0.5) / (n + 0.5))`, over every segment together.

use crate::analyzer::Analyzer;
use std::collections::HashSet;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::directory::{Directory as _, MmapDirectory, RamDirectory};
use tantivy::index::SegmentId;
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, INDEXED,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

/// The indexed text's field.
const BODY: &str = "body";
/// The caller's key of each text (a fast field).
const KEY: &str = "key";
/// Indexing memory per thread, bytes.
const WRITER_MEMORY: usize = 64 << 20;
/// Texts indexed by one thread below this count (the index is then one
/// segment in key order); two threads above, their segments merged into one.
const ONE_THREAD_BELOW: usize = 100_000;
/// Texts per search segment of an index as built: a larger index is
/// written in `len / SEGMENT_TEXTS` segments (at most [`MAX_SEGMENTS`]),
/// searched in parallel. At 5M generated texts one segment's top-k took
/// 20–35 ms whatever k (Block-WAND prunes little on common terms).
const SEGMENT_TEXTS: usize = 2_500_000;
const MAX_SEGMENTS: usize = 8;

/// How many segments an index of `texts` texts is built in.
fn search_segments(texts: usize) -> usize {
    (texts / SEGMENT_TEXTS).clamp(1, MAX_SEGMENTS)
}

/// Why an index could not be built, opened or searched.
#[derive(Debug, thiserror::Error)]
#[error("lexical index: {0}")]
pub struct IndexError(String);

impl From<tantivy::TantivyError> for IndexError {
    /// Data tantivy found corrupt (a term dictionary that is no FST, a
    /// bad header) is named damaged, as a panic while reading is.
    fn from(e: tantivy::TantivyError) -> IndexError {
        let corrupt = match &e {
            tantivy::TantivyError::DataCorruption(_) => true,
            tantivy::TantivyError::IoError(io) => io.kind() == std::io::ErrorKind::InvalidData,
            _ => false,
        };
        if corrupt {
            IndexError(format!("its files are {DAMAGED} ({e}); {REPAIR}"))
        } else {
            IndexError(e.to_string())
        }
    }
}

/// What to do about a damaged index.
const REPAIR: &str = "run `treenav inspect --verify` on the tree, and rebuild or restore it";

const DAMAGED: &str = "damaged";

/// Runs a read of tantivy's files. A corrupt file can make tantivy panic
/// (a flipped byte in a fieldnorm or posting file): the panic becomes an
/// error naming the index as damaged, at this one boundary, so a query
/// fails cleanly instead of taking its thread (or a server's worker) down.
fn guarded<T>(read: impl FnOnce() -> Result<T, IndexError>) -> Result<T, IndexError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        Err(IndexError(format!(
            "its files are {DAMAGED} (reading them failed: {why}); {REPAIR}"
        )))
    })
}

/// An mmap'd folder whose reader lock (`.tantivy-meta.lock`) is skipped
/// when the folder cannot be written (a tree read by another user, a
/// read-only mount): reading needs no lock file of its own.
#[derive(Debug, Clone)]
struct ReadOnlyAware(MmapDirectory);

impl tantivy::directory::Directory for ReadOnlyAware {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> Result<
        std::sync::Arc<dyn tantivy::directory::FileHandle>,
        tantivy::directory::error::OpenReadError,
    > {
        self.0.get_file_handle(path)
    }
    fn delete(&self, path: &Path) -> Result<(), tantivy::directory::error::DeleteError> {
        self.0.delete(path)
    }
    fn exists(&self, path: &Path) -> Result<bool, tantivy::directory::error::OpenReadError> {
        self.0.exists(path)
    }
    fn open_write(
        &self,
        path: &Path,
    ) -> Result<tantivy::directory::WritePtr, tantivy::directory::error::OpenWriteError> {
        self.0.open_write(path)
    }
    fn atomic_read(
        &self,
        path: &Path,
    ) -> Result<Vec<u8>, tantivy::directory::error::OpenReadError> {
        self.0.atomic_read(path)
    }
    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.0.atomic_write(path, data)
    }
    fn sync_directory(&self) -> std::io::Result<()> {
        self.0.sync_directory()
    }
    fn watch(
        &self,
        callback: tantivy::directory::WatchCallback,
    ) -> tantivy::Result<tantivy::directory::WatchHandle> {
        self.0.watch(callback)
    }
    fn acquire_lock(
        &self,
        lock: &tantivy::directory::Lock,
    ) -> Result<tantivy::directory::DirectoryLock, tantivy::directory::error::LockError> {
        use tantivy::directory::error::LockError;
        match self.0.acquire_lock(lock) {
            Err(LockError::IoError(e))
                if lock.filepath == tantivy::directory::META_LOCK.filepath
                    && matches!(
                        e.kind(),
                        std::io::ErrorKind::PermissionDenied
                            | std::io::ErrorKind::ReadOnlyFilesystem
                    ) =>
            {
                Ok(tantivy::directory::DirectoryLock::from(Box::new(())))
            }
            other => other,
        }
    }
}

/// Where an index's files are.
#[derive(Clone)]
enum Files {
    Memory(RamDirectory),
    Folder(PathBuf),
}

/// BM25 over keyed texts, in tantivy.
pub struct LexicalIndex {
    index: Index,
    files: Files,
    reader: IndexReader,
    body: Field,
    analyzer: Analyzer,
    texts: u64,
    /// Set when a read found its files damaged (a panic caught).
    damaged: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for LexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalIndex")
            .field("analyzer", &self.analyzer)
            .field("texts", &self.texts)
            .finish()
    }
}

fn schema(analyzer: Analyzer) -> (Schema, Field) {
    let mut builder = Schema::builder();
    let indexing = TextFieldIndexing::default()
        .set_tokenizer(analyzer.name())
        .set_index_option(IndexRecordOption::WithFreqs);
    let body = builder.add_text_field(BODY, TextOptions::default().set_indexing_options(indexing));
    // Indexed too, so that a text is deleted by its key's term.
    builder.add_u64_field(KEY, FAST | INDEXED);
    (builder.build(), body)
}

impl LexicalIndex {
    /// Indexes `texts` (key, text) with `analyzer`, in `dir` (an empty
    /// folder, written there) or in memory.
    pub fn build<S: AsRef<str>>(
        dir: Option<&Path>,
        analyzer: Analyzer,
        texts: &[(u64, S)],
    ) -> Result<LexicalIndex, IndexError> {
        LexicalIndex::build_in(dir, analyzer, texts, search_segments(texts.len()))
    }

    /// [`LexicalIndex::build`] in `runs` segments (one per consecutive run
    /// of texts).
    fn build_in<S: AsRef<str>>(
        dir: Option<&Path>,
        analyzer: Analyzer,
        texts: &[(u64, S)],
        runs: usize,
    ) -> Result<LexicalIndex, IndexError> {
        let (schema, body) = schema(analyzer);
        let key = schema.get_field(KEY)?;
        let (index, files) = match dir {
            Some(d) => (
                Index::create_in_dir(d, schema)?,
                Files::Folder(d.to_path_buf()),
            ),
            None => {
                let ram = RamDirectory::create();
                let index = Index::create(ram.clone(), schema, Default::default())?;
                (index, Files::Memory(ram))
            }
        };
        index
            .tokenizers()
            .register(analyzer.name(), analyzer.tantivy());
        let threads = if texts.len() < ONE_THREAD_BELOW { 1 } else { 2 };
        let mut writer: IndexWriter =
            index.writer_with_num_threads(threads, threads * WRITER_MEMORY)?;
        // No background merges: the one merge below takes every segment,
        // and a merge tantivy started on its own after the commit would
        // take some of them first (at 5M passages: "the segments that were
        // merged could not be found in the SegmentManager").
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
        // One segment per consecutive run of texts: Block-WAND over one
        // segment raises its threshold once, not once a segment; a large
        // index gets a few, which a query searches on as many cores.
        if texts.is_empty() {
            writer.commit()?;
        }
        for run in texts.chunks(texts.len().div_ceil(runs.max(1)).max(1)) {
            let before: HashSet<SegmentId> = index.searchable_segment_ids()?.into_iter().collect();
            for (k, text) in run {
                let mut doc = TantivyDocument::default();
                doc.add_text(body, text.as_ref());
                doc.add_u64(key, *k);
                writer.add_document(doc)?;
            }
            writer.commit()?;
            let new: Vec<SegmentId> = index
                .searchable_segment_ids()?
                .into_iter()
                .filter(|s| !before.contains(s))
                .collect();
            if new.len() > 1 {
                writer.merge(&new).wait()?;
            }
        }
        writer.wait_merging_threads()?;
        LexicalIndex::from_index(index, files, body, analyzer)
    }

    /// Opens an index a [`LexicalIndex::build`] wrote in `dir` (memory-mapped).
    /// A folder this process cannot write is opened read-only (tantivy's
    /// reader lock file is skipped: no writer of ours can be in it).
    pub fn open(dir: &Path) -> Result<LexicalIndex, IndexError> {
        let mmap =
            MmapDirectory::open(dir).map_err(|e| IndexError(format!("{}: {e}", dir.display())))?;
        let index = guarded(|| Ok(Index::open(ReadOnlyAware(mmap))?))?;
        let schema = index.schema();
        let body = schema.get_field(BODY)?;
        let tokenizer = match schema.get_field_entry(body).field_type() {
            tantivy::schema::FieldType::Str(options) => options
                .get_indexing_options()
                .map(|o| o.tokenizer().to_string()),
            _ => None,
        }
        .ok_or_else(|| {
            IndexError(format!(
                "{}: the `{BODY}` field is not indexed text",
                dir.display()
            ))
        })?;
        let analyzer: Analyzer = tokenizer
            .parse()
            .map_err(|e| IndexError(format!("{}: {e}", dir.display())))?;
        index
            .tokenizers()
            .register(analyzer.name(), analyzer.tantivy());
        LexicalIndex::from_index(index, Files::Folder(dir.to_path_buf()), body, analyzer)
    }

    fn from_index(
        mut index: Index,
        files: Files,
        body: Field,
        analyzer: Analyzer,
    ) -> Result<LexicalIndex, IndexError> {
        // Segments searched side by side, one thread each up to the cores
        // (the scores are the same: BM25's statistics are the whole index's).
        let segments = guarded(|| Ok(index.searchable_segment_ids()?.len()))?;
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        if segments > 1 && cores > 1 {
            // Threads that cannot be started leave the search on the
            // calling thread: slower, the same results.
            let _ = index.set_multithread_executor(segments.min(cores));
        }
        let reader: IndexReader = guarded(|| {
            Ok(index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into()?)
        })?;
        let texts = guarded(|| Ok(reader.searcher().num_docs()))?;
        // Every segment's term dictionary opened now: a damaged one fails
        // the open (a server marks that tree not ready), not each query.
        guarded(|| {
            for segment in reader.searcher().segment_readers() {
                segment.inverted_index(body)?;
            }
            Ok(())
        })?;
        Ok(LexicalIndex {
            index,
            files,
            reader,
            body,
            analyzer,
            texts,
            damaged: Default::default(),
        })
    }

    /// [`guarded`], remembering damage found.
    fn read<T>(&self, read: impl FnOnce() -> Result<T, IndexError>) -> Result<T, IndexError> {
        guarded(read).inspect_err(|e| {
            if e.0.contains(DAMAGED) {
                self.damaged
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        })
    }

    /// Whether a read found the index's files damaged.
    pub fn is_damaged(&self) -> bool {
        self.damaged.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Checks every file of the index against the checksum tantivy wrote
    /// in its footer: the damaged files, none when it is whole.
    pub fn verify(&self) -> Result<Vec<PathBuf>, IndexError> {
        let mut damaged: Vec<PathBuf> = guarded(|| Ok(self.index.validate_checksum()?))?
            .into_iter()
            .collect();
        damaged.sort();
        Ok(damaged)
    }

    /// The analyzer of the index and its queries.
    pub fn analyzer(&self) -> Analyzer {
        self.analyzer
    }

    /// How many texts it holds.
    pub fn len(&self) -> u64 {
        self.texts
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.texts == 0
    }

    /// The top `n` keys for `query` with their BM25 scores, best first;
    /// equal scores in key order. A query without terms finds nothing.
    pub fn search(&self, query: &str, n: usize) -> Result<Vec<(u64, f32)>, IndexError> {
        self.read(|| self.search_keys(query, n, None::<fn(u64) -> bool>))
    }

    /// [`LexicalIndex::search`] over the texts whose key `keep` accepts
    /// only (a metadata filter): the top `n` of those, however far down
    /// the whole ranking they are.
    pub fn search_where<F>(
        &self,
        query: &str,
        n: usize,
        keep: F,
    ) -> Result<Vec<(u64, f32)>, IndexError>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        self.read(|| self.search_keys(query, n, Some(keep)))
    }

    fn search_keys<F>(
        &self,
        query: &str,
        n: usize,
        keep: Option<F>,
    ) -> Result<Vec<(u64, f32)>, IndexError>
    where
        F: Fn(u64) -> bool + Send + Sync + Clone + 'static,
    {
        let mut terms = self.analyzer.terms(query);
        terms.sort_unstable();
        terms.dedup();
        if terms.is_empty() || n == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|t| {
                let term = Term::from_field_text(self.body, t);
                let q: Box<dyn Query> =
                    Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs));
                (Occur::Should, q)
            })
            .collect();
        let query = BooleanQuery::new(clauses);
        let searcher = self.reader.searcher();
        // A few more than asked, so that equal scores at the cut are put in
        // key order whatever the segments' order.
        let top_docs = TopDocs::with_limit(n + 16).order_by_score();
        let top = match keep {
            None => searcher.search(&query, &top_docs)?,
            Some(keep) => {
                let filtered = FilterCollector::new(KEY.to_string(), keep, top_docs);
                searcher.search(&query, &filtered)?
            }
        };
        let mut columns = Vec::new();
        for segment in searcher.segment_readers() {
            columns.push(segment.fast_fields().u64(KEY)?);
        }
        let mut hits: Vec<(u64, f32)> = top
            .into_iter()
            .filter_map(|(score, at)| {
                let key = columns.get(at.segment_ord as usize)?.first(at.doc_id)?;
                Some((key, score))
            })
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        hits.truncate(n);
        Ok(hits)
    }

    /// Deletes the texts of `deletes` (keys) and adds `adds` (key, text) in
    /// one tantivy commit carrying `payload` (read back with
    /// [`LexicalIndex::payload`]), then searches the new commit. New texts
    /// go into a new segment; merges are left to tantivy's merge policy.
    /// Only an index in a folder is updated (an in-memory one would be
    /// lost); a crash before the commit leaves the index as it was.
    pub fn apply<S: AsRef<str>>(
        &mut self,
        deletes: &[u64],
        adds: &[(u64, S)],
        payload: &str,
    ) -> Result<(), IndexError> {
        if matches!(self.files, Files::Memory(_)) {
            return Err(IndexError(
                "an index in memory is not updated in place".into(),
            ));
        }
        let schema = self.index.schema();
        let key = schema.get_field(KEY)?;
        let indexed = schema.get_field_entry(key).is_indexed();
        let mut writer: IndexWriter = self.index.writer_with_num_threads(1, WRITER_MEMORY)?;
        for k in deletes {
            let term = Term::from_field_u64(key, *k);
            if indexed {
                writer.delete_term(term);
            } else {
                // An index written before keys were indexed: by the fast field.
                let only = RangeQuery::new(Bound::Included(term.clone()), Bound::Included(term));
                writer.delete_query(Box::new(only))?;
            }
        }
        for (k, text) in adds {
            let mut doc = TantivyDocument::default();
            doc.add_text(self.body, text.as_ref());
            doc.add_u64(key, *k);
            writer.add_document(doc)?;
        }
        let mut commit = writer.prepare_commit()?;
        commit.set_payload(payload);
        commit.commit()?;
        writer.wait_merging_threads()?;
        self.reader.reload()?;
        self.texts = self.reader.searcher().num_docs();
        Ok(())
    }

    /// The payload of the index's last commit (see [`LexicalIndex::apply`]);
    /// `None` for an index as built.
    pub fn payload(&self) -> Result<Option<String>, IndexError> {
        Ok(self.index.load_metas()?.payload)
    }

    /// The payload of the last commit of the index in `dir`, read from its
    /// `meta.json` without opening the index.
    pub fn payload_in(dir: &Path) -> Result<Option<String>, IndexError> {
        let path = dir.join("meta.json");
        let bad = |e: String| IndexError(format!("{}: {e}", path.display()));
        let text = std::fs::read(&path).map_err(|e| bad(e.to_string()))?;
        let meta: serde_json::Value =
            serde_json::from_slice(&text).map_err(|e| bad(e.to_string()))?;
        Ok(meta
            .get("payload")
            .and_then(|p| p.as_str())
            .map(String::from))
    }

    /// The number of texts holding `term` (an analyzed term).
    pub fn doc_freq(&self, term: &str) -> Result<u64, IndexError> {
        let term = Term::from_field_text(self.body, term);
        self.read(|| Ok(self.reader.searcher().doc_freq(&term)?))
    }

    /// The index's tantivy handle.
    pub fn tantivy(&self) -> &Index {
        &self.index
    }

    /// Writes the index's files into `dir` (an existing, empty folder):
    /// from memory, or copied from the folder it was opened from.
    pub fn write_to(&self, dir: &Path) -> Result<(), IndexError> {
        let io = |e: std::io::Error| IndexError(format!("{}: {e}", dir.display()));
        match &self.files {
            Files::Memory(ram) => {
                let dest = MmapDirectory::open(dir)
                    .map_err(|e| IndexError(format!("{}: {e}", dir.display())))?;
                ram.persist(&dest)?;
                dest.sync_directory().map_err(io)?;
            }
            Files::Folder(from) => {
                for entry in std::fs::read_dir(from).map_err(io)? {
                    let entry = entry.map_err(io)?;
                    let name = entry.file_name();
                    let lock = name.to_string_lossy().ends_with(".lock");
                    if entry.file_type().map_err(io)?.is_file() && !lock {
                        std::fs::copy(entry.path(), dir.join(&name)).map_err(io)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The folder it was opened from or built in, if any.
    pub fn folder(&self) -> Option<&Path> {
        match &self.files {
            Files::Folder(p) => Some(p),
            Files::Memory(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts() -> Vec<(u64, &'static str)> {
        vec![
            (10, "Insulin lowers blood glucose after meals."),
            (20, "The striker scored a late goal in the cup final."),
            (30, "Glucose is a sugar; insulin regulates it."),
            (40, "Volcanoes erupt when magma reaches the surface."),
        ]
    }

    /// An index written in several segments (as a large one is) is searched
    /// on several threads and ranks exactly as one segment: the same keys,
    /// the same scores, equal scores in key order, with and without a
    /// filter (texts of varied words and lengths, some twice in two
    /// segments, so equal scores meet at some cuts).
    #[test]
    fn several_segments_rank_as_one() {
        let words: Vec<String> = (0..40).map(|i| format!("w{}x", i * 7 % 41)).collect();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize
        };
        let mut texts: Vec<(u64, String)> = (0..600u64)
            .map(|k| {
                let len = 3 + next() % 12;
                let text: Vec<&str> = (0..len)
                    .map(|_| words[next() % next().clamp(1, 40)].as_str())
                    .collect();
                (k, text.join(" "))
            })
            .collect();
        // Equal texts in different segments: equal scores at some cuts.
        for k in 0..60 {
            texts[k + 150].1 = texts[k].1.clone();
            texts[k + 450].1 = texts[k + 300].1.clone();
        }
        let one = LexicalIndex::build_in(None, Analyzer::EnStem, &texts, 1).expect("build");
        let four = LexicalIndex::build_in(None, Analyzer::EnStem, &texts, 4).expect("build");
        let segments = |i: &LexicalIndex| i.tantivy().searchable_segment_ids().expect("ids").len();
        assert_eq!((segments(&one), segments(&four)), (1, 4));
        for query in [
            "glucose insulin",
            "cup goal magma",
            "sugar meal meals",
            "insulin",
        ] {
            for n in [1, 5, 40, 600] {
                let a = one.search(query, n).expect("search");
                assert_eq!(a, four.search(query, n).expect("search"), "{query} top {n}");
                let even = |k: u64| k.is_multiple_of(2);
                let b = one.search_where(query, n, even).expect("search");
                assert_eq!(b, four.search_where(query, n, even).expect("search"));
            }
        }
        assert_eq!((search_segments(10), search_segments(5_000_000)), (1, 2));
        assert_eq!(search_segments(usize::MAX), MAX_SEGMENTS);
    }

    #[test]
    fn finds_stemmed_matches_best_first_in_memory_and_on_disk() {
        let mem = LexicalIndex::build(None, Analyzer::EnStem, &texts()).expect("build");
        assert_eq!(mem.len(), 4);
        let hits = mem.search("lowering glucose", 10).expect("search");
        assert_eq!(hits.first().map(|h| h.0), Some(10), "{hits:?}");
        assert!(hits.iter().any(|h| h.0 == 30));
        assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1));
        assert!(mem.search("the of and", 10).expect("search").is_empty());
        assert!(mem.search("goals", 0).expect("search").is_empty());

        let dir = tempfile::tempdir().expect("tempdir");
        let disk =
            LexicalIndex::build(Some(dir.path()), Analyzer::EnStem, &texts()).expect("build");
        drop(disk);
        let opened = LexicalIndex::open(dir.path()).expect("open");
        assert_eq!(opened.analyzer(), Analyzer::EnStem);
        // Written out from memory, and copied from a folder: the same answers.
        let (a, b) = (
            tempfile::tempdir().expect("a"),
            tempfile::tempdir().expect("b"),
        );
        mem.write_to(a.path()).expect("from memory");
        opened.write_to(b.path()).expect("from a folder");
        for d in [a.path(), b.path()] {
            let copy = LexicalIndex::open(d).expect("open the copy");
            assert_eq!(copy.search("lowering glucose", 10).expect("search"), hits);
        }
        assert_eq!(opened.search("lowering glucose", 10).expect("search"), hits);
        assert_eq!(opened.doc_freq("glucos").expect("df"), 2);
    }

    /// Up to 16 texts tied at the cut are put in key order (Block-WAND
    /// stays on: no tie-breaking inside tantivy's collector).
    #[test]
    fn equal_scores_come_in_key_order() {
        let same: Vec<(u64, &str)> = (0..20).rev().map(|k| (k, "same words here")).collect();
        let index = LexicalIndex::build(None, Analyzer::Simple, &same).expect("build");
        let hits = index.search("words", 5).expect("search");
        assert_eq!(
            hits.iter().map(|h| h.0).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
    }

    #[test]
    fn a_key_filter_finds_the_best_it_lets_through() {
        let index = LexicalIndex::build(None, Analyzer::EnStem, &texts()).expect("build");
        let all = index.search("glucose insulin", 10).expect("search");
        assert_eq!(all.iter().map(|h| h.0).collect::<Vec<_>>(), vec![30, 10]);
        let only = index
            .search_where("glucose insulin", 10, |k| k != 30)
            .expect("search");
        assert_eq!(only, vec![all[1]]);
        let none = index
            .search_where("glucose", 10, |_| false)
            .expect("search");
        assert!(none.is_empty());
    }

    /// Above the one-thread size, two threads index and their segments
    /// are merged: one segment, every text found.
    #[test]
    fn a_two_thread_build_ends_in_one_segment() {
        let texts: Vec<(u64, String)> = (0..=ONE_THREAD_BELOW as u64)
            .map(|k| (k, format!("common w{k}")))
            .collect();
        let index = LexicalIndex::build(None, Analyzer::Simple, &texts).expect("build");
        let segments = index.tantivy().searchable_segment_ids().expect("segments");
        assert_eq!(segments.len(), 1);
        assert_eq!(index.len(), texts.len() as u64);
        let hits = index.search("w77777", 3).expect("search");
        assert_eq!(hits.first().map(|h| h.0), Some(77_777));
    }

    /// Deletes and adds land in one commit with its payload; the texts
    /// count and the searches follow, and reopening sees the same.
    #[test]
    fn an_update_deletes_adds_and_records_its_payload() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut index =
            LexicalIndex::build(Some(dir.path()), Analyzer::EnStem, &texts()).expect("build");
        assert_eq!(index.payload().expect("payload"), None);
        index
            .apply(&[10, 30], &[(50, "Glucose monitors for diabetes.")], "g1")
            .expect("apply");
        assert_eq!(index.len(), 3);
        let hits = index.search("glucose", 10).expect("search");
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![50]);
        drop(index);
        let again = LexicalIndex::open(dir.path()).expect("open");
        assert_eq!(again.payload().expect("payload").as_deref(), Some("g1"));
        assert_eq!(
            LexicalIndex::payload_in(dir.path())
                .expect("payload")
                .as_deref(),
            Some("g1")
        );
        assert_eq!(again.len(), 3);
        let mut mem = LexicalIndex::build(None, Analyzer::EnStem, &texts()).expect("build");
        assert!(mem.apply(&[10], &[] as &[(u64, &str)], "g1").is_err());
    }

    #[test]
    fn a_folder_that_is_not_an_index_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(LexicalIndex::open(dir.path()).is_err());
    }

    /// A flipped byte in any of the index's files is an error or a
    /// result, never a panic; `verify` names the damaged file.
    #[test]
    fn a_damaged_file_is_an_error_never_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let many: Vec<(u64, String)> = (0..300)
            .map(|i| {
                (
                    i,
                    format!(
                        "glucose insulin word{i} note {}",
                        "filler ".repeat(i as usize % 7)
                    ),
                )
            })
            .collect();
        LexicalIndex::build(Some(dir.path()), Analyzer::default(), &many).expect("build");
        let files: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .expect("read_dir")
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                !name.starts_with('.') && !name.ends_with(".json")
            })
            .collect();
        assert!(files.len() >= 4, "{files:?}");
        let (mut damaged_found, mut caught) = (0, 0);
        for file in &files {
            let pristine = std::fs::read(file).expect("read");
            let step = (pristine.len() / 40).max(1);
            for at in (0..pristine.len()).step_by(step) {
                let mut bytes = pristine.clone();
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 0x5a;
                }
                std::fs::write(file, &bytes).expect("write");
                // Open, search, count: each an answer or an error.
                if let Ok(index) = LexicalIndex::open(dir.path()) {
                    for q in ["glucose", "insulin word7", "note"] {
                        if index
                            .search(q, 10)
                            .is_err_and(|e| e.to_string().contains("damaged"))
                        {
                            caught += 1;
                        }
                        let _ = index.search_where(q, 10, |k| k % 2 == 0);
                    }
                    let _ = index.doc_freq("glucose");
                    if index
                        .verify()
                        .is_ok_and(|d| d.iter().any(|p| dir.path().join(p) == *file))
                    {
                        damaged_found += 1;
                    }
                }
                std::fs::write(file, &pristine).expect("restore");
            }
        }
        assert!(damaged_found > 0, "verify found no damaged file");
        // tantivy panicked on some of them (fieldnorms, composite files):
        // each became this error.
        assert!(caught > 0, "no damage reached the guard");
        let whole = LexicalIndex::open(dir.path()).expect("open");
        assert_eq!(whole.verify().expect("verify"), Vec::<PathBuf>::new());
    }
}
