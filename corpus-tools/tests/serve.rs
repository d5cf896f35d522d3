//! `treenav serve` as a process: the address it prints, startup errors,
//! SIGTERM with requests in flight (all complete) and SIGHUP reloads. The
//! slow judge is the scripted server shared with the root tests.

#[path = "../../tests/support/scripted.rs"]
#[allow(dead_code)]
mod scripted;

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// A `treenav serve` process, killed if still running when dropped.
struct Serving {
    child: Child,
    base: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serving {
    fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill -{name}");
    }
}

fn build_sample(path: &std::path::Path, branching: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(["build", "--branching", branching, "-o"])
        .arg(path)
        .output()
        .expect("run treenav build");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts `treenav serve --addr 127.0.0.1:0 args…` and reads the address
/// from its first line of output.
fn serve(args: &[&str]) -> Serving {
    serve_logging(args, Stdio::null())
}

/// [`serve`] with its log (stderr) going to `log`.
fn serve_logging(args: &[&str], log: Stdio) -> Serving {
    let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .expect("spawn treenav serve");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("read");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    Serving { child, base }
}

fn question() -> Value {
    json!({"tree": "sample", "query": "Where did Tesla work after leaving Edison's company?"})
}

#[test]
fn startup_errors_are_clear() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.tree");
    // A port in use is said first, with the address, before any tree loads.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken = taken.local_addr().expect("addr").to_string();
    for (args, says) in [
        (
            vec![
                "--tree".into(),
                format!("sample={}", missing.display()),
                "--addr".into(),
                taken.clone(),
            ],
            format!("cannot listen on {taken}"),
        ),
        // A host name is resolved (here the tree is what fails).
        (
            vec![
                "--tree".into(),
                format!("sample={}", missing.display()),
                "--addr".into(),
                "localhost:0".into(),
            ],
            "missing.tree".to_string(),
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_treenav"))
            .arg("serve")
            .args(&args)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(&says), "{args:?}: {stderr}");
    }
    for (args, says) in [
        (
            vec!["--tree".to_string(), "nameless".to_string()],
            "name=path",
        ),
        (
            vec!["--tree".into(), format!("sample={}", missing.display())],
            "missing.tree",
        ),
        (
            vec![
                "--tree".into(),
                "a=x".into(),
                "--auth-token-env".into(),
                "TREENAV_TEST_UNSET_VAR".into(),
            ],
            "TREENAV_TEST_UNSET_VAR",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_treenav"))
            .arg("serve")
            .args(&args)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_requests_in_flight_finish() {
    let judge = scripted::start(Duration::from_millis(300)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("sample.tree");
    build_sample(&tree, "8");
    let s = serve(&[
        "--tree",
        &format!("sample={}", tree.display()),
        "--judge",
        "systemone",
        "--endpoint",
        &judge.base,
        "--model",
        "scripted",
        // Every request reaches the judge, however sure the exploration.
        "--always-judge",
    ]);
    let client = reqwest::Client::new();
    let requests: Vec<_> = (0..8)
        .map(|_| {
            let r = client
                .post(format!("{}/v1/retrieve", s.base))
                .json(&question())
                .send();
            tokio::spawn(async move {
                let r = r.await.map_err(|e| e.to_string())?;
                Ok::<_, String>(r.status().as_u16())
            })
        })
        .collect();
    let waiting = Instant::now();
    while judge.load.in_flight.load(Ordering::SeqCst) < 8 {
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "requests never reached the judge"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.signal("TERM");
    for r in requests {
        assert_eq!(
            r.await.expect("join"),
            Ok(200),
            "every request in flight completes"
        );
    }
    let mut s = s;
    let status = s.child.wait().expect("wait");
    assert!(status.success(), "a clean exit after SIGTERM: {status}");
}

/// `--log-queries` logs a query escaped: a newline cannot forge an access
/// line and an escape code never reaches the terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logged_queries_cannot_forge_log_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("sample.tree");
    build_sample(&tree, "8");
    let log_path = dir.path().join("serve.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let s = serve_logging(
        &[
            "--tree",
            &format!("sample={}", tree.display()),
            "--log-queries",
        ],
        Stdio::from(log),
    );
    let forged =
        "Tesla\nINFO treenav_serve::access: method=\"POST\" route=\"/forged\" status=200\u{1b}[31m";
    let r = reqwest::Client::new()
        .post(format!("{}/v1/retrieve", s.base))
        .json(&json!({"tree": "sample", "query": forged}))
        .send()
        .await
        .expect("send");
    assert_eq!(r.status().as_u16(), 200);
    s.signal("TERM");
    let mut s = s;
    let _ = s.child.wait();
    let text = std::fs::read_to_string(&log_path).expect("log");
    assert!(
        text.contains("Tesla\\n"),
        "the query is logged, escaped: {text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "an escape code reached the log: {text:?}"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("INFO treenav_serve::access: method=\"POST\" route=\"/forged\"")),
        "a forged line: {text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_trees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("sample.tree");
    build_sample(&tree, "8");
    let s = serve(&["--tree", &format!("sample={}", tree.display())]);
    let clusters = || async {
        let v: Value = reqwest::get(format!("{}/v1/trees", s.base))
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        (
            v["trees"][0]["clusters"].clone(),
            v["trees"][0]["loaded_at"].clone(),
        )
    };
    let (before, _) = clusters().await;
    build_sample(&tree, "4");
    s.signal("HUP");
    let waiting = Instant::now();
    loop {
        let (now, _) = clusters().await;
        if now != before {
            break;
        }
        assert!(
            waiting.elapsed() < Duration::from_secs(20),
            "SIGHUP did not reload"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(retrieve_status(&s).await, 200, "serves after the reload");
}

/// The status of the sample question, asked of `s`.
async fn retrieve_status(s: &Serving) -> u16 {
    let r = reqwest::Client::new()
        .post(format!("{}/v1/retrieve", s.base))
        .json(&question())
        .send()
        .await
        .expect("send");
    r.status().as_u16()
}

/// Issue 27 row 4: a FIFO put in place of a side file hangs neither a
/// reload (SIGHUP, twice) nor the shutdown: the reload is refused, the
/// loaded copy keeps serving and SIGTERM stops the process within its grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fifo_side_file_hangs_neither_reload_nor_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("sample.tree");
    build_sample(&tree, "8");
    let mut s = serve(&[
        "--tree",
        &format!("sample={}", tree.display()),
        "--grace",
        "3",
    ]);
    let texts = dir.path().join("sample.tree.texts");
    std::fs::remove_file(&texts).expect("rm");
    let made = Command::new("mkfifo").arg(&texts).status().expect("mkfifo");
    assert!(made.success());
    for _ in 0..2 {
        s.signal("HUP");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let reload = reqwest::Client::new()
        .post(format!("{}/v1/admin/reload", s.base))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("a reload answers (not hung behind the FIFO)");
    assert_eq!(reload.status(), 422);
    let outcome: Value = reload.json().await.expect("json");
    assert!(
        outcome["trees"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("FIFO")),
        "{outcome}"
    );
    assert_eq!(
        retrieve_status(&s).await,
        200,
        "the loaded copy keeps serving"
    );
    s.signal("TERM");
    let waiting = Instant::now();
    while s.child.try_wait().expect("wait").is_none() {
        assert!(
            waiting.elapsed() < Duration::from_secs(10),
            "SIGTERM did not stop the process"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The service runs with jemalloc returning freed pages after a second:
/// it restarts itself with `_RJEM_MALLOC_CONF` set (same process id, so
/// signals and the address line still belong to the child we started),
/// and keeps a value the user gave.
#[cfg(target_os = "linux")]
#[test]
fn the_service_returns_freed_memory_soon_unless_told_otherwise() {
    const CONF: &str = "_RJEM_MALLOC_CONF";
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("sample.tree");
    build_sample(&tree, "8");
    let spec = format!("sample={}", tree.display());
    let option_of = |given: Option<&str>| -> Option<String> {
        let mut command = Command::new(env!("CARGO_BIN_EXE_treenav"));
        command
            .args(["serve", "--addr", "127.0.0.1:0", "--tree", &spec])
            .env_remove(CONF)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(value) = given {
            command.env(CONF, value);
        }
        let mut child = command.spawn().expect("spawn treenav serve");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read");
        assert!(line.starts_with("listening on "), "{line:?}");
        let s = Serving {
            base: line.trim().trim_start_matches("listening on ").to_string(),
            child,
        };
        let environ = std::fs::read(format!("/proc/{}/environ", s.child.id())).expect("environ");
        let prefix = format!("{CONF}=");
        environ
            .split(|b| *b == 0)
            .filter_map(|v| std::str::from_utf8(v).ok())
            .find_map(|v| v.strip_prefix(prefix.as_str()).map(str::to_string))
    };
    assert_eq!(
        option_of(None).as_deref(),
        Some("dirty_decay_ms:1000,muzzy_decay_ms:0")
    );
    assert_eq!(option_of(Some("narenas:2")).as_deref(), Some("narenas:2"));
}
