//! The one HTTP client setup of treenav.
//!
//! Every network call of the project (embedding servers, chat endpoints,
//! decision models) goes through [`HttpClient`]: one reqwest client with a
//! per-call timeout, a retry policy that is plain data ([`RetryPolicy`],
//! deciding [`Retry::After`] or [`Retry::GiveUp`]), error classification into
//! [`ErrorKind`]s that say whether a retry may help, `retry-after-ms` /
//! `Retry-After` handling, and API keys ([`ApiKey`]) that come from the
//! environment and never appear in logs or errors.
//!
//! ```no_run
//! # async fn demo() -> Result<(), treenav_http::HttpError> {
//! use treenav_http::{ApiKey, ClientConfig, HttpClient};
//! let client = HttpClient::new(ClientConfig::default())?;
//! let key = ApiKey::from_env("OPENAI_API_KEY")?;
//! let reply: serde_json::Value = client
//!     .post_json("http://127.0.0.1:8080/v1/embeddings", key.as_ref(), &serde_json::json!({"input": ["hi"]}))
//!     .await?
//!     .body;
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

use serde::de::DeserializeOwned;
use serde::Serialize;
use std::time::{Duration, SystemTime};

/// Result of the http crate.
pub type Result<T, E = HttpError> = std::result::Result<T, E>;

/// A credential sent with every call: an API key (`Authorization:
/// Bearer`, read from the environment) or a user and password taken out of
/// an endpoint URL (`Authorization: Basic`). Its `Debug` never shows it,
/// and [`ApiKey::scrub`] removes every form of it from text a server sent.
#[derive(Clone)]
pub struct ApiKey(Secret);

#[derive(Clone)]
enum Secret {
    Bearer(String),
    Basic { user: String, password: String },
}

impl ApiKey {
    /// Reads a key from environment variable `var`; `Ok(None)` when unset or empty.
    pub fn from_env(var: &str) -> Result<Option<ApiKey>> {
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(Some(ApiKey::new(v.trim()))),
            Ok(_) | Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(HttpError::config(format!(
                "environment variable {var} is not valid UTF-8"
            ))),
        }
    }

    /// Reads a key that must be present, with an error that says what to set.
    pub fn require_env(var: &str) -> Result<ApiKey> {
        ApiKey::from_env(var)?.ok_or_else(|| {
            HttpError::config(format!(
                "no API key: set the environment variable {var} (or point the client at another variable)"
            ))
        })
    }

    /// A key given directly (e.g. by a library user who manages secrets).
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(Secret::Bearer(key.into()))
    }

    /// HTTP Basic credentials.
    pub fn basic(user: impl Into<String>, password: impl Into<String>) -> ApiKey {
        ApiKey(Secret::Basic {
            user: user.into(),
            password: password.into(),
        })
    }

    /// The request with this credential in its `Authorization` header.
    fn apply(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.0 {
            Secret::Bearer(key) => request.bearer_auth(key),
            Secret::Basic { user, password } => request.basic_auth(user, Some(password)),
        }
    }

    /// `text` (a server's reply, a message quoting one) with every form of
    /// this credential replaced by `***`: the key; the password, `user:password`
    /// and their base64 (a server echoing the `Authorization` header).
    pub fn scrub(&self, text: &str) -> String {
        match &self.0 {
            Secret::Bearer(key) => redact_secret(text, key),
            Secret::Basic { user, password } => {
                use base64::Engine as _;
                let pair = format!("{user}:{password}");
                let encoded = base64::engine::general_purpose::STANDARD.encode(&pair);
                let text = redact_secret(text, &encoded);
                let text = redact_secret(&text, &pair);
                redact_secret(&text, password)
            }
        }
    }
}

