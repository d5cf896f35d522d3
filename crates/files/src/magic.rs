//! The eight bytes every file treenav writes starts with, naming its kind:
//! all of them, in one table, so no two kinds can share one and a reader
//! refuses a file of another kind from its first bytes (see
//! [`crate::Kind::with_magic`]). A tree's own files and their layouts are
//! described in `treenav_tree::format`.

/// A tree file (the structure: nodes, metadata, side files' hashes).
pub const TREE: &[u8; 8] = b"TRNVTREE";
/// A tree's passage texts (`T.texts`).
pub const TEXTS: &[u8; 8] = b"TRNVTEXT";
/// A tree's lexical statistics and document ids (`T.lexical`).
pub const LEXICAL: &[u8; 8] = b"TRNVLEXI";
/// A tree's quantized node and passage vectors (`T.vectors`,
/// `T.passage-vectors`).
pub const VECTORS: &[u8; 8] = b"TRNVVECS";
/// An update's delta beside a tree (`T.delta`).
pub const DELTA: &[u8; 8] = b"TRNVDELT";
/// A build plan (`plan.bin` in a plan folder).
pub const PLAN: &[u8; 8] = b"TRNVPLAN";
/// A plan's f32 vectors (`vectors.bin` in a plan folder): another layout
/// than a tree's quantized vectors.
pub const PLAN_VECTORS: &[u8; 8] = b"TRNVPVEC";
/// One shard of a split build.
pub const SHARD: &[u8; 8] = b"TRNVSHRD";
/// A batch of an embedding server's answers, cached on disk.
pub const EMBEDDING_CACHE: &[u8; 8] = b"TRNVEMBC";
/// A bench's shared judge scores (`--score-file`).
pub const SCORES: &[u8; 8] = b"TNSCORES";

/// Every kind, named: what a file's first bytes say it is.
pub const ALL: [(&str, &[u8; 8]); 10] = [
    ("tree file", TREE),
    ("text store", TEXTS),
    ("lexical side file", LEXICAL),
    ("vectors", VECTORS),
    ("delta", DELTA),
    ("build plan", PLAN),
    ("plan vectors", PLAN_VECTORS),
    ("shard", SHARD),
    ("embedding cache", EMBEDDING_CACHE),
    ("score file", SCORES),
];

/// The kind whose magic `head` starts with, if any.
pub fn kind_of(head: &[u8]) -> Option<&'static str> {
    ALL.iter()
        .find(|(_, magic)| head.starts_with(&magic[..]))
        .map(|(name, _)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_two_kinds_share_a_magic_and_each_is_found_by_its_bytes() {
        for (i, (name, magic)) in ALL.iter().enumerate() {
            for (other, m) in &ALL[i + 1..] {
                assert_ne!(magic, m, "{name} and {other}");
            }
            assert_eq!(kind_of(&magic[..]), Some(*name));
        }
        assert_eq!(kind_of(b"TRNVXXXX"), None);
    }
}
