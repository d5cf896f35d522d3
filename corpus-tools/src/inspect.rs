//! `treenav inspect`: levels, counts and sample nodes of a tree file.

use anyhow::Result;
use serde::Serialize;
use std::path::Path;
use treenav::tree::{self, LevelStats, NodeKind, Tree, TreeMeta};

#[derive(Serialize)]
struct Report<'a> {
    file: String,
    bytes: u64,
    format_version: u32,
    load_ms: f64,
    meta: &'a TreeMeta,
    /// What is kept where: the tree file and its side files.
    files: Vec<Part>,
    /// The lexical side's analyzer (`en-stem`, `simple`, `words`).
    analyzer: &'static str,
    documents: usize,
    passages: usize,
    clusters: usize,
    /// The documents and passages that have a stored vector of their own.
    vectors: Vectors,
    levels: Vec<LevelStats>,
    /// Updates since the build (or the last compaction), if any.
    updates: Option<treenav::build::update::UpdateLog>,
    /// How far the clusters are from a fresh build's (leaf sizes; the
    /// share of documents nearer another sibling leaf's centroid).
    drift: treenav::build::update::Drift,
    samples: Samples,
}

/// The documents and passages with a stored vector (the embedding judge
/// scores a passage without one by its document's).
#[derive(Serialize)]
struct Vectors {
    documents: usize,
    passages: usize,
}

impl Vectors {
    fn of(tree: &Tree) -> Vectors {
        let held = |v: Option<&std::sync::Arc<tree::vectors::UnitVectors>>,
                    nodes: &mut dyn Iterator<Item = tree::NodeId>| {
            v.map_or(0, |v| nodes.filter(|n| v.contains(*n)).count())
        };
        Vectors {
            documents: held(tree.document_vectors(), &mut tree.documents()),
            passages: held(tree.passage_vectors(), &mut tree.passages()),
        }
    }
}

/// One part of a tree and the file it lives in (`None`: held in memory,
/// computed when the tree is opened).
#[derive(Serialize)]
struct Part {
    holds: &'static str,
    file: Option<String>,
    bytes: Option<u64>,
}

fn parts(path: &Path, tree: &Tree) -> Vec<Part> {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).ok();
    let at = |p: &Path| Some(p.display().to_string());
    let mut out = vec![Part {
        holds: "structure, labels, neighbour lists",
        file: at(path),
        bytes: size(path),
    }];
    out.push(match tree.text_store() {
        Some(store) => Part {
            holds: "passage texts",
            file: at(store.path()),
            bytes: size(store.path()),
        },
        None => Part {
            holds: "passage texts (in the tree file)",
            file: at(path),
            bytes: None,
        },
    });
    for (path, holds) in [
        (
            treenav::build::update::vectors_path(path),
            "document vectors: the descent by centroid, updates' placement",
        ),
        (
            tree::vectors::passage_vectors_path(path),
            "passage vectors: what the embedding judge scores",
        ),
        (
            treenav::build::update::delta_path(path),
            "updates since the tree file (applied when opened)",
        ),
    ] {
        if path.exists() {
            out.push(Part {
                holds,
                file: at(&path),
                bytes: size(&path),
            });
        }
    }
    match tree.lexical() {
        Some(lexical) => {
            let folder = lexical.index.folder();
            out.push(Part {
                holds: if folder.is_some() {
                    "passage statistics, document order"
                } else {
                    "passage statistics (before tantivy: the document index is built anew when opened)"
                },
                file: lexical.path.as_deref().and_then(at),
                bytes: lexical.path.as_deref().and_then(size),
            });
            if let Some(folder) = folder {
                out.push(Part {
                    holds: "BM25 index over documents (tantivy)",
                    file: at(folder),
                    bytes: folder_size(folder),
                });
            }
        }
        None => out.push(Part {
            holds: "BM25 index over documents, passage statistics (computed at start)",
            file: None,
            bytes: None,
        }),
    }
    out
}

/// The bytes of the files in a folder.
fn folder_size(dir: &Path) -> Option<u64> {
    let entries = std::fs::read_dir(dir).ok()?;
    Some(
        entries
            .flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .sum(),
    )
}

#[derive(Serialize, Default)]
struct Samples {
    clusters: Vec<ClusterSample>,
    documents: Vec<DocumentSample>,
    passages: Vec<PassageSample>,
}