/// Takes the `user:password@` out of an endpoint URL: the URL without it,
/// and the credentials to send as `Authorization: Basic` (so no URL this
/// client prints, logs or writes ever holds them). A URL that does not
/// parse is returned as given (the caller's check names it).
pub fn split_credentials(url: &str) -> (String, Option<ApiKey>) {
    let Ok(mut parsed) = reqwest::Url::parse(url) else {
        return (url.to_string(), None);
    };
    if parsed.username().is_empty() && parsed.password().is_none() {
        return (url.to_string(), None);
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let key = ApiKey::basic(
        decode(parsed.username()),
        decode(parsed.password().unwrap_or("")),
    );
    // Both only fail for URLs that cannot have credentials at all.
    let _ = parsed.set_username("");
    let _ = parsed.set_password(None);
    let mut clean = parsed.to_string();
    // `Url` adds a `/` to a bare host; keep the user's form.
    if !url.ends_with('/') && clean.ends_with('/') && parsed.path() == "/" {
        clean.pop();
    }
    (clean, Some(key))
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// What went wrong with a call to a model, and so whether retrying may
/// help: the one classification of the workspace (the judges use it as it
/// is; `Refused` and `Deadline` are theirs, never made from a status).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// 401/403: the key is missing, wrong or lacks rights.
    Authentication,
    /// 400/404/422 and other 4xx: the request itself is wrong.
    InvalidRequest,
    /// 413: the request is over the server's size limit.
    TooLarge,
    /// 429: too many requests.
    RateLimited,
    /// 503/529: the server is overloaded.
    Overloaded,
    /// Other 5xx.
    Server,
    /// 408 or no reply within the call's timeout.
    Timeout,
    /// The connection failed (refused, reset, DNS).
    Network,
    /// The reply is not what the protocol promises.
    MalformedResponse,
    /// The client is misconfigured (bad URL, missing key).
    Config,
    /// The model refused to answer a question.
    Refused,
    /// The operation's overall deadline passed.
    Deadline,
}

impl ErrorKind {
    /// Whether the same request may succeed if sent again later.
    pub fn retryable(self) -> bool {
        match self {
            ErrorKind::RateLimited
            | ErrorKind::Overloaded
            | ErrorKind::Server
            | ErrorKind::Timeout
            | ErrorKind::Network => true,
            ErrorKind::Authentication
            | ErrorKind::InvalidRequest
            | ErrorKind::TooLarge
            | ErrorKind::MalformedResponse
            | ErrorKind::Config
            | ErrorKind::Refused
            | ErrorKind::Deadline => false,
        }
    }

    /// Classifies an HTTP status that is not a success.
    pub fn from_status(status: u16) -> ErrorKind {
        match status {
            401 | 403 => ErrorKind::Authentication,
            408 => ErrorKind::Timeout,
            413 => ErrorKind::TooLarge,
            429 => ErrorKind::RateLimited,
            503 | 529 => ErrorKind::Overloaded,
            // Not implemented: the server will not do it however often
            // asked (llama.cpp's /v1/systemone for a model that is not a
            // decision model).
            501 | 505 => ErrorKind::InvalidRequest,
            500..=599 => ErrorKind::Server,
            _ => ErrorKind::InvalidRequest,
        }
    }
}

/// A failed HTTP call, after any retries.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}{}: {message}{}", kind_text(*kind), status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(), url_text(url, *attempts))]
pub struct HttpError {
    /// The class of failure.
    pub kind: ErrorKind,
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The URL called (never holds a key).
    pub url: String,
    /// What happened, with a snippet of the server's reply where useful.
    pub message: String,
    /// The wait the server asked for, if any.
    pub retry_after: Option<Duration>,
    /// How many attempts were made.
    pub attempts: u32,
}

fn kind_text(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Authentication => "authentication failed",
        ErrorKind::InvalidRequest => "invalid request",
        ErrorKind::TooLarge => "request too large",
        ErrorKind::RateLimited => "rate limited",
        ErrorKind::Overloaded => "server overloaded",
        ErrorKind::Server => "server error",
        ErrorKind::Timeout => "timed out",
        ErrorKind::Network => "network error",
        ErrorKind::MalformedResponse => "malformed response",
        ErrorKind::Config => "configuration error",
        ErrorKind::Refused => "refused",
        ErrorKind::Deadline => "deadline passed",
    }
}

