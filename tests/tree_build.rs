//! Building trees: structure invariants (property test), the file round trip
//! and corruption detection.

use proptest::prelude::*;
use std::collections::HashSet;
use treenav::build::{build_tree, TreeParams};
use treenav::build::{Summarizer, SummarizerOptions};
use treenav::corpus::{load_str, Format, LoadOptions};
use treenav::tree::{self, Embedder, EmbedderOptions, NoProgress, NodeKind, Tree};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

const TOPICS: &[&str] = &[
    "insulin glucose diabetes pancreas",
    "football goal league match",
    "volcano lava eruption magma",
    "violin orchestra symphony concert",
    "bitcoin blockchain ledger mining",
    "wheat harvest farm soil",
];

/// A corpus of `docs` documents with `passages[i]` sentences-worth of text each.
fn corpus_jsonl(docs: usize, words_per_doc: &[usize]) -> String {
    (0..docs)
        .map(|i| {
            let topic = TOPICS[i % TOPICS.len()];
            let words = words_per_doc.get(i).copied().unwrap_or(5).max(1);
            let text: Vec<String> = (0..words)
                .map(|w| format!("{} w{}.", topic.split(' ').nth(w % 4).unwrap_or("x"), w))
                .collect();
            format!(
                r#"{{"_id":"d{i}","title":"{topic} {i}","text":"{}"}}"#,
                text.join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn build(jsonl: &str, branching: usize, passage_words: usize, clusters: Option<usize>) -> Tree {
    let options = LoadOptions {
        skip_bad: false,
        passage_words,
    };
    let corpus = load_str(jsonl, "corpus.jsonl", Format::Beir, &options).expect("corpus");
    let params = TreeParams::default()
        .branching(branching)
        .clusters(clusters)
        .seed(3)
        .check()
        .expect("params");
    let embedder =
        Embedder::new(&EmbedderOptions::Tfidf { dims: 32 }, params.seed()).expect("embedder");
    let summarizer = Summarizer::new(&SummarizerOptions::Extractive).expect("summarizer");
    runtime()
        .block_on(build_tree(
            corpus,
            "test",
            &params,
            &embedder,
            &summarizer,
            &NoProgress,
        ))
        .expect("build")
}

fn check_invariants(tree: &Tree, expected_passages: usize, branching: usize) {
    // Every passage reachable from the root exactly once, via the petgraph view.
    let g = tree.graph();
    let mut dfs = tree::petgraph::visit::Dfs::new(&g, tree::petgraph::graph::NodeIndex::new(0));
    let mut seen = HashSet::new();
    let mut passages = 0;
    while let Some(ix) = dfs.next(&g) {
        assert!(seen.insert(ix), "node {ix:?} reached twice");
        if let Some(node) = tree.get(g[ix]) {
            if matches!(node.kind, NodeKind::Passage { .. }) {
                passages += 1;
            }
        }
    }
    assert_eq!(passages, expected_passages);
    assert_eq!(seen.len(), tree.len(), "every node reachable");
    for node in tree.nodes().expect("nodes") {
        assert!(
            node.children.len() <= branching,
            "{} children > {branching}",
            node.children.len()
        );
    }
    tree.validate().expect("valid");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn every_passage_reachable_once_and_branching_respected(
        docs in 1usize..150,
        branching in 2usize..12,
        passage_words in 2usize..12,
        words in proptest::collection::vec(1usize..40, 0..150),
        clusters in proptest::option::of(1usize..40),
    ) {
        let jsonl = corpus_jsonl(docs, &words);
        let options = LoadOptions { skip_bad: false, passage_words };
        let expected = load_str(&jsonl, "c.jsonl", Format::Beir, &options).expect("corpus").passage_count();
        let tree = build(&jsonl, branching, passage_words, clusters);
        check_invariants(&tree, expected, branching);
        prop_assert_eq!(tree.passages().count(), expected);
    }
}

#[test]
fn large_fanout_gets_several_cluster_levels() {
    let tree = build(&corpus_jsonl(300, &[]), 5, 50, None);
    let stats = tree.level_stats();
    let cluster_levels = stats.iter().filter(|s| s.kind == "cluster").count();
    assert!(cluster_levels >= 3, "{stats:?}");
    check_invariants(&tree, 300, 5);
}

#[test]
fn builds_are_deterministic() {
    let jsonl = corpus_jsonl(60, &[]);
    assert_eq!(build(&jsonl, 10, 20, None), build(&jsonl, 10, 20, None));
}

#[test]
fn clusters_group_topics() {
    // Six clean topics, ten documents each, six clusters: each cluster is one topic.
    let tree = build(&corpus_jsonl(60, &[]), 100, 50, Some(6));
    for level in tree.levels().iter().skip(1).take(1) {
        for id in level {
            let titles: HashSet<String> = tree
                .children(*id)
                .iter()
                .filter_map(|d| match &tree.get(*d)?.kind {
                    NodeKind::Document { title, .. } => {
                        title.rsplit_once(' ').map(|(t, _)| t.to_string())
                    }
                    _ => None,
                })
                .collect();
            assert_eq!(titles.len(), 1, "a cluster mixes topics: {titles:?}");
        }
    }
}

#[test]
fn file_round_trip_and_atomic_write() {
    let tree = build(&corpus_jsonl(40, &[]), 8, 10, None);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.tree");
    tree::file::save(&tree, &path).expect("save");
    assert_eq!(tree::file::load(&path).expect("load"), tree);
    // Saved again over itself: the index folder is replaced whole.
    tree::file::save(&tree, &path).expect("save again");
    assert_eq!(tree::file::load(&path).expect("load"), tree);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mut names = names;
    names.sort();
    assert_eq!(
        names,
        vec![
            "t.tree",
            "t.tree.lexical",
            "t.tree.lock",
            "t.tree.passage-vectors",
            "t.tree.tantivy",
            "t.tree.texts",
            "t.tree.vectors"
        ],
        "the tree, its side files (the build's vectors for updates and the embedding judge too), its writer lock and index folder, and no temporary or staged file left behind"
    );
}

/// A saved tree keeps passage texts and the lexical index beside the tree
/// file: loaded, it reads texts from the store (none in the nodes) and has
/// the lexical index and statistics the navigator would compute, equal to
/// the built tree in every passage. Old single-file trees load as before.
#[test]
fn saved_trees_keep_texts_and_the_lexical_index_beside_them() {
    let tree = build(&corpus_jsonl(60, &[40, 90, 15]), 8, 10, None);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.tree");
    tree::file::save(&tree, &path).expect("save");
    let loaded = tree::file::load(&path).expect("load");
    assert_eq!(
        loaded, tree,
        "every passage text equal, read from the store"
    );
    assert!(loaded.text_store().is_some());
    let mut passages = 0;
    for p in tree.passages() {
        let Some(NodeKind::Passage { text, .. }) = loaded.get(p).map(|n| &n.kind) else {
            panic!("node {p:?} is not a passage");
        };
        assert!(text.is_empty(), "no text held in the loaded nodes");
        assert_eq!(
            loaded.passage_text(p).expect("read"),
            tree.passage_text(p).expect("held")
        );
        passages += 1;
    }
    assert!(passages > 60);
    let lexical = loaded.lexical().expect("the lexical side file was read");
    assert_eq!(*lexical.stats, tree.passage_stats().expect("stats"));
    let built = tree.document_index().expect("index");
    for query in [
        "topic three words",
        "alpha",
        "nothing-here",
        "word7 word9 word11",
    ] {
        assert_eq!(
            lexical.index.search_scored(query, 10).expect("stored"),
            built.search_scored(query, 10).expect("built"),
            "{query}"
        );
    }
    // Saved again elsewhere, a loaded tree copies its texts and index.
    let again = dir.path().join("again.tree");
    tree::file::save(&loaded, &again).expect("save a loaded tree");
    assert_eq!(tree::file::load(&again).expect("load"), tree);
    for side in tree::file::side_files(&path)
        .iter()
        .chain(&tree::file::side_files(&again))
    {
        assert!(side.exists(), "{}", side.display());
    }
    let same = |a: &std::path::Path, b: &std::path::Path| {
        std::fs::read(a).expect("read") == std::fs::read(b).expect("read")
    };
    assert!(same(&path, &again), "deterministic: the same tree file");
    // Old and single-file trees: everything in one file, still loading.
    for (name, bytes) in [
        ("v3.tree", tree::file::to_bytes_v3(&tree).expect("v3")),
        ("one.tree", tree::file::to_bytes(&tree).expect("v4")),
    ] {
        let old = dir.path().join(name);
        std::fs::write(&old, bytes).expect("write");
        let loaded = tree::file::load(&old).expect("an old file loads");
        assert_eq!(loaded, tree, "{name}");
        assert!(
            loaded.text_store().is_none() && loaded.lexical().is_none(),
            "{name}"
        );
    }
    assert_eq!(
        tree::file::version(&dir.path().join("v3.tree")).expect("v"),
        3
    );
}

/// A side file that is missing, cut short, or from another build is
/// refused with an error naming it; nothing is read as if it matched.
#[test]
fn side_files_missing_or_from_another_build_are_refused() {
    let a = build(&corpus_jsonl(40, &[]), 8, 10, None);
    let b = build(&corpus_jsonl(30, &[]), 8, 10, None);
    let dir = tempfile::tempdir().expect("tempdir");
    let (pa, pb) = (dir.path().join("a.tree"), dir.path().join("b.tree"));
    tree::file::save(&a, &pa).expect("save");
    tree::file::save(&b, &pb).expect("save");
    let err = |p: &std::path::Path| {
        tree::file::load(p)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "loaded!".into())
    };
    for (i, suffix) in ["texts", "lexical"].into_iter().enumerate() {
        let side = &tree::file::side_files(&pa)[i];
        let good = std::fs::read(side).expect("read");
        let name = format!("a.tree.{suffix}");

        std::fs::remove_file(side).expect("remove");
        let e = err(&pa);
        assert!(e.contains(&name) && e.contains("missing"), "{e}");

        std::fs::copy(&tree::file::side_files(&pb)[i], side).expect("copy");
        let e = err(&pa);
        assert!(e.contains(&name) && e.contains("does not belong"), "{e}");

        std::fs::write(side, &good[..good.len() - 7]).expect("cut");
        assert!(err(&pa).contains(&name), "{}", err(&pa));

        std::fs::write(side, b"TRNVTREE but not a side file at all, no").expect("foreign");
        assert!(err(&pa).contains(&name), "{}", err(&pa));

        std::fs::write(side, &good).expect("restore");
        assert_eq!(tree::file::load(&pa).expect("load"), a);
    }
    // The tantivy folder: missing, or another build's, is refused by name.
    let (fa, fb) = (tree::file::index_folder(&pa), tree::file::index_folder(&pb));
    let kept = dir.path().join("kept");
    std::fs::rename(&fa, &kept).expect("move aside");
    let e = err(&pa);
    assert!(e.contains("a.tree.tantivy") && e.contains("missing"), "{e}");
    std::fs::create_dir(&fa).expect("mkdir");
    for f in std::fs::read_dir(&fb).expect("read_dir").flatten() {
        std::fs::copy(f.path(), fa.join(f.file_name())).expect("copy");
    }
    let e = err(&pa);
    assert!(
        e.contains("a.tree.tantivy") && e.contains("does not belong"),
        "{e}"
    );
    std::fs::remove_dir_all(&fa).expect("rm");
    std::fs::rename(&kept, &fa).expect("restore");
    assert_eq!(tree::file::load(&pa).expect("load"), a);
}

/// A save killed mid-write leaves `.t.tree.tmp-PID` (and the index's
/// `.t.tree.tantivy.tmp-PID-new`/`-old` folders); the next save removes them
/// once the process is gone, and leaves other files alone.
#[cfg(target_os = "linux")]
#[test]
fn a_save_removes_temp_files_of_dead_saves() {
    let tree = build(&corpus_jsonl(20, &[]), 8, 10, None);
    let dir = tempfile::tempdir().expect("tempdir");
    // No process has a pid this large (the kernel's limit is 2^22).
    let stale = dir.path().join(".t.tree.tmp-4294967000");
    let other = dir.path().join(".u.tree.tmp-4294967000");
    let mine = dir.path().join(".t.tree.tmp-notapid");
    for f in [&stale, &other, &mine] {
        std::fs::write(f, b"half a tree").expect("write");
    }
    // The lexical index's folders of a dead save (written, or moved aside).
    let stale_index = dir.path().join(".t.tree.tantivy.tmp-4294967000-new");
    let stale_old = dir.path().join(".t.tree.tantivy.tmp-4294967000-old");
    let other_index = dir.path().join(".t.tree.tantivy.tmp-4294967000-mine");
    for d in [&stale_index, &stale_old, &other_index] {
        std::fs::create_dir(d).expect("mkdir");
        std::fs::write(d.join("meta.json"), b"{}").expect("write");
    }
    tree::file::save(&tree, &dir.path().join("t.tree")).expect("save");
    assert!(!stale.exists(), "the dead save's temp file is gone");
    assert!(
        !stale_index.exists() && !stale_old.exists(),
        "the dead save's index folders are gone"
    );
    assert!(
        other.exists() && mine.exists() && other_index.exists(),
        "only our own pattern is removed"
    );
}

#[test]
fn corrupted_truncated_foreign_and_future_files_are_errors() {
    let tree = build(&corpus_jsonl(20, &[]), 8, 10, None);
    let bytes = tree::file::to_bytes(&tree).expect("encode");
    let name = std::path::Path::new("x.tree");
    let err = |b: &[u8]| {
        tree::file::from_bytes(b, name)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| "loaded!".into())
    };

    // Version 5 checks its index and shape when opened, and each chunk of
    // node labels when read: a flipped byte fails one or the other.
    let mid = bytes.len() / 2;
    for at in [mid, bytes.len() - 3, 40] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x40;
        let problem = match tree::file::from_bytes(&flipped, name) {
            Err(e) => e.to_string(),
            Ok(t) => t
                .nodes()
                .err()
                .map_or("read whole!".into(), |e| e.to_string()),
        };
        assert!(problem.contains("checksum"), "byte {at}: {problem}");
    }
    // Version 4 checks every byte when opened.
    let mut flipped = tree::file::to_bytes_v4(&tree).expect("v4");
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    assert!(
        err(&flipped).contains("checksum mismatch"),
        "{}",
        err(&flipped)
    );
    assert!(
        err(&bytes[..bytes.len() - 10]).contains("truncated"),
        "{}",
        err(&bytes[..bytes.len() - 10])
    );
    assert!(err(&bytes[..12]).contains("truncated"));
    assert!(err(b"{\"json\": true}").contains("not a treenav tree file"));
    assert!(err(b"").contains("not a treenav tree file"));
    let mut future = bytes.clone();
    future[8] = 99;
    assert!(
        err(&future).contains("format version 99"),
        "{}",
        err(&future)
    );
    // Every truncation point fails cleanly (no panic, no garbage tree).
    for cut in (0..bytes.len()).step_by(97) {
        assert!(tree::file::from_bytes(&bytes[..cut], name).is_err());
    }
}

#[test]
fn a_structurally_broken_tree_is_rejected() {
    // A node moved under the root without the root listing it: unreachable, wrong parent.
    let tree = build(&corpus_jsonl(10, &[]), 8, 10, None);
    let mut nodes = tree.nodes().expect("nodes").cloned().collect::<Vec<_>>();
    let last = nodes.len() - 1;
    nodes[last].parent = Some(treenav::tree::NodeId(0));
    assert!(Tree::from_parts(tree.meta().clone(), nodes).is_err());
}

/// A device, a folder or a foreign file is refused from its first bytes:
/// `/dev/zero` used to be read until memory ran out.
#[test]
fn load_refuses_what_is_not_a_tree_file_without_reading_it_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let problem = |path: &std::path::Path| match tree::file::load(path) {
        Err(treenav::tree::Error::BadFile { problem, .. }) => problem,
        other => panic!("{}: {other:?}", path.display()),
    };
    assert!(problem(dir.path()).contains("not a regular file"));
    let dev_zero = std::path::Path::new("/dev/zero");
    if dev_zero.exists() {
        assert!(problem(dev_zero).contains("not a regular file"));
    }
    let foreign = dir.path().join("foreign.tree");
    std::fs::write(&foreign, vec![b'x'; 1 << 20]).expect("write");
    assert!(problem(&foreign).contains("wrong magic bytes"));
    let short = dir.path().join("short.tree");
    std::fs::write(&short, b"TRN").expect("write");
    assert!(problem(&short).contains("wrong magic bytes"));
}

