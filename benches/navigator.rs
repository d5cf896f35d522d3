//! Navigator benchmark: `cargo bench --bench navigator`.
//!
//! 1. Engine time per query with the in-process lexical judge on the SciFact
//!    tree (p50, p95), 300 test queries.
//! 2. Against a System One test server that answers every call after 50 ms:
//!    a query's wall time against the ideal critical path (one round per
//!    level plus the rerank, × 50 ms), with several batches per level; and
//!    best-first at budgets 50, 100 and 200 (rounds plus the rerank, × 50 ms).
//! 3. 32 concurrent queries against that server: queries/s and calls in flight.
//! 4. `treenav bench`'s runner at several queries at once: SciFact with the
//!    lexical judge (1 vs 2), and XQuAD against the 50 ms server (1 vs 8),
//!    queries per second and whether every metric is identical.
//! 5. Routing on SciFact (lexical judge): the share of test queries whose gold
//!    document's ancestor survives each level, document Hit@1 and titles read,
//!    for a few settings of the levers (cards, beam, lexical entry).
//! 6. With `--features cross-encoder` and `TREENAV_BENCH_CARDS=1` (≈ 15
//!    min): routing at the cluster level with the cross-encoder by card
//!    length (titles per card) and token limit: the share of 50 SciFact
//!    queries whose gold cluster is among the 10 best cards, tokens per card
//!    and judge time per query.
//!
//! SciFact comes from `../shared/data/scifact`; sections 1 and 4 are skipped
//! when it is absent.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use treenav::corpus::{load, load_str, Format, LoadOptions};
use treenav::judge::{BackendOptions, DispatchOptions, Judge, JudgeOptions};
use treenav::navigator::{Navigator, NavigatorConfig, Strategy};
use treenav::tree::{NoProgress, NodeKind, Tree};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

struct SciFact {
    tree: Arc<Tree>,
    queries: Vec<(String, String)>,
    gold: HashMap<String, HashSet<String>>,
}

async fn scifact() -> Option<SciFact> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/scifact");
    if !dir.exists() {
        println!("SciFact: SKIPPED ({} absent)\n", dir.display());
        return None;
    }
    let corpus = load(&dir, Format::Beir, &LoadOptions::default()).expect("scifact");
    let tree = support::tree_of(corpus, None).await;
    let mut gold: HashMap<String, HashSet<String>> = HashMap::new();
    for line in std::fs::read_to_string(dir.join("qrels/test.tsv"))
        .expect("qrels")
        .lines()
        .skip(1)
    {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() >= 2 {
            gold.entry(cols[0].to_string())
                .or_default()
                .insert(cols[1].to_string());
        }
    }
    let queries = std::fs::read_to_string(dir.join("queries.jsonl"))
        .expect("queries")
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            Some((
                v["_id"].as_str()?.to_string(),
                v["text"].as_str()?.to_string(),
            ))
        })
        .filter(|(id, _)| gold.contains_key(id))
        .collect();
    Some(SciFact {
        tree,
        queries,
        gold,
    })
}

async fn engine_overhead(data: &SciFact) {
    let nav = Navigator::new(
        data.tree.clone(),
        Judge::new(&JudgeOptions::default()).expect("judge"),
        NavigatorConfig::default()
            .strategy(Strategy::Levels)
            .check()
            .expect("config"),
    )
    .expect("nav");
    let mut times = Vec::new();
    for (_, q) in &data.queries {
        let t = Instant::now();
        std::hint::black_box(nav.retrieve(q).await.expect("retrieve"));
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "## Engine time per query, lexical judge in-process, SciFact tree ({} queries)\n",
        times.len()
    );
    println!(
        "| p50 ms | p95 ms |\n|---|---|\n| {:.2} | {:.2} |\n",
        percentile(&times, 0.5),
        percentile(&times, 0.95)
    );
}

