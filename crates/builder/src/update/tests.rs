//! Updates end to end on a saved tree: placement, lists, the lexical
//! index, removal, the lock, compaction.

use super::*;
use crate::{build_tree, NoProgress, Summarizer, SummarizerOptions, TreeParams};
use treenav_corpus::{load_str, Format, LoadOptions};
use treenav_tree::file;

const TOPICS: [[&str; 4]; 6] = [
    ["insulin", "glucose", "diabetes", "pancreas"],
    ["striker", "goal", "league", "match"],
    ["volcano", "magma", "eruption", "lava"],
    ["violin", "symphony", "orchestra", "concerto"],
    ["galaxy", "telescope", "nebula", "orbit"],
    ["wheat", "harvest", "farmer", "tractor"],
];

/// Document `i` of topic `i % 6`, with a word of its own.
fn doc(i: usize, prefix: &str) -> String {
    let t = TOPICS[i % TOPICS.len()];
    format!(
        r#"{{"_id":"{prefix}{i}","title":"{} {} note {i}","text":"The {} and the {} meet the {} here. Unique{prefix}{i} marks it. {} again."}}"#,
        t[0], t[1], t[2], t[3], t[0], t[1]
    )
}

fn corpus(range: std::ops::Range<usize>, prefix: &str) -> treenav_corpus::Corpus {
    let jsonl: Vec<String> = range.map(|i| doc(i, prefix)).collect();
    load_str(
        &jsonl.join("\n"),
        "c.jsonl",
        Format::Beir,
        &LoadOptions::default(),
    )
    .expect("corpus")
}

/// `corpus` built with `params` (TF-IDF, extractive summaries).
async fn built(corpus: treenav_corpus::Corpus, params: TreeParams) -> Tree {
    let params = params.check().expect("params");
    let embedder = Embedder::new(&crate::EmbedderOptions::default(), params.seed()).expect("e");
    let summarizer = Summarizer::new(&SummarizerOptions::Extractive).expect("s");
    build_tree(corpus, "c", &params, &embedder, &summarizer, &NoProgress)
        .await
        .expect("build")
}

async fn saved_tree(dir: &Path) -> PathBuf {
    let tree = built(corpus(0..120, "d"), TreeParams::default().branching(8)).await;
    let path = dir.join("t.tree");
    file::save(&tree, &path).expect("save");
    path
}

