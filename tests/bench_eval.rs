//! The bench: dataset loaders (fixtures and bad files), the runner end to
//! end on the bundled sample, and BM25 against the shared data's reference
//! figures (skipped when ../shared/data is absent).

mod support;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use treenav::eval::bench::{self, BenchSetup, SystemKind};
use treenav::eval::dataset::{self, DatasetOptions, GoldLevel};
use treenav::judge::JudgeOptions;
use treenav::navigator::{NavigatorConfig, Strategy};
use treenav::tree::NoProgress;

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn beir_dir(corpus: &str, queries: &str, qrels: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("corpus.jsonl"), corpus).expect("write");
    std::fs::write(dir.path().join("queries.jsonl"), queries).expect("write");
    std::fs::create_dir(dir.path().join("qrels")).expect("mkdir");
    std::fs::write(dir.path().join("qrels/test.tsv"), qrels).expect("write");
    dir
}

const CORPUS: &str = r#"{"_id": "d1", "title": "Insulin", "text": "Insulin lowers blood glucose."}
{"_id": "d2", "title": "Football", "text": "The striker scored."}
"#;

fn load_err(path: &Path) -> String {
    match dataset::load(path, &DatasetOptions::default()) {
        Ok(_) => panic!("{} loaded", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn squad_fixture_gold_is_the_paragraph() -> anyhow::Result<()> {
    let d = dataset::load(&fixture("squad.json"), &DatasetOptions::default())?;
    assert_eq!(d.gold_level, GoldLevel::Passage);
    assert_eq!(d.queries.len(), 1);
    assert_eq!(d.queries[0].id, "q1");
    assert_eq!(d.queries[0].gold, vec!["Oxygen#0".to_string()]);
    assert_eq!(d.corpus.documents.len(), 2);
    Ok(())
}

#[test]
fn beir_fixture_gold_is_documents() -> anyhow::Result<()> {
    let d = dataset::load(&fixture("beir"), &DatasetOptions::default())?;
    assert_eq!(d.gold_level, GoldLevel::Document);
    assert_eq!(d.split.as_deref(), Some("test"));
    assert_eq!(d.queries.len(), 1);
    assert_eq!(d.queries[0].gold, vec!["d1".to_string()]);
    // corpus.jsonl itself names the folder too.
    let again = dataset::load(&fixture("beir/corpus.jsonl"), &DatasetOptions::default())?;
    assert_eq!(again.queries.len(), 1);
    Ok(())
}

#[test]
fn missing_split_lists_the_splits_there() {
    let err = match dataset::load(
        &fixture("beir"),
        &DatasetOptions {
            split: "dev".into(),
            ..DatasetOptions::default()
        },
    ) {
        Ok(_) => panic!("loaded a missing split"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("split `dev`") && err.contains("test"), "{err}");
}

#[test]
fn bad_queries_name_file_and_line() {
    let dir = beir_dir(
        CORPUS,
        "{\"_id\": \"q1\", \"text\": \"insulin\"}\n{\"_id\": \"q2\", \"text\": \n",
        "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
    );
    let err = load_err(dir.path());
    assert!(
        err.contains("queries.jsonl:2") && err.contains("malformed JSON"),
        "{err}"
    );

    let dir = beir_dir(CORPUS, "{\"_id\": \"q1\"}\n", "q1\td1\t1\n");
    let err = load_err(dir.path());
    assert!(
        err.contains("queries.jsonl:1") && err.contains("`text`"),
        "{err}"
    );

    let dir = beir_dir(
        CORPUS,
        "{\"_id\": \"q1\", \"text\": \"a\"}\n{\"_id\": \"q1\", \"text\": \"b\"}\n",
        "q1\td1\t1\n",
    );
    let err = load_err(dir.path());
    assert!(
        err.contains("queries.jsonl:2") && err.contains("duplicate"),
        "{err}"
    );
}

#[test]
fn bad_qrels_name_file_and_line() {
    let queries = "{\"_id\": \"q1\", \"text\": \"insulin\"}\n";
    let dir = beir_dir(
        CORPUS,
        queries,
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1 d2 1\n",
    );
    let err = load_err(dir.path());
    assert!(
        err.contains("test.tsv:3") && err.contains("3 tab-separated"),
        "{err}"
    );

    let dir = beir_dir(CORPUS, queries, "q1\td1\thigh\n");
    let err = load_err(dir.path());
    assert!(
        err.contains("test.tsv:1") && err.contains("`high`"),
        "{err}"
    );

    // Only dangling qrels (unknown document): no query is left.
    let dir = beir_dir(CORPUS, queries, "q1\td9\t1\n");
    let err = load_err(dir.path());
    assert!(err.contains("no query has a relevant document"), "{err}");
}

#[test]
fn bad_squad_names_the_line_or_question() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("broken.json");
    std::fs::write(&path, "{\"data\": [\n {\"title\": \"A\", \"paragraphs\": [\n  {\"context\": \"x\" \"qas\": []}]}]}\n")
        .expect("write");
    let err = load_err(&path);
    assert!(
        err.contains("broken.json") && err.contains("line 3"),
        "{err}"
    );

    let path = dir.path().join("empty-q.json");
    std::fs::write(
        &path,
        r#"{"data": [{"title": "A", "paragraphs": [{"context": "Some text.", "qas": [{"id": "x", "question": " "}]}]}]}"#,
    )
    .expect("write");
    let err = load_err(&path);
    assert!(
        err.contains("qas[0]") && err.contains("empty question"),
        "{err}"
    );

    let err = load_err(&dir.path().join("nothing.txt"));
    assert!(err.contains("not a dataset"), "{err}");
}

/// A bench over `tree` running `systems` with the defaults the tests
/// share (lexical judge, the navigator's defaults, seed 3, 30 queries, one
/// at a time, no sweep); each test changes what it measures.
fn sample_setup(
    tree: Option<Arc<treenav::tree::Tree>>,
    systems: Vec<SystemKind>,
) -> anyhow::Result<BenchSetup> {
    Ok(BenchSetup {
        tree,
        seed: 3,
        limit: Some(30),
        // The level walk: these tests read its per-level figures.
        ..BenchSetup::new(
            systems,
            NavigatorConfig::default()
                .strategy(Strategy::Levels)
                .check()?,
        )
    })
}

fn sample_dataset() -> anyhow::Result<(tempfile::TempDir, dataset::Dataset)> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("sample.json");
    std::fs::write(&path, treenav::SAMPLE_CORPUS)?;
    let d = dataset::load(&path, &DatasetOptions::default())?;
    Ok((dir, d))
}

#[test]
fn sampling_is_seeded_and_keeps_file_order() -> anyhow::Result<()> {
    let (_dir, d) = sample_dataset()?;
    assert!(
        d.queries.len() > 20,
        "the sample has {} questions",
        d.queries.len()
    );
    let pick = |seed| {
        let mut x = d.clone();
        x.sample(10, seed);
        x.queries.iter().map(|q| q.id.clone()).collect::<Vec<_>>()
    };
    assert_eq!(pick(7), pick(7));
    assert_ne!(pick(7), pick(8));
    let order: Vec<usize> = pick(7)
        .iter()
        .filter_map(|id| d.queries.iter().position(|q| &q.id == id))
        .collect();
    assert_eq!(order.len(), 10);
    assert!(order.windows(2).all(|w| w[0] < w[1]));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_runs_every_judged_system_on_the_sample() -> anyhow::Result<()> {
    let (_dir, d) = sample_dataset()?;
    let tree = support::tree_of(d.corpus.clone(), None).await;
    let setup = BenchSetup {
        limit: Some(40),
        config: serde_json::json!({"note": "test"}),
        ..sample_setup(
            Some(tree),
            vec![
                SystemKind::Tree,
                SystemKind::Bm25,
                SystemKind::Rerank,
                SystemKind::Flat,
            ],
        )?
    };
    let report = bench::run(&d, &setup, &NoProgress).await?;
    assert_eq!(report.dataset.queries, 40);
    assert_eq!(report.order, ["tree", "bm25", "rerank", "flat"]);
    let json = serde_json::to_value(&report)?;
    assert_eq!(json["schema"], "treenav-bench/3");
    for name in ["tree", "bm25", "rerank", "flat"] {
        let s = &json["systems"][name];
        for level in ["passage", "document"] {
            for key in [
                "hit_at_1",
                "hit_at_5",
                "recall_at_10",
                "mrr_at_10",
                "ndcg_at_10",
            ] {
                let v = s[level][key].as_f64().unwrap_or(-1.0);
                assert!((0.0..=1.0).contains(&v), "{name}.{level}.{key} = {v}");
            }
        }
        for key in [
            "candidates_judged",
            "judge_calls",
            "titles_read",
            "input_tokens",
            "cost_usd",
            "latency_p50_ms",
            "latency_p95_ms",
        ] {
            assert!(s[key].as_f64().is_some(), "{name}.{key} missing");
        }
        // Hit@1 ≤ Hit@5 ≤ Recall@10 for single-paragraph gold.
        let p = &report.systems[name].passage;
        assert!(
            p.hit_at_1 <= p.hit_at_5 && p.hit_at_5 <= p.recall_at_10,
            "{name}: {p:?}"
        );
    }
    let bm25 = &report.systems["bm25"];
    assert!(
        bm25.passage.hit_at_1 > 0.6,
        "bm25 Hit@1 {}",
        bm25.passage.hit_at_1
    );
    assert_eq!(bm25.candidates_judged, 0.0);
    let flat = &report.systems["flat"];
    // Every passage, the calibration references of every batch but the
    // first, and the shortlist of 5.
    let n = report.dataset.passages;
    let shown = n + 2 * (n.div_ceil(100) - 1);
    assert_eq!(flat.candidates_judged, (shown + 5) as f64);
    assert!((flat.titles_read - 1.0).abs() < 1e-9);
    let tree = &report.systems["tree"];
    assert!(tree.judge_calls >= 3.0, "{}", tree.judge_calls);
    let nav = tree.navigation.as_ref().expect("tree has navigation loss");
    let lost: f64 = nav.levels.iter().map(|l| l.lost).sum();
    assert!((nav.returned + lost - 1.0).abs() < 1e-9, "{nav:?}");
    // The lexical judge ranks like BM25 here: the tree and flat lose nothing to it.
    assert!(tree.passage.hit_at_1 >= bm25.passage.hit_at_1 - 0.05);
    assert!((flat.passage.hit_at_1 - bm25.passage.hit_at_1).abs() <= 0.05);
    let md = report.markdown();
    assert!(
        md.contains("| tree |") && md.contains("gold reached the passage level"),
        "{md}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flat_is_skipped_over_its_limit_and_tree_needs_a_tree() -> anyhow::Result<()> {
    let (_dir, d) = sample_dataset()?;
    let mut setup = BenchSetup {
        flat_max_passages: 10,
        limit: Some(5),
        config: serde_json::Value::Null,
        ..sample_setup(None, vec![SystemKind::Flat])?
    };
    let report = bench::run(&d, &setup, &NoProgress).await?;
    assert!(report.systems.is_empty());
    assert!(report.skipped["flat"].contains("flat limit"));
    setup.systems = vec![SystemKind::Tree];
    let err = bench::run(&d, &setup, &NoProgress)
        .await
        .expect_err("no tree");
    assert!(err.to_string().contains("needs a tree"), "{err}");
    Ok(())
}

async fn bm25_hit_at_1(rel: &str, limit: Option<usize>) -> anyhow::Result<Option<f64>> {
    let Some(path) = support::shared_data(rel) else {
        return Ok(None);
    };
    let d = dataset::load(&path, &DatasetOptions::default())?;
    let setup = BenchSetup {
        rerank_n: 100,
        flat_max_passages: 0,
        seed: 42,
        limit,
        config: serde_json::Value::Null,
        ..sample_setup(None, vec![SystemKind::Bm25])?
    };
    let report = bench::run(&d, &setup, &NoProgress).await?;
    Ok(Some(report.systems["bm25"].passage.hit_at_1))
}

/// ../shared/data/README.md: flat BM25 passage Hit@1 is 0.934 on xquad-en
/// and 0.776 on squad-dev; a faithful BM25 lands within ±2 points.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bm25_reproduces_the_reference_figures() -> anyhow::Result<()> {
    if let Some(hit) = bm25_hit_at_1("xquad-en/xquad.en.json", None).await? {
        assert!((hit - 0.934).abs() <= 0.02, "xquad-en bm25 Hit@1 {hit}");
    }
    if let Some(hit) = bm25_hit_at_1("squad-dev-v1.1/dev-v1.1.json", None).await? {
        assert!((hit - 0.776).abs() <= 0.02, "squad-dev bm25 Hit@1 {hit}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_curve_on_the_sample_is_consistent() -> anyhow::Result<()> {
    use treenav::eval::prune_curve::{self, Retriever};
    let (_dir, mut d) = sample_dataset()?;
    d.sample(30, 1);
    let curve = prune_curve::run(
        &d,
        &Retriever::Bm25,
        &JudgeOptions::default(),
        8,
        1,
        &[],
        &NoProgress,
    )
    .await?;
    assert_eq!(curve.questions, 30);
    assert!(curve.gold_retrieved > 20, "{}", curve.gold_retrieved);
    let top_n: Vec<_> = curve
        .points
        .iter()
        .filter(|p| p.strategy == "top-n")
        .collect();
    assert_eq!(top_n.len(), 8);
    // Keeping all 8 drops nothing and keeps every gold; fewer keeps less.
    let all = top_n.last().expect("n = 8");
    assert_eq!((all.recall_retention, all.compression), (1.0, 0.0));
    for w in top_n.windows(2) {
        assert!(w[0].recall_retention <= w[1].recall_retention);
        assert!(w[0].compression >= w[1].compression);
    }
    // keep_top_k = 1: every strategy keeps at least the first chunk.
    assert!(curve
        .points
        .iter()
        .all(|p| p.compression <= 1.0 - 1.0 / 8.0 + 1e-9));
    assert!(curve.compression_at("grade", 0.5).is_some());
    assert!(curve.csv().lines().count() == curve.points.len() + 1);
    Ok(())
}

/// Queries run at once change throughput, never a metric: the same figures
/// (quality, judged candidates, navigation loss, a sweep) at concurrency 1
/// and 6.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_changes_no_metric() -> anyhow::Result<()> {
    let (_dir, d) = sample_dataset()?;
    let tree = support::tree_of(d.corpus.clone(), None).await;
    let mut setup = BenchSetup {
        seed: 5,
        judge_budgets: vec![20],
        ..sample_setup(
            Some(tree),
            vec![
                SystemKind::Tree,
                SystemKind::Bm25,
                SystemKind::Rerank,
                SystemKind::Gar,
            ],
        )?
    };
    let one = bench::run(&d, &setup, &NoProgress).await?;
    setup.concurrency = 6;
    let six = bench::run(&d, &setup, &NoProgress).await?;
    assert!(one.systems["tree"].queries_per_second > 0.0);
    // Time by step: each level then the rerank, adding up to what was judged.
    for name in ["tree", "gar"] {
        let s = &one.systems[name];
        let steps: Vec<&str> = s.time_by_step.iter().map(|t| t.step.as_str()).collect();
        assert_eq!(steps.last(), Some(&"rerank"), "{name}: {steps:?}");
        let shown: f64 = s.time_by_step.iter().map(|t| t.candidates).sum();
        assert!(
            (shown - s.candidates_judged).abs() < 1e-6,
            "{name}: {shown}"
        );
    }
    assert!(one.systems["tree"].time_by_step[0].step.starts_with("1 "));
    assert!(one.systems["bm25"].time_by_step.is_empty());
    assert_eq!(support::bench_figures(&one), support::bench_figures(&six));
    setup.concurrency = 0;
    assert!(bench::run(&d, &setup, &NoProgress).await.is_err());
    Ok(())
}

/// `--explore-budgets`: the embedding judge alone at each budget, its
/// vectors read per query counted and bounded by the budget, more budget
/// reading more; a tree whose vectors the judge may not use is refused,
/// saying why. (TF-IDF vectors, allowed by `tfidf_vectors`, stand in for
/// bge-small's here: the sweep's logic does not depend on the model.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explore_sweep_counts_the_vectors_each_budget_reads() -> anyhow::Result<()> {
    use treenav::navigator::BestFirstConfig;
    let (_dir, d) = sample_dataset()?;
    let tree = support::tree_of(d.corpus.clone(), None).await;
    let navigator = |tfidf_vectors: bool| {
        NavigatorConfig::default()
            .strategy(Strategy::BestFirst)
            .best_first(BestFirstConfig {
                tfidf_vectors,
                ..BestFirstConfig::default()
            })
            .check()
    };
    let mut setup = BenchSetup {
        navigator: navigator(true)?,
        seed: 5,
        limit: Some(20),
        explore_budgets: vec![10, 40],
        concurrency: 2,
        ..sample_setup(Some(tree), vec![SystemKind::Bm25])?
    };
    let report = bench::run(&d, &setup, &NoProgress).await?;
    let rows = &report.explore_budgets;
    assert_eq!(rows.iter().map(|r| r.budget).collect::<Vec<_>>(), [10, 40]);
    for r in rows {
        let read = r.system.vectors_scored;
        // The budget's passages, plus the descent's centroids and the
        // documents of at most two leaves.
        assert!(
            read > 0.0 && read <= 2.0 * r.budget as f64 + 40.0,
            "{}: {read}",
            r.budget
        );
        assert!((r.corpus_share - read / report.dataset.passages as f64).abs() < 1e-9);
        assert!(r.system.document.ndcg_at_10 > 0.0);
    }
    assert!(rows[1].system.vectors_scored > rows[0].system.vectors_scored);
    let markdown = report.markdown();
    assert!(markdown.contains("| explore budget |"), "{markdown}");
    assert!(markdown.contains("| 40 | "), "{markdown}");

    setup.navigator = navigator(false)?;
    let refused = bench::run(&d, &setup, &NoProgress)
        .await
        .expect_err("refused");
    assert!(
        refused
            .to_string()
            .contains("--explore-budgets needs a tree with stored vectors"),
        "{refused}"
    );
    Ok(())
}

/// A tree built from another corpus is refused before any query runs (it
/// used to bench and report figures for passages the dataset lacks); a tree
/// from before format version 3, without a fingerprint, still benches.
#[tokio::test]
async fn bench_refuses_a_tree_built_from_another_corpus() -> anyhow::Result<()> {
    let (dir, d) = sample_dataset()?;
    let mut other = d.clone();
    other.corpus.documents[0].passages[0]
        .text
        .push_str(" One more sentence.");
    let foreign =
        std::sync::Arc::unwrap_or_clone(support::tree_of(other.corpus.clone(), None).await);
    let setup = |tree: treenav::tree::Tree| BenchSetup {
        seed: 5,
        limit: Some(3),
        ..sample_setup(Some(Arc::new(tree)), vec![SystemKind::Tree]).expect("setup")
    };
    let err = bench::run(&d, &setup(foreign.clone()), &NoProgress)
        .await
        .expect_err("a foreign tree must be refused");
    assert!(
        matches!(err, treenav::eval::Error::TreeMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("different corpus"), "{err}");
    // The pruning curve over the tree refuses it too.
    let retriever = treenav::eval::prune_curve::Retriever::Tree {
        tree: Arc::new(foreign.clone()),
        config: NavigatorConfig::default().check()?,
    };
    let err = treenav::eval::prune_curve::run(
        &d,
        &retriever,
        &JudgeOptions::default(),
        5,
        1,
        &[],
        &NoProgress,
    )
    .await
    .expect_err("a foreign tree must be refused");
    assert!(
        matches!(err, treenav::eval::Error::TreeMismatch { .. }),
        "{err}"
    );

    // The fingerprint survives the file; an old file has none and benches.
    let own = std::sync::Arc::unwrap_or_clone(support::tree_of(d.corpus.clone(), None).await);
    let path = dir.path().join("own.tree");
    treenav::tree::file::save(&own, &path)?;
    let loaded = treenav::tree::file::load(&path)?;
    assert_eq!(loaded.meta().corpus, Some(d.corpus.fingerprint()));
    bench::run(&d, &setup(loaded), &NoProgress).await?;
    let old = path.with_extension("v1.tree");
    std::fs::write(&old, treenav::tree::file::to_bytes_v1(&foreign)?)?;
    let old = treenav::tree::file::load(&old)?;
    assert_eq!(old.meta().corpus, None);
    bench::run(&d, &setup(old), &NoProgress).await?;
    Ok(())
}

/// `--run-dir` output read back by ir_measures (a real third-party
/// evaluator, installed by `.ci/run`): its nDCG@10 over our TREC runs and
/// qrels equals the bench's own, system by system and per query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_files_read_back_by_ir_measures_give_our_figures() -> anyhow::Result<()> {
    let (_dir, d) = sample_dataset()?;
    let tree = support::tree_of(d.corpus.clone(), None).await;
    let runs = tempfile::tempdir()?;
    let setup = BenchSetup {
        judge_budgets: vec![20],
        run_dir: Some(runs.path().to_path_buf()),
        ..sample_setup(Some(tree), vec![SystemKind::Bm25, SystemKind::Tree])?
    };
    let report = bench::run(&d, &setup, &NoProgress).await?;
    // File names keep no `+` or `:` (`tree+judge@20` → `tree-judge@20`).
    for name in [
        "bm25",
        "tree",
        "tree@20",
        "rerank@20",
        "tree-judge@20",
        "tree-clusters@20",
    ] {
        for file in ["documents.run", "passages.run", "metrics.jsonl"] {
            let path = runs.path().join(format!("{name}.{file}"));
            assert!(path.is_file(), "{} missing", path.display());
        }
    }
    let lines = std::fs::read_to_string(runs.path().join("tree.metrics.jsonl"))?;
    assert_eq!(lines.lines().count(), 30);
    // The sweep's table carries the paired tests, and the JSON names
    // their metric and test.
    let markdown = report.markdown();
    assert!(markdown.contains("p vs bm25"));
    assert!(markdown.contains("paired randomisation test, two-sided"));
    let json = serde_json::to_value(&report.judge_budgets[0].systems["tree"])?;
    let tests = json["significance"].as_array().expect("significance");
    let against: Vec<&str> = tests.iter().filter_map(|t| t["against"].as_str()).collect();
    assert_eq!(against, ["bm25", "rerank"]);
    assert_eq!(tests[0]["metric"], "document nDCG@10");
    let p = tests[0]["p"].as_f64().expect("p");
    assert!((0.0..=1.0).contains(&p), "{p}");
    // The tree's score is a probability, BM25's is not one: ECE for the
    // first only, with a reliability table whose counts are the top 10s.
    let calibration = report.systems["tree"].calibration.as_ref().expect("ece");
    assert!((0.0..=1.0).contains(&calibration.ece));
    let counted: usize = calibration.bins.iter().map(|b| b.count).sum();
    assert_eq!(counted, calibration.scores);
    assert!(calibration.scores <= 30 * 10 && calibration.scores >= 30);
    assert!(report.systems["bm25"].calibration.is_none());
    assert!(markdown.contains("tree: score ECE "), "{markdown}");
    let script = r#"
import sys, ir_measures
from ir_measures import nDCG
d = sys.argv[1]
for name in sys.argv[2:]:
    for level in ("documents", "passages"):
        qrels = list(ir_measures.read_trec_qrels(f"{d}/qrels.{level}.txt"))
        run = list(ir_measures.read_trec_run(f"{d}/{name}.{level}.run"))
        print(name, level, ir_measures.calc_aggregate([nDCG@10], qrels, run)[nDCG@10])
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(runs.path())
        .args(["bm25", "tree"])
        .output()?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("No module named 'ir_measures'") && !support::in_ci() {
            eprintln!("SKIPPED: ir_measures is not installed (pip install ir-measures==0.4.3)");
            return Ok(());
        }
        panic!("ir_measures failed: {err}");
    }
    let text = String::from_utf8(out.stdout)?;
    let json = serde_json::to_value(&report)?;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let theirs: f64 = f[2].parse()?;
        let level = if f[1] == "documents" {
            "document"
        } else {
            "passage"
        };
        // ir_measures averages over the queries with gold in the qrels:
        // every sampled query has gold, so the two means are over the same set.
        let ours = json["systems"][f[0]][level]["ndcg_at_10"]
            .as_f64()
            .unwrap_or(-1.0);
        assert!((theirs - ours).abs() < 1e-4, "{line}: ours {ours}");
    }
    assert_eq!(text.lines().count(), 4, "{text}");
    Ok(())
}

/// Progress that keeps the names of the stages it was told of.
#[derive(Default)]
struct Stages(std::sync::Mutex<Vec<String>>);

impl treenav::tree::Progress for Stages {
    fn stage(&self, name: &str, _total: u64) {
        self.0.lock().expect("stages").push(name.to_string());
    }
}

/// #44 row 3: a bench over a tree that holds its passage vectors embeds
/// no passage again (`dense` reads the tree's rows; before, every passage
/// was embedded first, 1,327 s of a 38-minute SciFact run), and its first
/// stage is a query stage, announced before any query runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_with_its_vectors_spares_the_bench_embedding_the_corpus() -> anyhow::Result<()> {
    use treenav::tree::{Embedder, EmbedderOptions};
    let (_dir, d) = sample_dataset()?;
    let tree = support::tree_of(d.corpus.clone(), None).await;
    assert!(tree.passage_vectors().is_some(), "the build keeps them");
    let embedder = Embedder::new(&EmbedderOptions::default(), tree.meta().seed)?;
    let setup = BenchSetup {
        embedder: Some(embedder),
        ..sample_setup(Some(tree), vec![SystemKind::Dense, SystemKind::Hybrid])?
    };
    let stages = Stages::default();
    let report = bench::run(&d, &setup, &stages).await?;
    let seen = stages.0.lock().expect("stages").clone();
    assert!(!seen.iter().any(|s| s == "embed"), "{seen:?}");
    assert_eq!(seen.first().map(String::as_str), Some("dense"), "{seen:?}");
    let dense = &report.systems["dense"];
    assert!(dense.passage.hit_at_1 > 0.0, "{:?}", dense.passage);
    Ok(())
}