#[derive(Serialize)]
struct ClusterSample {
    depth: usize,
    documents: u32,
    children: usize,
    summary: String,
    terms: Vec<String>,
}

#[derive(Serialize)]
struct DocumentSample {
    id: String,
    label: String,
    passages: usize,
}

#[derive(Serialize)]
struct PassageSample {
    id: String,
    text: String,
}

pub fn human_bytes(n: u64) -> String {
    match n {
        0..=1023 => format!("{n} B"),
        1024..=1_048_575 => format!("{:.1} KiB", n as f64 / 1024.0),
        _ => format!("{:.1} MiB", n as f64 / 1_048_576.0),
    }
}

/// Text on one line, cut at `max` characters.
fn snippet(text: &str, max: usize) -> String {
    treenav::tree::text::one_line(text, max)
}

/// Evenly spread picks of `n` items out of `items`.
fn spread<T: Copy>(items: &[T], n: usize) -> Vec<T> {
    if items.is_empty() || n == 0 {
        return Vec::new();
    }
    let step = (items.len() / n).max(1);
    items.iter().step_by(step).take(n).copied().collect()
}

fn samples(tree: &Tree, n: usize) -> Samples {
    let mut out = Samples::default();
    for (depth, level) in tree.levels().iter().enumerate() {
        for id in spread(level, n) {
            let Some(node) = tree.get(id) else { continue };
            match &node.kind {
                NodeKind::Root => {}
                NodeKind::Cluster {
                    summary,
                    terms,
                    documents,
                } => out.clusters.push(ClusterSample {
                    depth,
                    documents: *documents,
                    children: node.children.len(),
                    summary: summary.clone(),
                    terms: terms.clone(),
                }),
                NodeKind::Document { id, .. } => out.documents.push(DocumentSample {
                    id: id.clone(),
                    label: snippet(&node.label(), 160),
                    passages: node.children.len(),
                }),
                NodeKind::Passage { id: pid, .. } => out.passages.push(PassageSample {
                    id: pid.clone(),
                    text: match tree.passage_text(id) {
                        Ok(text) => snippet(&text, 160),
                        Err(e) => format!("(cannot read: {e})"),
                    },
                }),
            }
        }
    }
    out
}

pub fn run(path: &Path, json: bool, n: usize, verify: bool) -> Result<()> {
    let start = std::time::Instant::now();
    let tree = tree::file::load(path)?;
    let load_ms = start.elapsed().as_secs_f64() * 1000.0;
    if verify {
        verify_index(path, &tree)?;
    }
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let levels = tree.level_stats();
    let count = |kind: &str| -> usize {
        levels
            .iter()
            .filter(|l| l.kind == kind)
            .map(|l| l.nodes)
            .sum()
    };
    let report = Report {
        file: path.display().to_string(),
        bytes,
        format_version: tree::file::version(path)?,
        load_ms,
        meta: tree.meta(),
        files: parts(path, &tree),
        analyzer: tree
            .lexical()
            .map_or(tree.analyzer(), |l| l.index.analyzer())
            .name(),
        documents: count("document"),
        passages: count("passage"),
        clusters: count("cluster"),
        vectors: Vectors::of(&tree),
        samples: samples(&tree, n),
        levels,
        updates: tree.updates().cloned(),
        drift: treenav::build::update::drift(&tree, tree.document_vectors().map(|v| v.as_ref())),
    };
    if json {
        return crate::emit(&crate::json_text(&report)?);
    }
    crate::emit(&render(&report, bytes, load_ms))
}

/// `--verify`: every file of the tantivy index against its checksum.
fn verify_index(path: &Path, tree: &tree::Tree) -> Result<()> {
    let Some(lexical) = tree.lexical() else {
        eprintln!("verify: {} keeps no lexical index on disk", path.display());
        return Ok(());
    };
    let damaged = lexical.index.verify()?;
    if damaged.is_empty() {
        eprintln!("verify: every file of the lexical index matches its checksum");
        return Ok(());
    }
    let names: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
    anyhow::bail!(
        "{}: the lexical index has damaged files ({}) in {}: rebuild the tree or restore its files",
        path.display(),
        names.join(", "),
        tree::file::index_folder(path).display()
    )
}