/// `text` (a URL, or a message quoting URLs) with any `user:password@` in
/// a URL replaced by `***@` and every query value by `***`
/// (`?api_key=***`): a key may ride in either.
pub fn redact_url(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| matches!(c, ')' | '"' | '\'' | '>' | ']') || c.is_whitespace())
            .unwrap_or(tail.len());
        let (url, after) = tail.split_at(end);
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let (authority, path) = url.split_at(authority_end);
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("***@");
                out.push_str(&authority[at + 1..]);
            }
            None => out.push_str(authority),
        }
        out.push_str(&redact_query(path));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A URL's path and query with every query value replaced by `***` (a
/// bare `?token` too); the path and the fragment kept.
fn redact_query(path: &str) -> String {
    let Some(q) = path.find('?') else {
        return path.to_string();
    };
    let (before, query) = path.split_at(q + 1);
    let (query, fragment) = query.split_at(query.find('#').unwrap_or(query.len()));
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) if !value.is_empty() => format!("{key}=***"),
            None if !pair.is_empty() => "***".to_string(),
            _ => pair.to_string(),
        })
        .collect();
    format!("{before}{}{fragment}", pairs.join("&"))
}

/// `text` with the credential after every `Bearer ` or `Basic ` (a server
/// quoting an `Authorization` header) replaced by `***`.
pub fn redact_auth(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = ["Bearer ", "Basic ", "bearer ", "basic "]
            .iter()
            .filter_map(|w| rest.find(w).map(|i| (i, w.len())))
            .min();
        let Some((i, len)) = next else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i + len]);
        let tail = &rest[i + len..];
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '}' | ']'))
            .unwrap_or(tail.len());
        if end > 0 {
            out.push_str("***");
        }
        rest = &tail[end..];
    }
}

/// `text` with every query value of `url` replaced by `***`, as given and
/// decoded: a server quoting the path it was asked echoes them without
/// the `://` that [`redact_url`] looks for.
fn redact_query_values(text: &str, url: &str) -> String {
    let Some((_, query)) = url.split_once('?') else {
        return text.to_string();
    };
    let query = query.split('#').next().unwrap_or(query);
    let mut out = text.to_string();
    for pair in query.split('&') {
        let value = pair.split_once('=').map_or(pair, |(_, v)| v);
        let decoded = percent_encoding::percent_decode_str(value)
            .decode_utf8_lossy()
            .into_owned();
        out = redact_secret(&redact_secret(&out, value), &decoded);
    }
    out
}

/// `text` with every occurrence of `secret` (an API key a server may echo
/// back in an error body) replaced by `***`.
pub fn redact_secret(text: &str, secret: &str) -> String {
    if secret.len() < 4 {
        return text.to_string();
    }
    text.replace(secret, "***")
}

fn url_text(url: &str, attempts: u32) -> String {
    let mut s = String::new();
    if !url.is_empty() {
        s.push_str(&format!(" [{url}"));
        if attempts > 1 {
            s.push_str(&format!(", after {attempts} attempts"));
        }
        s.push(']');
    }
    s
}

impl HttpError {
    /// Whether the same request may succeed if sent again later.
    pub fn retryable(&self) -> bool {
        self.kind.retryable()
    }

    /// A configuration error (no network call was made).
    pub fn config(message: impl Into<String>) -> HttpError {
        HttpError {
            kind: ErrorKind::Config,
            status: None,
            url: String::new(),
            message: message.into(),
            retry_after: None,
            attempts: 0,
        }
    }

    /// A reply that does not follow the protocol (for protocol clients built on this crate).
    pub fn malformed(url: &str, message: impl Into<String>) -> HttpError {
        HttpError {
            kind: ErrorKind::MalformedResponse,
            status: None,
            url: url.to_string(),
            message: message.into(),
            retry_after: None,
            attempts: 1,
        }
    }
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Send again after this wait.
    After(Duration),
    /// Stop and report the error.
    GiveUp,
}