fn doc_ids(tree: &Tree) -> BTreeSet<String> {
    tree.documents()
        .filter_map(|d| match &tree.get(d)?.kind {
            NodeKind::Document { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

fn node_of(tree: &Tree, id: &str) -> NodeId {
    tree.documents()
        .find(|d| matches!(&tree.get(*d).map(|n| &n.kind), Some(NodeKind::Document { id: x, .. }) if x == id))
        .expect("document")
}

/// The topic of a document node (its source id's number mod 6).
fn topic(tree: &Tree, d: NodeId) -> usize {
    match &tree.get(d).map(|n| &n.kind) {
        Some(NodeKind::Document { id, .. }) => {
            id.trim_start_matches(|c: char| c.is_alphabetic())
                .parse::<usize>()
                .unwrap_or(0)
                % 6
        }
        _ => usize::MAX,
    }
}

/// A removal adds no vector row, yet moves the sums under its clusters:
/// the build's saved centroids are not used while it is pending.
#[tokio::test]
async fn a_pending_removal_drops_the_saved_centroids() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    let tree = file::load(&path).expect("load");
    let vectors = tree.document_vectors().expect("vectors");
    assert!(vectors.centroids().is_some(), "a build saves them");
    remove(&path, &["d3".to_string()], None)
        .await
        .expect("remove");
    let tree = file::load(&path).expect("load");
    let vectors = tree.document_vectors().expect("vectors");
    assert!(vectors.centroids().is_none(), "summed again while pending");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_documents_land_among_their_topic_and_removed_ones_are_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    assert!(vectors_path(&path).exists(), "a build keeps its vectors");

    // 60 new documents, and 6 of the old ones again (replaced).
    let mut new = corpus(0..60, "n");
    let mut revised = corpus(0..6, "d").documents;
    for d in &mut revised {
        d.title.push_str(" (revised)");
    }
    new.documents.extend(revised);
    let report = add(&path, new, None, &NoProgress).await.expect("add");
    assert_eq!(
        (report.added, report.replaced, report.generation),
        (60, 6, 1)
    );
    assert!(!report.embedded_again);

    let tree = file::load(&path).expect("load");
    assert_eq!(tree.documents().count(), 180);
    assert_eq!(tree.updates().map(|l| (l.updates, l.added)), Some((1, 60)));
    let index = tree.lexical().expect("lexical").index.clone();
    assert_eq!(index.len(), 180);
    // Each new document sits in a leaf of its own topic, its neighbours
    // are of its topic, and BM25 finds it by its own word.
    let mut same_leaf = 0;
    let mut same_near = (0, 0);
    for i in 0..60 {
        let d = node_of(&tree, &format!("n{i}"));
        let leaf = tree.get(d).and_then(|n| n.parent).expect("leaf");
        let mates = tree.children(leaf).iter().filter(|m| **m != d);
        let (same, all) = mates.fold((0, 0), |(s, a), m| {
            (s + usize::from(topic(&tree, *m) == i % 6), a + 1)
        });
        same_leaf += usize::from(same * 2 > all);
        for n in tree.neighbours(d) {
            same_near.0 += usize::from(topic(&tree, *n) == i % 6);
            same_near.1 += 1;
        }
        let hits = index
            .search_scored(&format!("uniquen{i}"), 3)
            .expect("search");
        assert_eq!(hits.first().map(|h| h.0), Some(d), "n{i}");
        assert!(tree
            .passage_text(tree.children(d)[0])
            .expect("text")
            .contains(&format!("Uniquen{i}")));
    }
    assert!(
        same_leaf >= 57,
        "{same_leaf} of 60 in a leaf of their topic"
    );
    assert!(same_near.0 * 10 >= same_near.1 * 9, "{same_near:?}");
    // A replaced document is there once, with its new node.
    assert_eq!(
        tree.documents().filter(|d| topic(&tree, *d) == 0).count(),
        30
    );
    let statistics = &tree.lexical().expect("lexical").stats;
    assert_eq!(statistics.documents, 180);

    remove_then_compact(&path).await;
}

/// Removes 50 of the 180 documents of the first test's tree, checks they
/// are gone everywhere, compacts, and updates again.
async fn remove_then_compact(path: &Path) {
    let path = path.to_path_buf();
    // Remove 40 old and 10 new ones, and one id the tree lacks.
    let mut gone: Vec<String> = (10..50).map(|i| format!("d{i}")).collect();
    gone.extend((0..10).map(|i| format!("n{i}")));
    gone.push("nope".into());
    let report = remove(&path, &gone, None).await.expect("remove");
    assert_eq!(
        (report.removed, report.not_found.clone(), report.generation),
        (50, vec!["nope".to_string()], 2)
    );
    let tree = file::load(&path).expect("load");
    let vectors = tree.document_vectors().expect("vectors");
    assert!(
        vectors.centroids().is_none(),
        "a tree with updates pending sums its centroids again"
    );
    let ids = doc_ids(&tree);
    assert_eq!(ids.len(), 130);
    for g in &gone {
        assert!(!ids.contains(g), "{g} is gone");
    }
    let removed: BTreeSet<NodeId> = (0..tree.len() as u32)
        .map(NodeId)
        .filter(|n| tree.is_removed(*n))
        .collect();
    assert!(!removed.is_empty());
    for d in tree.documents() {
        assert!(
            tree.neighbours(d).iter().all(|n| !removed.contains(n)),
            "lists hold no removed document"
        );
    }
    let index = &tree.lexical().expect("lexical").index;
    assert_eq!(index.len(), 130);
    assert!(index
        .search_scored("uniqued20", 3)
        .expect("search")
        .is_empty());
    assert_eq!(tree.lexical().expect("lexical").stats.documents, 130);

    // Compaction: one file again, the same documents, no delta.
    let compacted = compact(&path).expect("compact");
    assert!(compacted.nodes_after < compacted.nodes_before);
    assert!(!delta_path(&path).exists());
    let tree = file::load(&path).expect("load");
    assert_eq!(doc_ids(&tree), ids);
    assert!(tree.updates().is_none());
    let vectors = tree.document_vectors().expect("vectors");
    let saved = vectors.centroids().expect("saved by the compaction");
    let summed = treenav_tree::vectors::Centroids::of(&tree, vectors);
    assert!(**saved == summed, "the compacted tree's own centroids");
    let d = node_of(&tree, "n30");
    let hits = tree
        .lexical()
        .expect("lexical")
        .index
        .search_scored("uniquen30", 1)
        .expect("search");
    assert_eq!(hits.first().map(|h| h.0), Some(d));
    // Updatable again after compaction (its vectors were written anew).
    let report = add(&path, corpus(200..203, "m"), None, &NoProgress)
        .await
        .expect("add");
    assert!(!report.embedded_again);
    assert_eq!(file::load(&path).expect("load").documents().count(), 133);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_is_refused_and_a_tree_without_vectors_embeds_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    let held = Lock::acquire(&path).expect("lock");
    let err = add(&path, corpus(0..2, "n"), None, &NoProgress)
        .await
        .expect_err("locked");
    assert!(err.to_string().contains("t.tree.lock"), "{err}");
    drop(held);
    // Without its vectors file (a tree built before updates existed), the
    // documents are embedded again with the tree's own TF-IDF fit: the
    // same rows the build kept.
    let nodes = file::load(&path).expect("load").len();
    let kept = vectors::read(&path, base_id(&path).expect("base"), nodes)
        .expect("read")
        .expect("vectors");
    std::fs::remove_file(vectors_path(&path)).expect("rm");
    let report = add(&path, corpus(0..2, "n"), None, &NoProgress)
        .await
        .expect("add");
    assert!(report.embedded_again);
    let again = vectors::read(&path, base_id(&path).expect("base"), nodes)
        .expect("read")
        .expect("vectors");
    assert_eq!(again.embedding, kept.embedding);
    let tree = file::load(&path).expect("load");
    for d in tree.documents().filter(|d| kept.contains(*d)) {
        assert_eq!(again.get(d), kept.get(d));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaf_over_the_limit_splits_and_every_document_stays_at_one_depth() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    // 200 documents of one topic: leaves split, maybe the root too.
    let one: Vec<String> = (0..200).map(|i| doc(i * 6, "x")).collect();
    let new = load_str(
        &one.join("\n"),
        "x.jsonl",
        Format::Beir,
        &LoadOptions::default(),
    )
    .expect("c");
    let report = add(&path, new, None, &NoProgress).await.expect("add");
    assert!(report.splits > 0, "{report:?}");
    let tree = file::load(&path).expect("load");
    assert_eq!(tree.documents().count(), 320);
    tree.validate()
        .expect("valid: limits kept, one document depth");
    for level in tree.level_stats() {
        assert!(level.max_children <= 8, "{level:?}");
    }
}

/// The two windows of a crash around the index commit: the delta written
/// as `.next` and the index committed, but not renamed (the update is
/// there); a `.next` written but the index not committed (it is not).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_on_either_side_of_the_index_commit_gives_before_or_after() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    add(&path, corpus(0..5, "n"), None, &NoProgress)
        .await
        .expect("add");
    // Committed, not renamed: generation 1 is read from `.next`.
    std::fs::rename(delta_path(&path), treenav_tree::delta::next_path(&path)).expect("mv");
    let tree = file::load(&path).expect("load");
    assert_eq!(tree.documents().count(), 125);
    // The next update starts from it and lands normally.
    add(&path, corpus(5..7, "n"), None, &NoProgress)
        .await
        .expect("add");
    assert_eq!(file::load(&path).expect("load").documents().count(), 127);
    // A `.next` of generation 3 whose index commit never happened: ignored.
    let mut stale = std::fs::read(delta_path(&path)).expect("read");
    stale[48] = 3;
    std::fs::write(treenav_tree::delta::next_path(&path), stale).expect("write");
    assert_eq!(file::load(&path).expect("load").documents().count(), 127);
    // Without the delta the index names, the tree is refused by name.
    std::fs::remove_file(delta_path(&path)).expect("rm");
    let err = file::load(&path).expect_err("no delta");
    assert!(err.to_string().contains("generation 2"), "{err}");
}

/// Adding the documents a tree holds, as it holds them, changes nothing:
/// no generation, no delta growth, no restructuring, however often.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adding_the_same_documents_again_is_a_no_op() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    let first = add(&path, corpus(0..30, "n"), None, &NoProgress)
        .await
        .expect("add");
    assert_eq!((first.added, first.generation), (30, 1));
    let delta = std::fs::read(treenav_tree::delta::delta_path(&path)).expect("delta");
    for _ in 0..5 {
        let mut again = corpus(0..30, "n");
        again.documents.extend(corpus(0..120, "d").documents);
        let report = add(&path, again, None, &NoProgress)
            .await
            .expect("add again");
        assert_eq!(
            (
                report.added,
                report.replaced,
                report.unchanged,
                report.generation
            ),
            (0, 0, 150, 1)
        );
    }
    assert_eq!(
        std::fs::read(treenav_tree::delta::delta_path(&path)).expect("delta"),
        delta
    );
    // One changed document among them is replaced, alone.
    let mut again = corpus(0..30, "n");
    again.documents[3].passages[0].text.push_str(" Revised.");
    let report = add(&path, again, None, &NoProgress)
        .await
        .expect("add changed");
    assert_eq!(
        (report.replaced, report.unchanged, report.generation),
        (1, 29, 2)
    );
}

/// A broken tantivy folder (empty, a link to another folder, its pairing
/// file gone) is named in the error, not the `.lexical` file beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_index_folder_is_the_one_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    let folder = treenav_tree::file::index_folder(&path);
    let kept = dir.path().join("kept-index");
    std::fs::rename(&folder, &kept).expect("move aside");
    let breakages: [&dyn Fn(); 3] = [
        &|| std::fs::create_dir(&folder).expect("empty folder"),
        &|| std::os::unix::fs::symlink("/etc", &folder).expect("symlink"),
        &|| {
            copy_dir(&kept, &folder);
            std::fs::remove_file(folder.join("treenav-lexical.hash")).expect("remove hash");
        },
    ];
    for (i, breakage) in breakages.iter().enumerate() {
        let _ = std::fs::remove_file(&folder);
        let _ = std::fs::remove_dir_all(&folder);
        breakage();
        let e = file::load(&path).expect_err("refused").to_string();
        assert!(
            e.contains(".tantivy") && e.contains("not a tree's lexical index folder"),
            "case {i}: {e}"
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(from).expect("read_dir").flatten() {
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// A tree on a read-only folder (another user's, a read-only mount) opens
/// and answers: reading takes no lock file. Needs a read-only bind mount
/// (root); skipped, saying so, where the machine gives none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_in_a_read_only_folder_opens_and_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("rw")).expect("dir");
    let path = saved_tree(&dir.path().join("rw")).await;
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).expect("dir");
    let mount = |args: &[&str]| {
        std::process::Command::new("mount")
            .args(args)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let (rw, ro_s) = (
        path.parent().expect("dir").to_string_lossy().into_owned(),
        ro.to_string_lossy().into_owned(),
    );
    if !mount(&["--bind", &rw, &ro_s]) {
        println!("SKIPPED read-only tree test: cannot bind-mount here (needs root)");
        return;
    }
    let remounted = mount(&["-o", "remount,ro,bind", &ro_s]);
    let result = std::panic::catch_unwind(|| {
        assert!(remounted, "remount read-only");
        assert!(
            std::fs::write(ro.join("probe"), "x").is_err(),
            "the mount is read-only"
        );
        let tree = file::load(&ro.join("t.tree")).expect("a read-only tree opens");
        let hits = tree
            .lexical()
            .expect("lexical")
            .index
            .search_scored("volcano magma", 5)
            .expect("search");
        assert!(!hits.is_empty());
    });
    let _ = std::process::Command::new("umount").arg(&ro).status();
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

/// The stamp of the generation on disk stays while nothing is written and
/// changes with every update that lands (add, remove, compact), so a
/// reader can tell its loaded copy is stale; a no-op add or remove
/// leaves it (and the generation).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stamp_changes_with_every_update_that_lands() {
    use treenav_tree::generation::stamp;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    let built = stamp(&path);
    assert_eq!(stamp(&path), built);
    file::load(&path).expect("load");
    assert_eq!(stamp(&path), built, "reading changes nothing");
    add(&path, corpus(0..3, "n"), None, &NoProgress)
        .await
        .expect("add");
    let added = stamp(&path);
    assert_ne!(added, built);
    add(&path, corpus(0..3, "n"), None, &NoProgress)
        .await
        .expect("add again");
    assert_eq!(stamp(&path), added, "a no-op add writes nothing");
    let nothing = remove(&path, &["no-such-id".to_string()], None)
        .await
        .expect("remove nothing");
    assert_eq!(
        (nothing.generation, nothing.removed, nothing.not_found.len()),
        (1, 0, 1)
    );
    assert_eq!(stamp(&path), added, "a no-op remove writes nothing");
    remove(&path, &["n1".to_string()], None)
        .await
        .expect("remove");
    let removed = stamp(&path);
    assert_ne!(removed, added);
    compact(&path).expect("compact");
    let compacted = stamp(&path);
    assert_ne!(compacted, removed);
    assert_ne!(compacted, built);
}

/// A delta copied from a sibling tree (the same build, so the same base,
/// and the same generation number, but other updates) is refused when
/// the tree opens: the index's commit names its delta by hash, so the
/// queries never answer from documents the index does not hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_copied_from_a_sibling_tree_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir(&a).expect("dir");
    std::fs::create_dir(&b).expect("dir");
    let (a, b) = (saved_tree(&a).await, saved_tree(&b).await);
    assert_eq!(std::fs::read(&a).ok(), std::fs::read(&b).ok(), "one build");
    add(&a, corpus(0..3, "x"), None, &NoProgress)
        .await
        .expect("add a");
    add(&b, corpus(0..3, "y"), None, &NoProgress)
        .await
        .expect("add b");
    std::fs::copy(
        treenav_tree::delta::delta_path(&b),
        treenav_tree::delta::delta_path(&a),
    )
    .expect("copy");
    let e = file::load(&a)
        .expect_err("a foreign delta is refused")
        .to_string();
    assert!(e.contains("delta"), "{e}");
}

/// The clusters holding documents, each with its documents' ids.
fn leaves(tree: &Tree) -> Vec<Vec<NodeId>> {
    let mut out: Vec<Vec<NodeId>> = Vec::new();
    let mut parents: Vec<NodeId> = tree
        .documents()
        .filter_map(|d| tree.get(d)?.parent)
        .collect();
    parents.sort_unstable();
    parents.dedup();
    for p in parents {
        out.push(
            tree.children(p)
                .iter()
                .copied()
                .filter(|c| tree.documents().any(|d| d == *c))
                .collect(),
        );
    }
    out
}

/// A small tree (leaves of a few documents under the default limit of
/// 100) keeps its clusters through small updates: two adds, two
/// replacements, two removals merge nothing (six clusters became two
/// when a leaf counted as small against the limit instead of its siblings).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_updates_of_a_small_tree_keep_its_clusters() {
    let dir = tempfile::tempdir().expect("dir");
    let tree = built(corpus(0..36, "d"), TreeParams::default()).await;
    let before = leaves(&tree).len();
    assert!(before >= 3, "the build made {before} leaves");
    let path = dir.path().join("t.tree");
    file::save(&tree, &path).expect("save");

    let mut merges = 0;
    merges += add(&path, corpus(40..42, "n"), None, &NoProgress)
        .await
        .expect("add")
        .merges;
    let replaced = add(&path, corpus(3..5, "d"), None, &NoProgress)
        .await
        .expect("replace");
    merges += replaced.merges;
    let removed = remove(&path, &["d7".into(), "d20".into()], None)
        .await
        .expect("remove");
    assert_eq!(removed.removed, 2);
    merges += removed.merges;
    assert_eq!(merges, 0);
    let tree = file::load(&path).expect("load");
    assert_eq!(leaves(&tree).len(), before);
    assert_eq!(tree.documents().count(), 36);
}

/// A leaf left far below its sibling leaves is still merged into the
/// nearest of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaf_left_far_below_its_siblings_is_merged() {
    let dir = tempfile::tempdir().expect("dir");
    let path = saved_tree(dir.path()).await;
    let tree = file::load(&path).expect("load");
    let all = leaves(&tree);
    let (i, biggest) = all
        .iter()
        .enumerate()
        .max_by_key(|(_, l)| l.len())
        .expect("a leaf");
    let siblings: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, l)| l.len())
        .collect();
    let mean = siblings.iter().sum::<usize>() as f64 / siblings.len() as f64;
    assert!(
        mean > 4.0,
        "siblings of {mean} documents: one left is not far below"
    );
    let gone: Vec<String> = biggest[1..]
        .iter()
        .filter_map(|d| match &tree.get(*d)?.kind {
            NodeKind::Document { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect();
    let report = remove(&path, &gone, None).await.expect("remove");
    assert!(report.merges >= 1, "{report:?}");
    assert_eq!(
        leaves(&file::load(&path).expect("load")).len(),
        all.len() - 1
    );
}

/// Every passage of `docs` (source id prefixes) has a passage vector: the
/// one its own label (`title: text`) embeds to in the tree's TF-IDF space.
/// How many passages were checked.
fn own_passage_vectors(tree: &Tree, prefixes: &[&str]) -> usize {
    let vectors = tree.passage_vectors().expect("passage vectors");
    let model = vectors.embedding.tfidf.as_ref().expect("tfidf model");
    let mut checked = 0;
    for d in tree.documents() {
        let Some(NodeKind::Document { id, title, .. }) = tree.get(d).map(|n| &n.kind) else {
            continue;
        };
        if !prefixes.iter().any(|p| id.starts_with(p)) {
            continue;
        }
        for p in tree.children(d) {
            let label = crate::passage_label(title, &tree.passage_text(*p).expect("text"));
            let expected = model.transform(&[label]);
            let row: Vec<f32> = expected.row(0).to_vec();
            let cosine = vectors.dot_exact(*p, &row).expect("a vector of its own");
            assert!(cosine > 0.99, "{id}: cosine {cosine} with its own label");
            checked += 1;
        }
    }
    checked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_passages_get_their_own_vectors_through_updates_and_compaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    add(&path, corpus(0..12, "n"), None, &NoProgress)
        .await
        .expect("add");
    let tree = file::load(&path).expect("load");
    assert_eq!(own_passage_vectors(&tree, &["n"]), 12);
    // A second update keeps the first one's rows and adds its own.
    add(&path, corpus(12..18, "m"), None, &NoProgress)
        .await
        .expect("add");
    remove(&path, &["n0".to_string()], None)
        .await
        .expect("remove");
    let tree = file::load(&path).expect("load");
    assert_eq!(own_passage_vectors(&tree, &["n", "m"]), 17);
    compact(&path).expect("compact");
    let tree = file::load(&path).expect("load");
    assert_eq!(own_passage_vectors(&tree, &["n", "m", "d"]), 137);
    let vectors = tree.passage_vectors().expect("passage vectors");
    assert_eq!(vectors.len(), tree.passages().count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_add_embeds_once_the_passages_the_tree_holds_without_a_vector() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = saved_tree(dir.path()).await;
    // Passage vectors missing 10 passages, as an update written before
    // deltas kept them leaves a tree.
    let tree = file::load(&path).expect("load");
    let dropped: HashSet<NodeId> = tree.passages().take(10).collect();
    let kept = tree
        .passage_vectors()
        .expect("passage vectors")
        .renumbered(|id| (!dropped.contains(&id)).then_some(id))
        .expect("rows read");
    let passages_path = treenav_tree::vectors::passage_vectors_path(&path);
    let base = base_id(&path).expect("base");
    treenav_tree::vectors::write_to(&kept, None, &passages_path, base).expect("write");
    let tree = file::load(&path).expect("load");
    let held = tree.passage_vectors().expect("passage vectors").len();
    assert_eq!(held, tree.passages().count() - 10);

    let report = add(&path, corpus(0..2, "n"), None, &NoProgress)
        .await
        .expect("add");
    assert_eq!(report.passages_embedded_again, 10);
    let tree = file::load(&path).expect("load");
    assert_eq!(own_passage_vectors(&tree, &["d", "n"]), 122);
    // Once: the next add embeds its own passages only.
    let report = add(&path, corpus(2..4, "n"), None, &NoProgress)
        .await
        .expect("add");
    assert_eq!(report.passages_embedded_again, 0);
}
