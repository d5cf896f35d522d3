//! The service's metrics do not grow with its traffic when nobody scrapes
//! them. The Prometheus recorder keeps each histogram sample until a scrape
//! or an upkeep folds it into the buckets; a service run without a scraper
//! (the soak in docs/serve.md) grew by about 8 bytes a sample for ever.
//! This binary reads its own resident memory, so it is a file of its own
//! with one test.

mod support;

use std::time::Duration;
use treenav::judge::JudgeOptions;
use treenav::serve::{ServeOptions, Server, TreeSpec};

/// This process's resident memory in bytes (Linux), or None elsewhere.
fn resident() -> Option<i64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: i64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histogram_samples_are_folded_without_a_scrape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sample.tree");
    treenav::tree::file::save(&*support::sample_tree().await, &path).expect("save");
    let spec = TreeSpec {
        name: "sample".into(),
        path,
    };
    let options = ServeOptions::new(vec![spec], JudgeOptions::default());
    // Binding installs the service's recorder, the one the samples reach.
    let server = Server::bind("127.0.0.1:0".parse().expect("addr"), options)
        .await
        .expect("bind");

    const ROUNDS: usize = 8;
    const PER_ROUND: usize = 500_000;
    let Some(before) = resident() else {
        eprintln!("skipped: no /proc/self/status on this system");
        return;
    };
    for _ in 0..ROUNDS {
        let histogram = metrics::histogram!(
            "treenav_http_request_duration_seconds",
            "route" => "/v1/retrieve", "method" => "POST"
        );
        for i in 0..PER_ROUND {
            histogram.record((i % 100) as f64 / 1000.0);
        }
        // Longer than the upkeep's period.
        tokio::time::sleep(Duration::from_millis(1_500)).await;
    }
    let grown = resident().expect("VmRSS") - before;
    let kept_all = (ROUNDS * PER_ROUND * std::mem::size_of::<f64>()) as i64;
    eprintln!(
        "{} samples: {grown} bytes more resident",
        ROUNDS * PER_ROUND
    );
    assert!(
        grown < kept_all / 2,
        "{ROUNDS} × {PER_ROUND} samples left {grown} bytes more resident (the samples alone are {kept_all})"
    );
    drop(server);
}
