//! No secret leaves in any output: credentials in an endpoint URL, an API
//! key in the environment and the service's token file, against a hostile
//! server that echoes every header and the URL back in its error. Every
//! command that talks to a server runs with `RUST_LOG=debug`; its stdout,
//! stderr, JSON files and the service's HTTP bodies are searched for every
//! form of every secret.
//!
//! The echoing server is a mock (in this test, on 127.0.0.1): no real
//! judge or embeddings server quotes credentials back, which is the
//! hostile case tested.

use axum::http::{HeaderMap, Uri};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const PASSWORD: &str = "pw-hunter2-xyz";
/// base64 of `alice:pw-hunter2-xyz`, as `Authorization: Basic` carries it.
const BASIC: &str = "YWxpY2U6cHctaHVudGVyMi14eXo";
const ENV_KEY: &str = "sk-envsecret-12345";
const TOKEN: &str = "tok-servesecret-67890";
/// A key given in the endpoint's query string (#66 row 4).
const QUERY_KEY: &str = "tok3nQS-querysecret";

/// Answers every request with a 400 quoting its headers and URL.
async fn echoing_server() -> String {
    async fn echo(uri: Uri, headers: HeaderMap) -> (axum::http::StatusCode, String) {
        let quoted: Vec<String> = headers
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
            .collect();
        (
            axum::http::StatusCode::BAD_REQUEST,
            format!(
                r#"{{"error": {{"message": "refused {uri} with {}"}}}}"#,
                quoted.join("; ")
            ),
        )
    }
    let app = axum::Router::new().fallback(echo);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn assert_clean(what: &str, text: &str) {
    for secret in [PASSWORD, BASIC, ENV_KEY, TOKEN, QUERY_KEY] {
        assert!(
            !text.contains(secret),
            "{what} shows a secret ({secret}):\n{text}"
        );
    }
}

fn treenav(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(args)
        .env("RUST_LOG", "debug")
        .env("TREENAV_TEST_KEY", ENV_KEY)
        .output()
        .expect("run treenav")
}

fn check(what: &str, out: &Output) -> String {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_clean(what, &all);
    all
}

fn fixture(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_reaches_any_output() {
    let server = echoing_server().await;
    let with_password = server.replacen("http://", &format!("http://alice:{PASSWORD}@"), 1);
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir.path().join("sample.tree");
    let tree = tree.to_str().expect("utf8");
    let built = treenav(&["build", "-o", tree]);
    assert!(built.status.success(), "{}", check("build", &built));

    let with_query_key = format!("{server}/v1?api_key={QUERY_KEY}");
    let judges: [&[&str]; 5] = [
        &[
            "--judge",
            "openai-logprobs",
            "--llm-api",
            "chat",
            "--endpoint",
            &with_query_key,
        ],
        &["--judge", "systemone", "--endpoint", &with_password],
        &[
            "--judge",
            "openai-logprobs",
            "--llm-api",
            "chat",
            "--endpoint",
            &with_password,
        ],
        &["--judge", "openai-decisions", "--endpoint", &with_password],
        &[
            "--judge",
            "systemone",
            "--endpoint",
            &server,
            "--api-key-env",
            "TREENAV_TEST_KEY",
        ],
    ];
    let mut refused = 0;
    for judge in judges {
        let common = [judge, &["--model", "m", "--timeout", "2"][..]].concat();
        let query = treenav(&[&["query", tree, "Tesla"][..], common.as_slice()].concat());
        let said = check(&format!("query {judge:?}"), &query);
        refused += usize::from(said.contains("400") || said.contains("refused"));
        let doctor = treenav(&[&["doctor"][..], common.as_slice()].concat());
        check(&format!("doctor {judge:?}"), &doctor);
        let json = dir.path().join("bench.json");
        let bench = treenav(
            &[
                &[
                    "bench",
                    "--dataset",
                    &fixture("beir"),
                    "--systems",
                    "tree",
                    "--limit",
                    "2",
                ][..],
                &["--json", json.to_str().expect("utf8")][..],
                common.as_slice(),
            ]
            .concat(),
        );
        check(&format!("bench {judge:?}"), &bench);
        if let Ok(written) = std::fs::read_to_string(&json) {
            assert_clean("bench --json", &written);
        }
    }
    // The server's echo reached the messages (scrubbed), so the test saw
    // the hostile case.
    assert!(refused >= 2, "the echoing server was not reached");

    let embedded = dir.path().join("remote.tree");
    let build = treenav(&[
        "build",
        &fixture("passages.jsonl"),
        "--embedder",
        "openai",
        "--endpoint",
        &format!("{with_password}/v1"),
        "--model",
        "m",
        "-o",
        embedded.to_str().expect("utf8"),
    ]);
    let said = check("build --embedder openai", &build);
    assert!(!build.status.success() && said.contains("400"), "{said}");

    serve_and_check(tree, &with_password, dir.path()).await;
}

/// `treenav serve` with a failing judge behind a password and a token file:
/// `/readyz` (no auth), a retrieve, the log at debug.
async fn serve_and_check(tree: &str, endpoint: &str, dir: &Path) {
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("token");
    let log = dir.join("serve.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .args(["serve", "--addr", "127.0.0.1:0", "--tree"])
        .arg(format!("sample={tree}"))
        .args([
            "--judge",
            "systemone",
            "--endpoint",
            endpoint,
            "--model",
            "m",
        ])
        .arg("--auth-token-file")
        .arg(&token_file)
        .env("RUST_LOG", "debug")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_string);
    let client = reqwest::Client::new();
    let mut bodies = Vec::new();
    if let Some(base) = &base {
        for _ in 0..2 {
            let ready = client.get(format!("{base}/readyz")).send().await;
            bodies.push(ready.expect("readyz").text().await.unwrap_or_default());
        }
        let retrieve = client
            .post(format!("{base}/v1/retrieve"))
            .bearer_auth(TOKEN)
            .json(&serde_json::json!({"tree": "sample", "query": "Tesla"}))
            .send()
            .await
            .expect("retrieve");
        bodies.push(retrieve.text().await.unwrap_or_default());
    }
    let _ = child.kill();
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(base.is_some(), "serve did not start: {line}\n{logged}");
    assert_clean("serve's HTTP bodies", &bodies.join("\n"));
    assert_clean("serve's log", &logged);
    assert!(
        bodies
            .iter()
            .any(|b| b.contains("400") || b.contains("refused")),
        "the judge's failure is not shown: {bodies:?}"
    );
}
