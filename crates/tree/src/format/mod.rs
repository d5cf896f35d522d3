//! What a tree is on disk: its files, their magics and the frozen layouts
//! they are decoded through.
//!
//! | file | magic ([`magic`]) | versions read | written by |
//! |---|---|---|---|
//! | `T` (the structure) | `TRNVTREE` | 1–5 (`file::OLDEST_VERSION`..=`FORMAT_VERSION`; 5 read as asked for: `mapped`) | `file` |
//! | `T.texts` (passage texts) | `TRNVTEXT` | 1 | `store` |
//! | `T.lexical` (statistics, document ids) | `TRNVLEXI` | 1 (its index rebuilt), 2 | `lexical` |
//! | `T.tantivy/` (the BM25 index) | tantivy's own | paired by content hash | `lexical` |
//! | `T.vectors`, `T.passage-vectors` | `TRNVVECS` | 1 | `vectors` |
//! | `T.delta` (an update not yet compacted) | `TRNVDELT` | 1, 2 | `delta` |
//!
//! Every side file starts with one [`Header`]: its magic, its version and
//! the content hash of what follows, then its own numbers; a tree file records its side files' hashes, so a side
//! file of another build or generation is refused by name. The structs in
//! [`layouts`] are the layouts of the versions their names give and never
//! change; a new layout is a new type under a new version, with a golden
//! fixture in `crates/tree/tests/golden/` written by the commit that adds
//! it (every version's fixtures live there, one folder each).

mod header;
pub(crate) mod layouts;

pub use header::{hash_of, version_of, word, Header};

/// The magics of every file treenav writes (the table lives in
/// `treenav-files`, below the embedder's cache, so every crate reads one).
pub use treenav_files::magic;