/// The report as text.
fn render(report: &Report<'_>, bytes: u64, load_ms: f64) -> String {
    let mut o = String::new();
    let m = report.meta;
    out!(
        o,
        "tree      {} ({}, format v{}, loaded in {:.0} ms)",
        report.file,
        human_bytes(bytes),
        report.format_version,
        load_ms
    );
    out!(o, "source    {}", m.source);
    out!(
        o,
        "built     {} · embedder {} · summarizer {} · branching {} · seed {}",
        m.built_by,
        m.embedder,
        m.summarizer,
        m.branching,
        m.seed
    );
    match &m.corpus {
        // Updates since the tree file: the fingerprint is of what it held
        // when written; `counts` says what it holds now.
        Some(fingerprint) if report.updates.is_some() => {
            out!(o, "corpus    {fingerprint} when written; updated since")
        }
        Some(fingerprint) => out!(o, "corpus    {fingerprint}"),
        None => out!(o, "corpus    not recorded (built before format v3)"),
    }
    o.push_str(&file_lines(&report.files));
    out!(o, "lexical   analyzer {}", report.analyzer);
    out!(
        o,
        "counts    {} clusters · {} documents · {} passages",
        report.clusters,
        report.documents,
        report.passages
    );
    o.push_str(&vector_line(report));
    o.push_str(&update_lines(report));
    out!(o);
    out!(o, "depth  kind       nodes   children min / mean / max");
    for l in &report.levels {
        out!(
            o,
            "{:>5}  {:<9} {:>6}   {:>4} / {:>6.1} / {:>4}",
            l.depth,
            l.kind,
            l.nodes,
            l.min_children,
            l.mean_children,
            l.max_children
        );
    }
    out!(o);
    o.push_str(&sample_lines(report));
    o
}

/// A few clusters, documents and passages, as a reader sees them.
fn sample_lines(report: &Report<'_>) -> String {
    let mut o = String::new();
    out!(o, "sample clusters");
    for c in &report.samples.clusters {
        out!(
            o,
            "  [depth {}, {} docs, {} children] {}",
            c.depth,
            c.documents,
            c.children,
            c.summary
        );
    }
    out!(o, "sample documents");
    for d in &report.samples.documents {
        out!(o, "  {} ({} passages): {}", d.id, d.passages, d.label);
    }
    out!(o, "sample passages");
    for p in &report.samples.passages {
        out!(o, "  {}: {}", p.id, p.text);
    }
    o
}

/// One line per part of the tree and the file holding it.
fn file_lines(files: &[Part]) -> String {
    let mut o = String::new();
    for part in files {
        let bytes = part.bytes.map(|b| format!(" ({})", human_bytes(b)));
        match &part.file {
            Some(file) => out!(
                o,
                "file      {file}{}: {}",
                bytes.unwrap_or_default(),
                part.holds
            ),
            None => out!(o, "file      -: {}", part.holds),
        }
    }
    o
}

/// How many documents and passages have a stored vector of their own.
fn vector_line(report: &Report<'_>) -> String {
    let v = &report.vectors;
    if v.documents == 0 && v.passages == 0 {
        return String::new();
    }
    let mut line = format!(
        "vectors   {} of {} documents · {} of {} passages",
        v.documents, report.documents, v.passages, report.passages
    );
    if v.passages < report.passages {
        line.push_str(&format!(
            " ({} scored by their document's vector until the next `treenav add` embeds them)",
            report.passages - v.passages
        ));
    }
    line.push('\n');
    line
}

/// The updates since the build and the clusters' drift.
fn update_lines(report: &Report<'_>) -> String {
    let mut o = String::new();
    match &report.updates {
        Some(u) => out!(
            o,
            "updates   {} since the tree file was written: {} added, {} removed, {} leaf splits, {} merges (`treenav compact` folds them in)",
            u.updates,
            u.added,
            u.removed,
            u.splits,
            u.merges
        ),
        None => out!(o, "updates   none since the tree file was written"),
    }
    let d = &report.drift;
    let misplaced = match d.misplaced {
        Some(share) => format!(
            "{:.1}% of {} documents nearer another sibling leaf's centroid",
            share * 100.0,
            d.checked
        ),
        None => "no vectors kept to check placement".into(),
    };
    out!(
        o,
        "drift     {} leaves of {} / {:.1} / {} documents (spread {:.2}); {misplaced}",
        d.leaves,
        d.smallest,
        d.mean,
        d.largest,
        d.spread
    );
    o
}
