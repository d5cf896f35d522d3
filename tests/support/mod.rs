//! Helpers shared by the integration tests: real servers on 127.0.0.1.
#![allow(dead_code)]

pub mod scripted;

pub use scripted::Load;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
}

impl Server {
    /// How the process ended, when it already has: a server that died while
    /// starting (a SIGILL, a bad flag) is reported at once, not as a timeout.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// Whether this run is CI, where every peer must be present.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Starts `program args…` (with `{port}` replaced) and waits until the port
/// accepts connections. `None` (test skipped, with a message) when the program
/// is not installed outside CI; a panic in CI, where it must be installed.
pub fn start(program: &str, args: &[&str], install_hint: &str) -> Option<Server> {
    let port = free_port();
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{port}", &port.to_string()))
        .collect();
    let child = match Command::new(program)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            if in_ci() {
                panic!("{program} is required in CI but cannot start ({e}); {install_hint}");
            }
            eprintln!("SKIPPED: {program} is not installed ({e}); {install_hint}");
            return None;
        }
    };
    let mut server = Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(server);
        }
        if let Some(status) = server.exited() {
            panic!("{program} exited ({status}) before it listened; {install_hint}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{program} did not listen on port {port} within 60 s");
}

/// The shared benchmark data folder, when present (it is absent on a user's fresh clone).
pub fn shared_data(rel: &str) -> Option<std::path::PathBuf> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} is absent (the shared benchmark data is not on this machine)",
            p.display()
        );
        None
    }
}

/// The one scripted judge server of our own (see [`scripted`]), for what
/// no real server can be made to do. Returns its base URL and load counters.
pub async fn scripted_systemone(delay: Duration) -> (String, std::sync::Arc<Load>) {
    let s = scripted::start(delay).await;
    (s.base, s.load)
}

/// A bench report without timing and cache counts (two queries in flight may
/// both miss one cache entry): what must not change with concurrency.
pub fn bench_figures(report: &treenav::eval::bench::Report) -> serde_json::Value {
    let mut json = serde_json::to_value(report).expect("report as JSON");
    let strip = |s: &mut serde_json::Value| {
        if let Some(m) = s.as_object_mut() {
            for key in [
                "seconds_per_query",
                "latency_p50_ms",
                "latency_p95_ms",
                "queries_per_second",
                "judge_calls",
                "cache_hits",
                "input_tokens",
                "cost_usd",
                "time_by_step",
            ] {
                m.remove(key);
            }
        }
    };
    for (_, s) in json["systems"].as_object_mut().into_iter().flatten() {
        strip(s);
    }
    for b in json["judge_budgets"].as_array_mut().into_iter().flatten() {
        for (_, s) in b["systems"].as_object_mut().into_iter().flatten() {
            strip(s);
        }
    }
    json
}

/// A tree of `corpus` as `treenav build` makes it by default (TF-IDF
/// embedder, extractive summaries, the default seed), with at most
/// `branching` children per node when given.
pub async fn tree_of(
    corpus: treenav::corpus::Corpus,
    branching: Option<usize>,
) -> std::sync::Arc<treenav::tree::Tree> {
    tree_with(corpus, branching, &Default::default()).await
}

/// [`tree_of`] embedded by `embedder`.
pub async fn tree_with(
    corpus: treenav::corpus::Corpus,
    branching: Option<usize>,
    embedder: &treenav::tree::EmbedderOptions,
) -> std::sync::Arc<treenav::tree::Tree> {
    use treenav::build::{build_extractive, TreeParams};
    let mut params = TreeParams::default();
    if let Some(b) = branching {
        params = params.branching(b);
    }
    let params = params.check().expect("params");
    let tree = build_extractive(corpus, "sample", &params, embedder)
        .await
        .expect("tree");
    std::sync::Arc::new(tree)
}

/// Whether bge-small's model files are in the cache (scripts/fetch-models.sh);
/// when not, says that the test is skipped (in CI they must be there).
pub fn bge_small_here() -> bool {
    let dir = treenav::tree::default_bge_dir();
    if dir.join("model.onnx").is_file() {
        return true;
    }
    let msg = format!("{} absent: run scripts/fetch-models.sh", dir.display());
    assert!(!in_ci(), "{msg}");
    eprintln!("SKIPPED: {msg}");
    false
}

/// The bundled sample corpus (48 SQuAD articles).
pub fn sample_corpus() -> treenav::corpus::Corpus {
    use treenav::corpus::{load_str, Format, LoadOptions};
    load_str(
        treenav::SAMPLE_CORPUS,
        "xquad-sample.json",
        Format::Squad,
        &LoadOptions::default(),
    )
    .expect("the bundled sample loads")
}

/// The bundled sample's tree with at most 8 children per node, so it has
/// more than one cluster level: the tree the navigator tests walk.
pub async fn sample_tree() -> std::sync::Arc<treenav::tree::Tree> {
    tree_of(sample_corpus(), Some(8)).await
}

/// Whether the cross-encoder's model files and ONNX Runtime are in the
/// cache (scripts/fetch-models.sh); when not, says that the test is skipped
/// (in CI they must be there).
pub fn cross_encoder_here() -> bool {
    let dir = treenav::judge::default_model_dir();
    let lib = treenav::judge::default_ort_library();
    if dir.join("model.onnx").is_file() && lib.is_file() {
        return true;
    }
    let msg = format!(
        "model files absent ({}, {}): run scripts/fetch-models.sh",
        dir.display(),
        lib.display()
    );
    assert!(!in_ci(), "{msg}");
    eprintln!("SKIPPED: {msg}");
    false
}