/// A tree saved before tantivy (`.lexical` layout 1, its hand-written BM25
/// index no longer read; crates/tree/tests/golden/xquad-lexical1, XQuAD, 48 documents)
/// still loads: unstemmed statistics, its document index built anew in
/// memory with the same `words` analyzer, and it answers. Saved again, it
/// moves to layout 2 (a tantivy folder) with the default analyzer.
#[test]
fn a_tree_saved_before_tantivy_loads_answers_and_moves_over() {
    use std::sync::Arc;
    use treenav::navigator::{Navigator, NavigatorConfig};
    use treenav::text::analyzer::Analyzer;
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("crates/tree/tests/golden/xquad-lexical1/xquad.tree");
    let tree = treenav::tree::file::load(&fixture).expect("a layout-1 tree loads");
    let lexical = tree.lexical().expect("its lexical side");
    assert_eq!(lexical.stats.analyzer, Analyzer::Words);
    assert_eq!(lexical.index.analyzer(), Analyzer::Words);
    assert_eq!(lexical.index.len(), 48);
    assert!(lexical.index.folder().is_none(), "built in memory");
    let hits = lexical
        .index
        .search_scored("Which NFL team represented the AFC at Super Bowl 50?", 3)
        .expect("search");
    let first = tree.get(hits[0].0).map(|n| n.kind.clone());
    assert!(
        matches!(first, Some(treenav::tree::NodeKind::Document { ref id, .. }) if id == "Super_Bowl_50"),
        "{first:?}"
    );
    let tree = Arc::new(tree);
    let config = NavigatorConfig::default().check().expect("config");
    let nav = Navigator::new(
        tree.clone(),
        treenav::judge::Judge::new(&Default::default()).expect("judge"),
        config,
    )
    .expect("navigator");
    let found = runtime()
        .block_on(nav.retrieve("Which NFL team represented the AFC at Super Bowl 50?"))
        .expect("retrieve");
    assert_eq!(found.passages[0].document_id, "Super_Bowl_50");

    let dir = tempfile::tempdir().expect("tempdir");
    let again = dir.path().join("again.tree");
    treenav::tree::file::save(&tree, &again).expect("save");
    assert!(treenav::tree::file::index_folder(&again).is_dir());
    let moved = treenav::tree::file::load(&again).expect("load");
    let moved = moved.lexical().expect("lexical");
    assert_eq!(moved.stats.analyzer, Analyzer::EnStem);
    assert_eq!(moved.index.len(), 48);
}