async fn critical_path() {
    let (base, flight) = support::scripted_systemone(Duration::from_millis(50)).await;
    let corpus = load_str(
        treenav::SAMPLE_CORPUS,
        "sample.json",
        Format::Squad,
        &LoadOptions::default(),
    )
    .expect("sample");
    let tree = support::tree_of(corpus, None).await;
    let judge = Judge::new(&JudgeOptions {
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: base,
            model: "m".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        dispatch: DispatchOptions {
            concurrency: 64,
            cache_capacity: 0,
            ..DispatchOptions::default()
        },
    })
    .expect("judge");
    println!("## Wall time against the critical path (test server answering after 50 ms)\n");
    println!("| batch size | batches per level | levels + rerank | ideal ms | measured ms | ratio |\n|---|---|---|---|---|---|");
    for batch in [100usize, 8, 2] {
        let config = NavigatorConfig::default()
            .strategy(Strategy::Levels)
            .batch_size(batch)
            .retention_budgets([7, 20])
            .returned_passages(10)
            .check()
            .expect("config");
        let nav = Navigator::new(tree.clone(), judge.clone(), config).expect("nav");
        nav.retrieve("warm up").await.expect("warm");
        let t = Instant::now();
        let r = nav
            .retrieve("Who won Super Bowl 50?")
            .await
            .expect("retrieve");
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let rounds = r.trace.levels.len() + usize::from(r.trace.rerank.is_some());
        let batches: Vec<String> = r
            .trace
            .levels
            .iter()
            .map(|l| l.batches.to_string())
            .collect();
        let ideal = rounds as f64 * 50.0;
        println!(
            "| {batch} | {} | {rounds} | {ideal:.0} | {ms:.0} | {:.2}× |",
            batches.join(" / "),
            ms / ideal
        );
    }
    println!("\n| best-first budget | rounds + rerank | calls | ideal ms | measured ms | ratio |\n|---|---|---|---|---|---|");
    for budget in [50usize, 100, 200] {
        let config = NavigatorConfig::default()
            .strategy(Strategy::BestFirst)
            .judge_budget(budget)
            .check()
            .expect("config");
        let nav = Navigator::new(tree.clone(), judge.clone(), config).expect("nav");
        let t = Instant::now();
        let r = nav
            .retrieve("Who won Super Bowl 50?")
            .await
            .expect("retrieve");
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let rounds = r.trace.rounds.len() + usize::from(r.trace.rerank.is_some());
        let ideal = rounds as f64 * 50.0;
        println!(
            "| {budget} | {rounds} | {} | {ideal:.0} | {ms:.0} | {:.2}× |",
            r.trace.usage.calls,
            ms / ideal
        );
    }
    let config = NavigatorConfig::default()
        .strategy(Strategy::Levels)
        .batch_size(8)
        .retention_budgets([7, 20])
        .check()
        .expect("config");
    let nav = Arc::new(Navigator::new(tree, judge, config).expect("nav"));
    flight.peak.store(0, Ordering::SeqCst);
    let calls_before = flight.requests.load(Ordering::SeqCst);
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..32 {
        let nav = nav.clone();
        tasks.spawn(async move {
            nav.retrieve(&format!("question number {i} about football"))
                .await
                .map(|_| ())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("task").expect("query");
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "\n32 concurrent queries (batch size 8, judge concurrency 64): {:.1} queries/s, {:.2} s in all, {} calls, at most {} calls in flight\n",
        32.0 / secs,
        secs,
        flight.requests.load(Ordering::SeqCst) - calls_before,
        flight.peak.load(Ordering::SeqCst)
    );
}

/// One dataset through `bench::run` (system `tree`) at each concurrency:
/// queries/s, and whether the metrics equal those at the first.
async fn at_concurrency(
    label: &str,
    data: &treenav::eval::dataset::Dataset,
    judge: JudgeOptions,
    limit: Option<usize>,
    levels: &[usize],
) {
    use treenav::eval::bench::{self, BenchSetup, SystemKind};
    let tree = support::tree_of(data.corpus.clone(), None).await;
    let navigator = NavigatorConfig::default()
        .strategy(Strategy::Levels)
        .check()
        .expect("config");
    let mut setup = BenchSetup {
        judge,
        tree: Some(tree),
        rerank_n: 100,
        limit,
        ..BenchSetup::new(vec![SystemKind::Tree], navigator)
    };
    let mut first: Option<(f64, serde_json::Value)> = None;
    for &c in levels {
        setup.concurrency = c;
        let report = bench::run(data, &setup, &NoProgress).await.expect("bench");
        let qps = report.systems["tree"].queries_per_second;
        let json = support::bench_figures(&report);
        let (base, same) = match &first {
            Some((q, j)) => (*q, *j == json),
            None => (qps, true),
        };
        println!(
            "| {label} | {c} | {qps:.1} | {:.2}× | {} |",
            qps / base,
            if same { "identical" } else { "DIFFERENT" }
        );
        first.get_or_insert((qps, json));
    }
}

async fn runner_throughput() {
    use treenav::eval::dataset::{self, DatasetOptions};
    let shared = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let opts = DatasetOptions {
        split: "test".into(),
        passage_words: treenav::corpus::chunk::DEFAULT_PASSAGE_WORDS,
        skip_bad: false,
    };
    println!("## The bench runner at several queries at once (`treenav bench --concurrency N`)\n");
    println!("| run | queries at once | queries/s | vs 1 | metrics |\n|---|---|---|---|---|");
    match dataset::load(&shared.join("scifact"), &opts) {
        Ok(data) => {
            at_concurrency(
                "SciFact, lexical judge, 300 queries",
                &data,
                JudgeOptions::default(),
                None,
                &[1, 2],
            )
            .await
        }
        Err(_) => println!("| SciFact | SKIPPED (absent) | | | |"),
    }
    let (base, _flight) = support::scripted_systemone(Duration::from_millis(50)).await;
    let Ok(data) = dataset::load(&shared.join("xquad-en/xquad.en.json"), &opts) else {
        println!("| XQuAD | SKIPPED (absent) | | | |\n");
        return;
    };
    for calls in [8usize, 64] {
        let judge = JudgeOptions {
            backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
                endpoint: base.clone(),
                model: "m".into(),
                api_key_env: None,
                path: "/v1/systemone".into(),
            }),
            dispatch: DispatchOptions {
                concurrency: calls,
                cache_capacity: 0,
                ..DispatchOptions::default()
            },
        };
        let label = format!("XQuAD, 50 ms server, 48 queries, {calls} judge calls in flight");
        at_concurrency(&label, &data, judge, Some(48), &[1, 8]).await;
    }
    println!();
}