/// Retry policy: exponential backoff on retryable errors, honouring the server's wait.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt. By default, 3.
    pub max_retries: u32,
    /// Wait before the first retry; doubled each time. By default, 500 ms.
    pub base_delay: Duration,
    /// Cap on the backoff wait. By default, 5 s.
    pub max_delay: Duration,
    /// Longest server-requested wait (`Retry-After`) to honour; a longer one
    /// gives up at once. By default, 60 s.
    pub max_server_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(5),
            max_server_wait: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// No retries at all.
    pub fn none() -> RetryPolicy {
        RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        }
    }

    /// Decides what follows failed attempt number `attempt` (1-based).
    pub fn decide(&self, attempt: u32, error: &HttpError) -> Retry {
        if !error.retryable() || attempt > self.max_retries {
            return Retry::GiveUp;
        }
        if let Some(wait) = error.retry_after {
            return if wait <= self.max_server_wait {
                Retry::After(wait)
            } else {
                Retry::GiveUp
            };
        }
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        Retry::After(self.base_delay.saturating_mul(factor).min(self.max_delay))
    }
}

/// Parses the server's requested wait: `retry-after-ms`, then `Retry-After`
/// (seconds or an HTTP date).
pub fn parse_retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    // A wait too long for `Duration` (1e300 s) is as good as forever: the
    // retry policy gives up on any wait above its cap.
    let wait = |secs: f64| {
        (secs >= 0.0 && !secs.is_nan())
            .then(|| Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX))
    };
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if let Some(d) = wait(ms / 1000.0) {
            return Some(d);
        }
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return wait(secs);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// A remote service every caller (judge backends, embedders, summariser)
/// sets up the same way: a checked http(s) URL, a model name, the key from
/// the environment when a variable is named, and a client.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The full URL calls go to (never holds a key).
    pub url: String,
    /// The model asked for.
    pub model: String,
    /// The API key, when one was named.
    pub key: Option<ApiKey>,
    /// The client, with its timeouts, retries and body cap.
    pub client: HttpClient,
}

impl Endpoint {
    /// Checks and sets up an endpoint. `base` is what the user gave (a base
    /// URL with or without `/v1`, or the full URL ending in `path`); `flag`
    /// names where it came from in errors (`--endpoint`); `path` is the
    /// route below the base, e.g. `/v1/embeddings`.
    pub fn new(
        flag: &str,
        base: &str,
        path: &str,
        model: &str,
        api_key_env: Option<&str>,
        config: ClientConfig,
    ) -> Result<Endpoint> {
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(HttpError::config(format!(
                "the endpoint must be an http(s) URL ({flag}), got `{}`",
                redact_url(base)
            )));
        }
        if model.trim().is_empty() {
            return Err(HttpError::config(format!(
                "a model name is required for {flag} (--model)"
            )));
        }
        let (base, in_url) = split_credentials(base);
        let key = match (api_key_env, in_url) {
            (Some(var), Some(_)) => {
                return Err(HttpError::config(format!(
                    "{flag} holds a user and password, and {var} names a key too: give one of them"
                )))
            }
            (Some(var), None) => Some(ApiKey::require_env(var)?),
            (None, in_url) => in_url,
        };
        Ok(Endpoint {
            url: join_url(&base, path),
            model: model.to_string(),
            key,
            client: HttpClient::new(config)?,
        })
    }
}

/// Joins a user's endpoint and a route: the endpoint as given when it
/// already ends with the route (with or without its `/v1`); `…/v1` + the
/// route's rest when both carry `/v1`; else endpoint + route.
/// The URL is parsed and its path joined, so a query string (`?api-version=…`)
/// stays after the path.
pub fn join_url(endpoint: &str, path: &str) -> String {
    if let Ok(mut url) = reqwest::Url::parse(endpoint) {
        if !url.cannot_be_a_base() {
            let joined = join_path(url.path(), path);
            url.set_path(&joined);
            return url.to_string();
        }
    }
    join_path(endpoint, path)
}

