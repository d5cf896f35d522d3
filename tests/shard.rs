//! A build split into a plan, shards and a merge gives the single build's
//! tree, and refuses shards, plans and corpora that do not belong together.

use std::path::Path;
use treenav::build::{
    build_tree, Outline, Plan, ShardSpec, Summarizer, SummarizerOptions, TreeParams,
    ValidTreeParams,
};
use treenav::corpus::{load_str, Corpus, Format, LoadOptions};
use treenav::tree::{file, Embedder, EmbedderOptions, NoProgress, Tree};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn sample() -> Corpus {
    load_str(
        treenav::SAMPLE_CORPUS,
        "xquad-sample.json",
        Format::Squad,
        &LoadOptions::default(),
    )
    .expect("the bundled sample")
}

fn params(branching: usize, seed: u64) -> ValidTreeParams {
    TreeParams::default()
        .branching(branching)
        .seed(seed)
        .check()
        .expect("params")
}

fn embedder(params: &ValidTreeParams) -> Embedder {
    Embedder::new(&EmbedderOptions::default(), params.seed()).expect("embedder")
}

fn summarizer() -> Summarizer {
    Summarizer::new(&SummarizerOptions::Extractive).expect("summarizer")
}

fn single(corpus: Corpus, params: &ValidTreeParams) -> Tree {
    runtime()
        .block_on(build_tree(
            corpus,
            "sample",
            params,
            &embedder(params),
            &summarizer(),
            &NoProgress,
        ))
        .expect("single build")
}

fn make_plan(corpus: &Corpus, params: &ValidTreeParams, dir: &Path) -> Plan {
    runtime()
        .block_on(Plan::make(
            Outline::of(corpus, params.branching(), params.embed_sentences()),
            params,
            &embedder(params),
            "recipe",
            dir,
            &NoProgress,
        ))
        .expect("plan")
}

/// Each shard as its own "process": the plan opened from disk every time.
fn build_shards(dir: &Path, indices: &[u32], count: u32) {
    for &i in indices {
        let plan = Plan::open(dir).expect("open plan");
        let spec = ShardSpec::new(i, count).expect("spec");
        plan.build_shard(spec, &NoProgress).expect("shard");
    }
}

fn merge(corpus: Corpus, dir: &Path) -> treenav::build::Result<Tree> {
    let plan = Plan::open(dir)?;
    let embedder = embedder(&params(4, 42));
    runtime().block_on(plan.merge(corpus, "sample", &summarizer(), &embedder, &NoProgress))
}

#[test]
fn three_shards_merge_into_the_single_build() {
    // The default branching (one level of clusters on the sample) and a
    // small one (several levels, subtrees grown inside the shards).
    for branching in [100, 4] {
        let params = params(branching, 42);
        let dir = tempfile::tempdir().expect("tempdir");
        let plan = make_plan(&sample(), &params, dir.path());
        assert!(plan.tops() >= 3, "{} top clusters", plan.tops());
        build_shards(dir.path(), &[2, 0, 1], 3);
        let merged = merge(sample(), dir.path()).expect("merge");
        let single = single(sample(), &params);
        assert_eq!(
            file::to_bytes(&merged).expect("bytes"),
            file::to_bytes(&single).expect("bytes"),
            "branching {branching}: the merged tree is the single build's"
        );
        // Its vectors too (the plan keeps the fitted TF-IDF model): the
        // embedding judge and updates work on a merged tree.
        assert!(merged.document_vectors().is_some());
        assert_eq!(merged.document_vectors(), single.document_vectors());
        assert!(merged.passage_vectors().is_some());
        assert_eq!(merged.passage_vectors(), single.passage_vectors());
        merged.validate().expect("valid");
        if branching == 4 {
            let levels = single
                .level_stats()
                .iter()
                .filter(|s| s.kind == "cluster")
                .count();
            assert!(levels >= 3, "a deep tree: {levels} cluster levels");
            assert!(!single
                .neighbours(single.documents().next().expect("doc"))
                .is_empty());
        }
    }
}

fn error_of(result: treenav::build::Result<Tree>) -> String {
    match result {
        Ok(_) => panic!("the merge should have been refused"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn mismatched_plans_shards_and_corpora_are_refused() {
    let params = params(4, 42);
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let empty = tempfile::tempdir().expect("tempdir");
    let e = Plan::open(empty.path()).expect_err("no plan").to_string();
    assert!(e.contains("no plan in"), "{e}");
    make_plan(&sample(), &params, d);
    let e = error_of(merge(sample(), d));
    assert!(e.contains("no shard in"), "{e}");

    // An outline made for another branching than the build's.
    let outline = Outline::of(&sample(), 5, params.embed_sentences());
    let other = tempfile::tempdir().expect("tempdir");
    let made = runtime().block_on(Plan::make(
        outline,
        &params,
        &embedder(&params),
        "recipe",
        other.path(),
        &NoProgress,
    ));
    let e = made.expect_err("another branching").to_string();
    assert!(e.contains("branching 5") && e.contains("are 4"), "{e}");
    assert!(!other.path().join("plan.bin").exists(), "nothing written");

    // A missing shard.
    build_shards(d, &[0, 2], 3);
    let e = error_of(merge(sample(), d));
    assert!(e.contains("shard 1/3 is missing"), "{e}");

    // A shard of another plan (another seed) in its place.
    let other = tempfile::tempdir().expect("tempdir");
    make_plan(&sample(), &params_with_seed(7), other.path());
    build_shards(other.path(), &[1], 3);
    let name = "shard-1-of-3.bin";
    std::fs::copy(other.path().join(name), d.join(name)).expect("copy");
    let e = error_of(merge(sample(), d));
    assert!(e.contains(name) && e.contains("another plan"), "{e}");

    // The right shard, then a corpus that is not the plan's.
    build_shards(d, &[1], 3);
    let mut changed = sample();
    changed.documents[0].passages[0].text.push_str(" Edited.");
    let e = error_of(merge(changed, d));
    assert!(e.contains("not the corpus the plan"), "{e}");
    merge(sample(), d).expect("everything in place");

    // A corrupted shard.
    let path = d.join(name);
    let good = std::fs::read(&path).expect("read");
    let mut bad = good.clone();
    let last = bad.len() - 1;
    bad[last] ^= 0xff;
    std::fs::write(&path, &bad).expect("write");
    let e = error_of(merge(sample(), d));
    assert!(e.contains("checksum mismatch"), "{e}");
    std::fs::write(&path, &good).expect("write");

    // Shards of two runs with different counts.
    build_shards(d, &[0], 2);
    let e = error_of(merge(sample(), d));
    assert!(e.contains("different counts"), "{e}");
    std::fs::remove_file(d.join("shard-0-of-2.bin")).expect("remove");

    // Vectors of another plan.
    let vectors = treenav::build::shard::VECTORS_FILE;
    std::fs::copy(other.path().join(vectors), d.join(vectors)).expect("copy");
    build_shards(other.path(), &[0], 1); // (the other plan still works)
    let plan = Plan::open(d).expect("open");
    let e = plan
        .build_shard(ShardSpec::new(0, 3).expect("spec"), &NoProgress)
        .expect_err("foreign vectors");
    assert!(e.to_string().contains("not the plan's"), "{e}");
}

fn params_with_seed(seed: u64) -> ValidTreeParams {
    params(4, seed)
}