async fn routing(data: &SciFact) {
    let judge = Judge::new(&JudgeOptions::default()).expect("judge");
    // Document node → source id, and node → its cluster ancestors.
    let doc_id: HashMap<treenav::tree::NodeId, String> = data
        .tree
        .documents()
        .filter_map(|n| match &data.tree.get(n)?.kind {
            NodeKind::Document { id, .. } => Some((n, id.clone())),
            _ => None,
        })
        .collect();
    // Each lever alone from the paper's literal setting, then the defaults.
    let paper = || {
        NavigatorConfig::default()
            .strategy(Strategy::Levels)
            .card_titles(0)
            .calibration(false)
            .lexical_entry(0)
    };
    let settings: Vec<(&str, NavigatorConfig)> = vec![
        ("paper: summary only, k=10", paper()),
        ("+ cards of 8 titles", paper().card_titles(8)),
        ("+ cards of 30 titles", paper().card_titles(30)),
        ("+ cards of all titles", paper().card_titles(200)),
        ("+ beam k=20/20", paper().retention_budgets([20, 20])),
        ("+ document view of 3 sentences", paper().lead_sentences(3)),
        ("+ calibration", paper().calibration(true)),
        ("+ lexical entry 20", paper().lexical_entry(20)),
        (
            "defaults (cards 30, calibration, lexical entry 20, k=10)",
            NavigatorConfig::default().strategy(Strategy::Levels),
        ),
        (
            "defaults + beam k=20/20",
            NavigatorConfig::default()
                .strategy(Strategy::Levels)
                .retention_budgets([20, 20]),
        ),
        (
            "defaults + lexical entry 50",
            NavigatorConfig::default()
                .strategy(Strategy::Levels)
                .lexical_entry(50),
        ),
    ];
    println!(
        "## Routing on SciFact test ({} queries, lexical judge)\n",
        data.queries.len()
    );
    println!("| setting | gold cluster kept | gold document kept | document Hit@1 | titles read |\n|---|---|---|---|---|");
    for (name, config) in settings {
        let nav = Navigator::new(
            data.tree.clone(),
            judge.clone(),
            config.check().expect("config"),
        )
        .expect("nav");
        let (mut cluster_ok, mut doc_ok, mut hit1, mut titles) = (0usize, 0usize, 0usize, 0.0);
        for (qid, q) in &data.queries {
            let gold = &data.gold[qid];
            let r = nav.retrieve(q).await.expect("retrieve");
            titles += r.trace.titles_read;
            let gold_nodes: Vec<treenav::tree::NodeId> = doc_id
                .iter()
                .filter(|(_, id)| gold.contains(*id))
                .map(|(n, _)| *n)
                .collect();
            let ancestors: HashSet<treenav::tree::NodeId> =
                gold_nodes.iter().flat_map(|n| data.tree.path(*n)).collect();
            let kept_at = |kind: &str| {
                r.trace
                    .levels
                    .iter()
                    .filter(|l| l.kind.name() == kind)
                    .all(|l| {
                        l.candidates
                            .iter()
                            .any(|c| c.kept && ancestors.contains(&c.node))
                    })
            };
            cluster_ok += usize::from(kept_at("cluster"));
            doc_ok += usize::from(kept_at("document"));
            hit1 += usize::from(
                r.passages
                    .first()
                    .is_some_and(|p| gold.contains(&p.document_id)),
            );
        }
        let n = data.queries.len() as f64;
        println!(
            "| {name} | {:.3} | {:.3} | {:.3} | {:.1}% |",
            cluster_ok as f64 / n,
            doc_ok as f64 / n,
            hit1 as f64 / n,
            titles / n * 100.0
        );
    }
    println!();
}

