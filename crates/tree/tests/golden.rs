//! Golden files: a tree of every format version, written by the code of
//! that version, must still decode to the same model.
//!
//! `golden/<version>/` holds a tree built from `golden/corpus.jsonl` (12
//! documents, 3 topics; `treenav build corpus.jsonl -o t.tree --branching 4
//! --embedder tfidf`) by the `treenav` of the commit named in
//! `golden/README.md`, so its bytes are that version's, not today's
//! encoder's. Each must (1) hold exactly the corpus's documents and passages,
//! word for word, read through today's decoder, and (2) decode to the
//! description in `<version>/expected.txt`: every node with its kind,
//! fields, children and neighbours, the metadata, a lexical search and the
//! vectors. A change to `model::Node` (a field added, moved or retyped)
//! that changes how an old file decodes fails here. After a deliberate
//! change of the description (never of a decoding), regenerate with
//! `TREENAV_BLESS=1 cargo test -p treenav-tree --test golden`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use treenav_tree::{file, NodeId, NodeKind, Tree};

const VERSIONS: [(&str, u32); 9] = [
    ("v1", 1),
    ("v2", 2),
    ("v3", 3),
    ("v4-lexical1", 4),
    ("v4", 4),
    ("v4-delta2", 4),
    ("v5", 5),
    ("v5-delta2", 5),
    ("v5-vectors2", 5),
];

/// The fixtures updated with `extra.jsonl` after their build.
const UPDATED: [&str; 3] = ["v4", "v4-delta2", "v5-delta2"];

fn golden() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Copies a fixture folder (an opened tree may roll its generation forward
/// or take a lock beside it: never in the checkout).
fn copied(name: &str, into: &Path) -> PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).expect("mkdir");
        for entry in std::fs::read_dir(from).expect("read fixture") {
            let entry = entry.expect("entry");
            let target = to.join(entry.file_name());
            if entry.file_type().expect("type").is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).expect("copy");
            }
        }
    }
    copy(&golden().join(name), &into.join(name));
    into.join(name).join("t.tree")
}

/// The corpus records: (id, title, text).
fn records(file: &str) -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(golden().join(file)).expect("corpus");
    text.lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            let field = |k: &str| v[k].as_str().expect("field").to_string();
            (field("_id"), field("title"), field("text"))
        })
        .collect()
}

/// Every node, the metadata, a search and the vectors, one line each.
fn describe(tree: &Tree) -> String {
    let mut out = String::new();
    let meta = tree.meta();
    let _ = writeln!(
        out,
        "meta embedder={:?} summarizer={:?} branching={} seed={} corpus={:?}",
        meta.embedder, meta.summarizer, meta.branching, meta.seed, meta.corpus
    );
    for i in 0..tree.len() {
        let id = NodeId(i as u32);
        let Some(node) = tree.get(id) else { continue };
        let kind = match &node.kind {
            NodeKind::Root => "root".to_string(),
            NodeKind::Cluster {
                summary,
                terms,
                documents,
            } => format!("cluster {summary:?} terms={terms:?} documents={documents}"),
            NodeKind::Document {
                id,
                title,
                lead,
                part,
                metadata,
            } => {
                format!("document {id} {title:?} lead={lead:?} part={part:?} metadata={metadata:?}")
            }
            NodeKind::Passage { id: pid, .. } => {
                let text = tree.passage_text(id).expect("passage text");
                format!("passage {pid} {text:?}")
            }
        };
        let ids = |list: &[NodeId]| list.iter().map(|n| n.0).collect::<Vec<_>>();
        let _ = writeln!(
            out,
            "{i} {kind} children={:?} neighbours={:?}{}",
            ids(tree.children(id)),
            ids(tree.neighbours(id)),
            if tree.is_removed(id) { " removed" } else { "" }
        );
    }
    let index = tree.document_index().expect("document index");
    for query in ["honey bees", "lava eruption", "steam trains"] {
        let hits = index.search_scored(query, 3).expect("search");
        let hits: Vec<String> = hits
            .iter()
            .map(|(n, s)| format!("{}:{s:.4}", n.0))
            .collect();
        let _ = writeln!(out, "search {query:?} {hits:?}");
    }
    for (what, vectors) in [
        ("document", tree.document_vectors()),
        ("passage", tree.passage_vectors()),
    ] {
        let _ = writeln!(out, "{what} vectors {}", vectors.map_or(0, |v| v.len()));
    }
    // Vectors of layout 2 carry the build's cluster centroids: the sums of
    // the documents' rows, as a tree without them computes them.
    if let Some(v) = tree.document_vectors() {
        if let Some(saved) = v.centroids() {
            let _ = writeln!(out, "centroids {}", saved.len());
            let computed = treenav_tree::vectors::Centroids::of(tree, v);
            assert!(**saved == computed, "saved centroids differ from the sums");
        }
    }
    if let Some(log) = tree.updates() {
        let _ = writeln!(out, "updates {log:?}");
    }
    out
}

#[test]
fn every_format_version_decodes_to_its_known_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let corpus = records("corpus.jsonl");
    let bless = std::env::var_os("TREENAV_BLESS").is_some();
    for (name, version) in VERSIONS {
        let path = copied(name, dir.path());
        assert_eq!(file::version(&path).expect("version"), version, "{name}");
        let tree = file::load(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        tree.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        // Version 5 opens without decoding its nodes, unless an update
        // is pending (applying it decodes them).
        let lazy = version >= 5 && !UPDATED.contains(&name);
        assert_eq!(tree.reads_nodes_lazily(), lazy, "{name}");
        // Vectors of layout 2 stay in their file until a row is asked for.
        let rows_lazily = tree.document_vectors().map(|v| v.reads_lazily());
        let layout2 = name == "v5-vectors2";
        assert_eq!(
            rows_lazily,
            Some(layout2).filter(|_| version >= 4 && name != "v4-lexical1"),
            "{name}"
        );

        // (1) The corpus, word for word, whatever the decoder says of the rest.
        let mut corpus = corpus.clone();
        if UPDATED.contains(&name) {
            corpus.extend(records("extra.jsonl"));
        }
        let mut found: Vec<(String, String, String)> = tree
            .passages()
            .map(|p| {
                let doc = tree
                    .path(p)
                    .into_iter()
                    .rev()
                    .nth(1)
                    .expect("a document above");
                let Some(NodeKind::Document { id, title, .. }) = tree.get(doc).map(|n| &n.kind)
                else {
                    panic!("{name}: passage {} is not under a document", p.0)
                };
                let text = tree.passage_text(p).expect("text").into_owned();
                (id.clone(), title.clone(), text)
            })
            .collect();
        found.sort();
        let mut want = corpus.clone();
        want.sort();
        assert_eq!(found, want, "{name}: the corpus read back");

        // (2) The whole model, against what this version decoded to.
        let description = describe(&tree);
        let expected = golden().join(name).join("expected.txt");
        if bless {
            std::fs::write(&expected, &description).expect("bless");
        }
        let known = std::fs::read_to_string(&expected)
            .unwrap_or_else(|e| panic!("{}: {e} (TREENAV_BLESS=1 writes it)", expected.display()));
        assert_eq!(
            description, known,
            "{name}: the model decoded from the {name} file changed"
        );
    }
}
