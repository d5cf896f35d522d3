//! Property tests of the tree file decoder on hostile bytes: random bytes,
//! and a valid file with bytes flipped, inserted or cut, both with the
//! header's checksum and length left as they were (caught by the checksum)
//! and recomputed, so the mutation reaches the decoder and the validation
//! behind it. Whatever the bytes, the result is a valid tree or an error
//! naming the file; never a panic, never a huge allocation.
//! `PROPTEST_CASES=20000 cargo test -p treenav-builder --test fuzz --release`
//! runs longer.

use proptest::prelude::*;
use std::path::Path;
use std::sync::OnceLock;
use treenav_builder::{
    build_tree, Embedder, EmbedderOptions, NoProgress, Summarizer, SummarizerOptions, TreeParams,
};
use treenav_corpus::{load_str, Format, LoadOptions};
use treenav_tree::file::{from_bytes, to_bytes, to_bytes_v1};

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small valid tree file (two cluster levels, neighbour lists) and its
/// version-1 form.
fn valid_files() -> &'static (Vec<u8>, Vec<u8>) {
    static FILES: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();
    FILES.get_or_init(|| {
        let topics = ["rust memory safety", "tea leaves brewing", "football goals", "stars galaxies"];
        let jsonl: String = (0..24)
            .map(|i| {
                format!(
                    "{{\"_id\":\"d{i}\",\"title\":\"T{i}\",\"text\":\"About {} number {i}. More words here.\"}}\n",
                    topics[i % 4]
                )
            })
            .collect();
        let corpus = load_str(&jsonl, "c.jsonl", Format::Beir, &LoadOptions::default())
            .expect("corpus");
        let params = TreeParams::default()
            .branching(3)
            .check()
            .expect("params");
        let embedder = Embedder::new(&EmbedderOptions::default(), params.seed()).expect("embedder");
        let summarizer = Summarizer::new(&SummarizerOptions::Extractive).expect("summarizer");
        let tree = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(build_tree(corpus, "c", &params, &embedder, &summarizer, &NoProgress))
            .expect("tree");
        (to_bytes(&tree).expect("v3"), to_bytes_v1(&tree).expect("v1"))
    })
}

const HEADER: usize = 28;

/// Rewrites the header's length and checksum to match the payload.
fn reseal(bytes: &mut [u8]) {
    if bytes.len() < HEADER {
        return;
    }
    let len = (bytes.len() - HEADER) as u64;
    let crc = crc32fast::hash(&bytes[HEADER..]);
    bytes[16..24].copy_from_slice(&len.to_le_bytes());
    bytes[24..28].copy_from_slice(&crc.to_le_bytes());
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    let name = Path::new("fuzzed.tree");
    match from_bytes(bytes, name) {
        Ok(tree) => prop_assert!(tree.validate().is_ok()),
        Err(e) => prop_assert!(e.to_string().contains("fuzzed.tree"), "{e}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(300), .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_are_refused(mut bytes in proptest::collection::vec(any::<u8>(), 0..200), magic in any::<bool>(), version in 0u32..5) {
        if magic && bytes.len() >= HEADER {
            bytes[..8].copy_from_slice(b"TRNVTREE");
            bytes[8..12].copy_from_slice(&version.to_le_bytes());
            reseal(&mut bytes);
        }
        check(&bytes)?;
    }

    #[test]
    fn mutated_files_decode_or_fail_cleanly(
        v1 in any::<bool>(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..4), 1..8),
        resealed in any::<bool>(),
    ) {
        let (v3, old) = valid_files();
        let mut bytes = if v1 { old.clone() } else { v3.clone() };
        for (at, byte, how) in edits {
            let at = HEADER + at % (bytes.len() - HEADER).max(1);
            match how {
                0 => if let Some(b) = bytes.get_mut(at) { *b = byte },
                1 => bytes.insert(at.min(bytes.len()), byte),
                2 => { if at < bytes.len() { bytes.remove(at); } }
                _ => bytes.truncate(at),
            }
        }
        if resealed {
            reseal(&mut bytes);
        }
        check(&bytes)?;
    }
}

#[test]
fn the_valid_files_decode() {
    let (v3, v1) = valid_files();
    for bytes in [v3, v1] {
        let tree = from_bytes(bytes, Path::new("ok.tree")).expect("valid");
        assert!(tree.passages().count() == 24);
    }
}