#[cfg(feature = "cross-encoder")]
async fn card_length(data: &SciFact) {
    use treenav::judge::Candidate;
    if std::env::var_os("TREENAV_BENCH_CARDS").is_none() {
        println!(
            "Card length with the cross-encoder: SKIPPED (set TREENAV_BENCH_CARDS=1, ≈ 15 min)\n"
        );
        return;
    }
    if !treenav::judge::default_model_dir()
        .join("model.onnx")
        .is_file()
    {
        println!("Card length with the cross-encoder: SKIPPED (run scripts/fetch-models.sh)\n");
        return;
    }
    let root = data.tree.root();
    let top: Vec<treenav::tree::NodeId> = data.tree.children(root).to_vec();
    // Gold document id → its top-level cluster.
    let top_of: HashMap<String, treenav::tree::NodeId> = data
        .tree
        .documents()
        .filter_map(|n| match &data.tree.get(n)?.kind {
            NodeKind::Document { id, .. } => Some((id.clone(), *data.tree.path(n).get(1)?)),
            _ => None,
        })
        .collect();
    let queries = &data.queries[..data.queries.len().min(50)];
    println!(
        "## Cluster routing with the cross-encoder by card length ({} SciFact queries, {} top-level cards)\n",
        queries.len(),
        top.len()
    );
    println!("| token limit | titles per card | gold cluster in the best 10 | tokens per card | judge ms per query |\n|---|---|---|---|---|");
    for max_tokens in [128usize, 256] {
        let ce = Judge::new(&JudgeOptions {
            backend: BackendOptions::CrossEncoder(treenav::judge::CrossEncoderOptions {
                model_dir: None,
                ort_library: None,
                threads: 2,
                batch_size: 16,
                max_tokens,
            }),
            dispatch: DispatchOptions {
                cache_capacity: 0,
                ..DispatchOptions::default()
            },
        })
        .expect("cross-encoder");
        for titles in [0usize, 8, 30] {
            let config = NavigatorConfig::default()
                .strategy(Strategy::Levels)
                .card_titles(titles)
                .check()
                .expect("config");
            let nav = Navigator::new(
                data.tree.clone(),
                Judge::new(&JudgeOptions::default()).expect("judge"),
                config,
            )
            .expect("nav");
            let cards: Vec<Candidate> = top
                .iter()
                .map(|id| Candidate::new(format!("cluster-{}", id.0), nav.label(*id)))
                .collect();
            let (mut kept, mut tokens, mut ms) = (0usize, 0u64, 0.0);
            for (qid, q) in queries {
                let gold: HashSet<treenav::tree::NodeId> = data.gold[qid]
                    .iter()
                    .filter_map(|d| top_of.get(d).copied())
                    .collect();
                let j = ce.judge(q, &cards).await.expect("judge");
                tokens += j.usage.input_tokens;
                ms += j.usage.latency_ms;
                let mut order: Vec<usize> = (0..cards.len()).collect();
                order.sort_by(|a, b| {
                    j.probabilities[*b]
                        .total_cmp(&j.probabilities[*a])
                        .then(a.cmp(b))
                });
                kept += usize::from(order.iter().take(10).any(|i| gold.contains(&top[*i])));
            }
            let n = queries.len() as f64;
            println!(
                "| {max_tokens} | {titles} | {:.3} | {:.0} | {:.0} |",
                kept as f64 / n,
                tokens as f64 / n / cards.len() as f64,
                ms / n
            );
        }
    }
    println!();
}

#[cfg(not(feature = "cross-encoder"))]
async fn card_length(_: &SciFact) {
    println!("Card length with the cross-encoder: SKIPPED (build with --features cross-encoder)\n");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let data = scifact().await;
        if std::env::var_os("TREENAV_BENCH_ROUTING_ONLY").is_none() {
            if let Some(d) = &data {
                engine_overhead(d).await;
            }
            if std::env::var_os("TREENAV_BENCH_ENGINE_ONLY").is_none() {
                critical_path().await;
                runner_throughput().await;
            }
        }
        if let (Some(d), None) = (&data, std::env::var_os("TREENAV_BENCH_ENGINE_ONLY")) {
            routing(d).await;
            card_length(d).await;
        }
    });
}