/// [`join_url`]'s rule on the path alone.
fn join_path(endpoint: &str, path: &str) -> String {
    let e = endpoint.trim_end_matches('/');
    let rest = path.strip_prefix("/v1").filter(|r| !r.is_empty());
    if e.ends_with(path) || rest.is_some_and(|r| e.ends_with(r)) {
        return e.to_string();
    }
    match rest {
        Some(rest) if e.ends_with("/v1") => format!("{e}{rest}"),
        _ => format!("{e}{path}"),
    }
}

/// Settings of the client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Timeout of one attempt, from sending to the whole body read. By default, 60 s.
    pub timeout: Duration,
    /// Timeout of establishing a connection. By default, 10 s.
    pub connect_timeout: Duration,
    /// The retry policy. By default, [`RetryPolicy::default`].
    pub retry: RetryPolicy,
    /// Largest reply body read, bytes; a longer one (a server streaming
    /// without end) stops with [`ErrorKind::MalformedResponse`]. By
    /// default, 32 MiB.
    pub max_body_bytes: usize,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            retry: RetryPolicy::default(),
            max_body_bytes: 32 << 20,
        }
    }
}

/// A successful reply.
#[derive(Debug, Clone)]
pub struct Reply<T> {
    /// The decoded body.
    pub body: T,
    /// Attempts made (1 when the first succeeded).
    pub attempts: u32,
    /// The server's request id (`x-request-id` or `x-typesafe-request-id`), if sent.
    pub request_id: Option<String>,
}

/// The project's HTTP client. Cheap to clone; share one per process.
#[derive(Debug, Clone)]
pub struct HttpClient {
    inner: reqwest::Client,
    config: ClientConfig,
}

impl HttpClient {
    /// Builds a client.
    pub fn new(config: ClientConfig) -> Result<HttpClient> {
        let inner = reqwest::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("treenav/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| HttpError::config(format!("cannot build the HTTP client: {e}")))?;
        Ok(HttpClient { inner, config })
    }

    /// The client's settings.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// POSTs `body` as JSON and decodes the JSON reply, retrying per the policy.
    pub async fn post_json<B, T>(
        &self,
        url: &str,
        key: Option<&ApiKey>,
        body: &B,
    ) -> Result<Reply<T>>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let payload = serde_json::to_vec(body)
            .map_err(|e| HttpError::config(format!("cannot encode the request for {url}: {e}")))?;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let mut request = self
                .inner
                .post(url)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(payload.clone());
            if let Some(key) = key {
                request = key.apply(request);
            }
            let outcome = self.attempt::<T>(url, request).await;
            match outcome {
                Ok((body, request_id)) => {
                    return Ok(Reply {
                        body,
                        attempts: attempt,
                        request_id,
                    })
                }
                Err(mut error) => {
                    error.attempts = attempt;
                    error.url = redact_url(&error.url);
                    error.message =
                        redact_query_values(&redact_auth(&redact_url(&error.message)), url);
                    if let Some(key) = key {
                        error.message = key.scrub(&error.message);
                    }
                    match self.config.retry.decide(attempt, &error) {
                        Retry::GiveUp => return Err(error),
                        Retry::After(wait) => {
                            tracing::debug!(url = %error.url, attempt, ?wait, kind = ?error.kind, "retrying");
                            tokio::time::sleep(wait).await;
                        }
                    }
                }
            }
        }
    }

    /// The reply body, read chunk by chunk up to `max_body_bytes` (within
    /// the attempt's timeout, which covers the whole read).
    async fn read_body(
        &self,
        mut response: reqwest::Response,
    ) -> std::result::Result<Vec<u8>, (ErrorKind, String)> {
        let max = self.config.max_body_bytes;
        let too_long = || {
            (
                ErrorKind::MalformedResponse,
                format!("the reply body is over the limit of {max} bytes"),
            )
        };
        if response.content_length().is_some_and(|n| n > max as u64) {
            return Err(too_long());
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > max {
                        return Err(too_long());
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(body),
                Err(e) => {
                    let kind = if e.is_timeout() {
                        ErrorKind::Timeout
                    } else {
                        ErrorKind::Network
                    };
                    return Err((kind, error_chain(&e)));
                }
            }
        }
    }

    async fn attempt<T: DeserializeOwned>(
        &self,
        url: &str,
        request: reqwest::RequestBuilder,
    ) -> Result<(T, Option<String>)> {
        let fail = |kind, status, message: String, retry_after| HttpError {
            kind,
            status,
            url: url.to_string(),
            message,
            retry_after,
            attempts: 1,
        };
        let response = request.send().await.map_err(|e| {
            let kind = if e.is_timeout() {
                ErrorKind::Timeout
            } else if e.is_builder() {
                ErrorKind::Config
            } else {
                ErrorKind::Network
            };
            fail(kind, None, error_chain(&e), None)
        })?;
        let status = response.status().as_u16();
        let retry_after = parse_retry_after(response.headers());
        let request_id = ["x-request-id", "x-typesafe-request-id"]
            .iter()
            .find_map(|h| response.headers().get(*h))
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        tracing::debug!(url = %redact_url(url), status, "reply");
        let bytes = self
            .read_body(response)
            .await
            .map_err(|(kind, message)| fail(kind, Some(status), message, None))?;
        if !(200..300).contains(&status) {
            let snippet = snippet(&bytes);
            let message = if snippet.is_empty() {
                "the server gave no detail".to_string()
            } else {
                snippet
            };
            return Err(fail(
                ErrorKind::from_status(status),
                Some(status),
                message,
                retry_after,
            ));
        }
        let body = serde_json::from_slice(&bytes).map_err(|e| {
            fail(
                ErrorKind::MalformedResponse,
                Some(status),
                format!("{e}; body starts: {}", snippet(&bytes)),
                None,
            )
        })?;
        Ok((body, request_id))
    }
}

