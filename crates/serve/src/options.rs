//! The service's settings, checked once at start.

use crate::auth::Tokens;
use crate::Error;
use std::path::PathBuf;
use std::time::Duration;
use treenav_judge::{checked, JudgeOptions};
use treenav_navigator::NavigatorConfig;
use treenav_prune::TokenCounter;

/// A tree to serve: the name requests use and its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeSpec {
    /// The name (letters, digits, `-`, `_`, `.`; 1–64 characters).
    pub name: String,
    /// The tree file.
    pub path: PathBuf,
}

impl std::str::FromStr for TreeSpec {
    type Err = Error;

    /// `name=path`.
    fn from_str(s: &str) -> Result<TreeSpec, Error> {
        let (name, path) = s
            .split_once('=')
            .ok_or_else(|| Error::Config(format!("--tree wants name=path, got `{s}`")))?;
        let ok = (1..=64).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !ok {
            return Err(Error::Config(format!(
                "tree name `{name}`: use 1–64 letters, digits, `-`, `_` or `.`"
            )));
        }
        if path.is_empty() {
            return Err(Error::Config(format!("tree `{name}` has no path")));
        }
        Ok(TreeSpec {
            name: name.to_string(),
            path: PathBuf::from(path),
        })
    }
}

/// Limits on what one request may ask and on the load the service takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Largest request body, bytes (413 above). By default, 1 MiB.
    pub max_body_bytes: usize,
    /// Longest query or question, characters (400 above). By default, 2,000.
    pub max_query_chars: usize,
    /// Most chunks one prune request may carry (413 above). By default, 1,000.
    pub max_chunks: usize,
    /// Time one request may take, queueing included (504 after). By default, 30 s.
    pub deadline: Duration,
    /// Retrievals and prunes running at once. By default, 64.
    pub max_concurrent: usize,
    /// Requests that may wait for a slot beyond those (503 + `Retry-After`
    /// above). By default, 64.
    pub queue: usize,
    /// How long a queued request waits for a slot before its 503. By
    /// default, 2 s.
    pub queue_wait: Duration,
    /// In-flight requests get this long to finish after SIGTERM/SIGINT. By
    /// default, 30 s.
    pub grace: Duration,
    /// How long a judge checkup stays valid for `/readyz`. By default, 30 s.
    pub ready_ttl: Duration,
    /// Connections open at once; one more is answered 503 and closed. By
    /// default, 512 (keep it under the process's file limit, `ulimit -n`).
    pub max_connections: usize,
    /// How long a connection may take to send a request's head, and may
    /// idle between requests, before it is closed. By default, 10 s.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive (408 after). By
    /// default, 10 s.
    pub body_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 1 << 20,
            max_query_chars: 2_000,
            max_chunks: 1_000,
            deadline: Duration::from_secs(30),
            max_concurrent: 64,
            queue: 64,
            queue_wait: Duration::from_secs(2),
            grace: Duration::from_secs(30),
            ready_ttl: Duration::from_secs(30),
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// Limits from seconds and counts as flags give them, each range-checked.
    #[allow(clippy::too_many_arguments)]
    pub fn from_flags(
        max_body_bytes: usize,
        max_query_chars: usize,
        max_chunks: usize,
        deadline_secs: f64,
        max_concurrent: usize,
        queue: usize,
        grace_secs: f64,
    ) -> Result<Limits, Error> {
        let bad = |e: checked::OutOfRange| Error::Config(e.to_string());
        Ok(Limits {
            max_body_bytes: checked::count("max_body_bytes", max_body_bytes, 64..=(1 << 30))
                .map_err(bad)?,
            max_query_chars: checked::count("max_query_chars", max_query_chars, 1..=1_000_000)
                .map_err(bad)?,
            max_chunks: checked::count("max_chunks", max_chunks, 1..=1_000_000).map_err(bad)?,
            deadline: checked::seconds("deadline", deadline_secs).map_err(bad)?,
            max_concurrent: checked::count("max_concurrent", max_concurrent, 1..=100_000)
                .map_err(bad)?,
            queue: checked::count("queue", queue, 0..=1_000_000).map_err(bad)?,
            grace: checked::seconds("grace", grace_secs).map_err(bad)?,
            ..Limits::default()
        })
    }
}

impl Limits {
    /// These limits with the connection settings flags give, range-checked.
    pub fn with_connections(
        self,
        max_connections: usize,
        header_timeout_secs: f64,
        body_timeout_secs: f64,
    ) -> Result<Limits, Error> {
        let bad = |e: checked::OutOfRange| Error::Config(e.to_string());
        Ok(Limits {
            max_connections: checked::count("max_connections", max_connections, 1..=1_000_000)
                .map_err(bad)?,
            header_timeout: checked::seconds("header_timeout", header_timeout_secs).map_err(bad)?,
            body_timeout: checked::seconds("body_timeout", body_timeout_secs).map_err(bad)?,
            ..self
        })
    }
}

/// Everything `treenav serve` needs.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The trees, by name (at least one; names unique).
    pub trees: Vec<TreeSpec>,
    /// The one judge every request uses.
    pub judge: JudgeOptions,
    /// Navigator settings a retrieve request does not override.
    pub navigator: NavigatorConfig,
    /// How the pruner counts tokens.
    pub counter: TokenCounter,
    /// The pruner's settings a `/v1/prune` request does not give, and its
    /// judge (a saved `prune.json`); without it, grade ≥ 4 judged as
    /// `treenav prune` judges (lexical), or by the service's judge when it
    /// names a cross-encoder or an LLM.
    pub prune: Option<treenav_prune::PruneConfig>,
    /// Limits.
    pub limits: Limits,
    /// Bearer tokens; `None` serves without authentication.
    pub auth: Option<Tokens>,
    /// Write query text into the access log (off by default).
    pub log_queries: bool,
    /// `Host` names and browser origins allowed beyond the server's own
    /// (see [`crate::Allowed`]).
    pub allowed: crate::Allowed,
}

impl ServeOptions {
    /// Options with default limits, no auth and the navigator's defaults.
    pub fn new(trees: Vec<TreeSpec>, judge: JudgeOptions) -> ServeOptions {
        ServeOptions {
            trees,
            judge,
            navigator: NavigatorConfig::default(),
            counter: TokenCounter::CharsOver4,
            prune: None,
            limits: Limits::default(),
            auth: None,
            log_queries: false,
            allowed: crate::Allowed::default(),
        }
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        if self.trees.is_empty() {
            return Err(Error::Config(
                "no tree to serve: give --tree name=path".into(),
            ));
        }
        let mut names: Vec<&str> = self.trees.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::Config(format!("tree `{}` is given twice", w[0])));
        }
        Ok(())
    }
}