/// The start of a server's reply, quoted on one line: control characters
/// (a newline that would forge a log or output line, ANSI escapes) and
/// bidi overrides shown escaped.
fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim();
    let cut = match trimmed.char_indices().nth(300) {
        Some((i, _)) => &trimmed[..i],
        None => trimmed,
    };
    let mut out = String::with_capacity(cut.len() + 1);
    for c in cut.chars() {
        if c.is_control()
            || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if cut.len() < trimmed.len() {
        out.push('…');
    }
    out
}

fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(kind: ErrorKind, retry_after: Option<Duration>) -> HttpError {
        HttpError {
            kind,
            status: None,
            url: String::new(),
            message: String::new(),
            retry_after,
            attempts: 1,
        }
    }

    #[test]
    fn policy_backs_off_and_gives_up() {
        let p = RetryPolicy::default();
        let e = err(ErrorKind::Server, None);
        assert_eq!(p.decide(1, &e), Retry::After(Duration::from_millis(500)));
        assert_eq!(p.decide(2, &e), Retry::After(Duration::from_millis(1000)));
        assert_eq!(p.decide(3, &e), Retry::After(Duration::from_millis(2000)));
        assert_eq!(p.decide(4, &e), Retry::GiveUp);
        assert_eq!(
            p.decide(1, &err(ErrorKind::Authentication, None)),
            Retry::GiveUp
        );
        assert_eq!(p.decide(1, &err(ErrorKind::TooLarge, None)), Retry::GiveUp);
    }

    #[test]
    fn policy_honours_server_wait() {
        let p = RetryPolicy::default();
        let e = err(ErrorKind::RateLimited, Some(Duration::from_secs(2)));
        assert_eq!(p.decide(1, &e), Retry::After(Duration::from_secs(2)));
        let long = err(ErrorKind::RateLimited, Some(Duration::from_secs(3600)));
        assert_eq!(p.decide(1, &long), Retry::GiveUp);
    }

    #[test]
    fn credentials_leave_the_url_and_every_form_is_scrubbed() {
        let (url, key) = split_credentials("http://user:hunter2%21@host:8080/v1");
        assert_eq!(url, "http://host:8080/v1");
        let key = key.expect("credentials");
        let echoed = "got Authorization: Basic dXNlcjpodW50ZXIyIQ== for user:hunter2! (hunter2!)";
        let scrubbed = key.scrub(echoed);
        assert!(
            !scrubbed.contains("hunter2") && !scrubbed.contains("dXNlcjpodW50ZXIyIQ"),
            "{scrubbed}"
        );
        assert_eq!(format!("{key:?}"), "ApiKey(***)");
        assert_eq!(split_credentials("http://host:8080").0, "http://host:8080");
        assert!(split_credentials("http://host/x").1.is_none());
        let e = Endpoint::new(
            "--endpoint",
            "http://u:pw@127.0.0.1:9/v1",
            "/v1/embeddings",
            "m",
            Some("PATH"),
            ClientConfig::default(),
        )
        .expect_err("both");
        assert!(e.to_string().contains("give one"), "{e}");
        let ok = Endpoint::new(
            "--endpoint",
            "http://u:pw@127.0.0.1:9/v1",
            "/v1/embeddings",
            "m",
            None,
            ClientConfig::default(),
        )
        .expect("endpoint");
        assert_eq!(ok.url, "http://127.0.0.1:9/v1/embeddings");
        assert!(ok.key.is_some());
    }

    #[test]
    fn a_quoted_reply_stays_on_one_line() {
        let quoted = snippet("bad\nerror: forged line\x1b[31m\u{202e}".as_bytes());
        assert!(
            !quoted.contains('\n') && !quoted.contains('\x1b'),
            "{quoted}"
        );
        assert!(
            quoted.contains("\\n") && quoted.contains("forged line"),
            "{quoted}"
        );
    }

    #[test]
    fn credentials_are_redacted() {
        assert_eq!(
            redact_url("http://user:secret@host:8080/v1/x?y=1"),
            "http://***@host:8080/v1/x?y=***"
        );
        assert_eq!(
            redact_url("failed [http://h:9/v1/chat/completions?api_key=tok3nQS&v=&tok3n#f]"),
            "failed [http://h:9/v1/chat/completions?api_key=***&v=&***#f]"
        );
        assert_eq!(redact_url("https://host/a@b"), "https://host/a@b");
        assert_eq!(redact_url("not a url"), "not a url");
        assert_eq!(
            redact_url(
                "error sending request for url (http://u:p@h/x): refused; see https://a:b@c"
            ),
            "error sending request for url (http://***@h/x): refused; see https://***@c"
        );
        assert_eq!(
            redact_auth(r#"{"authorization": "Basic dXNlcjpw", "x": "Bearer abc def"}"#),
            r#"{"authorization": "Basic ***", "x": "Bearer *** def"}"#
        );
        assert_eq!(
            redact_secret(r#"{"authorization": "Bearer sk-123456"}"#, "sk-123456"),
            r#"{"authorization": "Bearer ***"}"#
        );
    }

    #[test]
    fn parses_retry_after_forms() {
        use reqwest::header::{HeaderMap, HeaderValue};
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_secs(3)));
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(parse_retry_after(&h), Some(Duration::from_millis(250)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(parse_retry_after(&d), Some(Duration::ZERO));
        let mut bad = HeaderMap::new();
        bad.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&bad), None);
        // Waits too long for a Duration do not panic: they are "forever",
        // and the policy gives up on them.
        for (name, value) in [
            ("retry-after", "1e308"),
            ("retry-after-ms", "1e300"),
            ("retry-after", "inf"),
        ] {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::from_static(value));
            let wait = parse_retry_after(&h);
            assert_eq!(wait, Some(Duration::MAX), "{name}: {value}");
            let e = err(ErrorKind::RateLimited, wait);
            assert_eq!(RetryPolicy::default().decide(1, &e), Retry::GiveUp);
        }
        let mut nan = HeaderMap::new();
        nan.insert("retry-after", HeaderValue::from_static("NaN"));
        assert_eq!(parse_retry_after(&nan), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, .. proptest::prelude::ProptestConfig::default() })]
        /// Any header value a server sends (numbers of any size and sign,
        /// floats, dates, garbage): a wait or nothing, never a panic, and
        /// the policy only ever waits up to its cap.
        #[test]
        fn any_retry_after_is_safe(
            value in "([-+]?[0-9]{0,400}(\\.[0-9]{0,20})?([eE][-+]?[0-9]{1,4})?|inf|-inf|NaN|\\PC{0,30}|[A-Z][a-z]{2}, [0-9]{2} [A-Z][a-z]{2} [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT)",
            ms in proptest::prelude::any::<bool>(),
            attempt in 0u32..10,
        ) {
            use reqwest::header::{HeaderMap, HeaderValue};
            let Ok(header) = HeaderValue::from_str(&value) else { return Ok(()) };
            let mut h = HeaderMap::new();
            h.insert(if ms { "retry-after-ms" } else { "retry-after" }, header);
            let wait = parse_retry_after(&h);
            let policy = RetryPolicy::default();
            if let Retry::After(d) = policy.decide(attempt, &err(ErrorKind::RateLimited, wait)) {
                proptest::prop_assert!(d <= policy.max_server_wait.max(policy.max_delay));
            }
        }
    }

    #[test]
    fn endpoints_join_and_check() {
        assert_eq!(
            join_url("http://h:1", "/v1/embeddings"),
            "http://h:1/v1/embeddings"
        );
        assert_eq!(
            join_url("http://h:1/v1/", "/v1/embeddings"),
            "http://h:1/v1/embeddings"
        );
        assert_eq!(
            join_url("http://h:1/v1/embeddings", "/v1/embeddings"),
            "http://h:1/v1/embeddings"
        );
        assert_eq!(
            join_url("https://o.ai", "/api/alpha/decisions"),
            "https://o.ai/api/alpha/decisions"
        );
        assert_eq!(
            join_url(
                "http://127.0.0.1:9/v1?api_key=tok3nQS",
                "/v1/chat/completions"
            ),
            "http://127.0.0.1:9/v1/chat/completions?api_key=tok3nQS"
        );
        let e = Endpoint::new(
            "--endpoint",
            "localhost:80",
            "/v1/x",
            "m",
            None,
            ClientConfig::default(),
        )
        .expect_err("no scheme");
        assert!(e.message.contains("--endpoint"), "{e}");
        let e = Endpoint::new(
            "--endpoint",
            "http://u:pw@h",
            "/v1/x",
            " ",
            None,
            ClientConfig::default(),
        )
        .expect_err("no model");
        assert!(e.message.contains("model"), "{e}");
        let ok = Endpoint::new(
            "--endpoint",
            "http://h/v1",
            "/v1/x",
            "m",
            None,
            ClientConfig::default(),
        )
        .expect("valid");
        assert_eq!(ok.url, "http://h/v1/x");
    }

    #[test]
    fn key_is_never_printed() {
        let k = ApiKey::new("sk-secret");
        assert!(!format!("{k:?}").contains("secret"));
        let missing = ApiKey::require_env("TREENAV_TEST_SURELY_UNSET_KEY").err();
        assert!(missing.is_some_and(|e| e.to_string().contains("TREENAV_TEST_SURELY_UNSET_KEY")));
    }

    #[test]
    fn status_classes() {
        assert_eq!(ErrorKind::from_status(401), ErrorKind::Authentication);
        assert_eq!(ErrorKind::from_status(422), ErrorKind::InvalidRequest);
        assert_eq!(ErrorKind::from_status(529), ErrorKind::Overloaded);
        assert_eq!(ErrorKind::from_status(502), ErrorKind::Server);
        assert!(!ErrorKind::from_status(501).retryable());
        assert!(ErrorKind::from_status(408).retryable());
        assert!(!ErrorKind::from_status(404).retryable());
    }
}
