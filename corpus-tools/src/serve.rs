//! `treenav serve`: the HTTP service over named trees (see `treenav_serve`).

use crate::judge_args::JudgeArgs;
use crate::nav_args::NavArgs;
use anyhow::{bail, Result};
use std::net::SocketAddr;
use std::path::PathBuf;
use treenav::serve::{Limits, ServeOptions, Server, Tokens, TreeSpec};

/// `--addr`: `host:port`, a name (`localhost:0`) resolved to its first
/// address.
fn listen_addr(s: &str) -> std::result::Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("`{s}` is not host:port ({e})"))?
        .next()
        .ok_or_else(|| format!("`{s}` resolves to no address"))
}

/// The allocator options the service runs with (unless the user set
/// `_RJEM_MALLOC_CONF`): pages freed stay mapped for a second instead of
/// ten, and are then returned to the system at once instead of after a
/// second delay (jemalloc's dirty and muzzy decay), so resident memory
/// follows what the service holds.
const ALLOCATOR_OPTIONS: [(&str, &str); 1] =
    [("_RJEM_MALLOC_CONF", "dirty_decay_ms:1000,muzzy_decay_ms:0")];

/// Runs the service with [`ALLOCATOR_OPTIONS`]. Under a soak of queries
/// and updates (`scripts/soak.py`) resident memory then stays flat after
/// the first minute; with mimalloc, the allocator before, it rose 15–45% in
/// 10 minutes, its pages pinned by the threads each index writer starts and
/// ends (docs/serve.md). jemalloc reads its options when the process
/// loads, so the service re-executes itself once with the variable set
/// (the same process id, arguments and environment); when that fails it
/// runs on as it is.
pub fn return_freed_memory_at_once() {
    let unset: Vec<(&str, &str)> = ALLOCATOR_OPTIONS
        .into_iter()
        .filter(|(name, _)| std::env::var_os(name).is_none())
        .collect();
    if unset.is_empty() {
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if let Ok(exe) = std::env::current_exe() {
            let err = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .envs(unset.iter().copied())
                .exec();
            eprintln!("warning: cannot restart with the allocator's options ({err}); freed memory returns to the system later");
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// A tree to serve, as name=path (repeat for more).
    #[arg(long = "tree", required = true)]
    pub trees: Vec<String>,
    /// Address to listen on (port 0 picks a free one; the address is
    /// printed on stdout as `listening on http://…`).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = listen_addr)]
    pub addr: SocketAddr,
    /// Largest request body, bytes (413 above).
    #[arg(long, default_value_t = 1 << 20)]
    pub max_body_bytes: usize,
    /// Longest query or question, characters (400 above).
    #[arg(long, default_value_t = 2000)]
    pub max_query_chars: usize,
    /// Most chunks in one prune request (413 above).
    #[arg(long, default_value_t = 1000)]
    pub max_chunks: usize,
    /// Seconds one request may take, queueing included (504 after).
    #[arg(long, default_value_t = 30.0)]
    pub request_deadline: f64,
    /// Retrievals and prunes running at once.
    #[arg(long, default_value_t = 64)]
    pub max_concurrent: usize,
    /// Requests that may wait for a slot beyond those; more get 503 with Retry-After.
    #[arg(long, default_value_t = 64)]
    pub queue: usize,
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT.
    #[arg(long, default_value_t = 30.0)]
    pub grace: f64,
    /// Connections open at once; one more gets 503 and is closed (keep it
    /// under `ulimit -n`).
    #[arg(long, default_value_t = 512)]
    pub max_connections: usize,
    /// Seconds a connection may take to send a request's head, or idle
    /// between requests, before it is closed.
    #[arg(long, default_value_t = 10.0)]
    pub header_timeout: f64,
    /// Seconds a request's body may take to arrive (408 after).
    #[arg(long, default_value_t = 10.0)]
    pub body_timeout: f64,
    /// Require a bearer token: the environment variable holding the
    /// accepted tokens (comma- or newline-separated, 16+ characters each).
    #[arg(long, conflicts_with = "auth_token_file")]
    pub auth_token_env: Option<String>,
    /// Require a bearer token: a file of accepted tokens, one per line.
    #[arg(long)]
    pub auth_token_file: Option<PathBuf>,
    /// tokenizer.json counting the pruner's tokens (default: bge-small's
    /// when it is in the model cache, else characters / 4, said at start).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// The pruner's settings and judge for `/v1/prune` requests that do not
    /// give them: a config `treenav bench --prune --target-recall` wrote.
    #[arg(long, value_name = "FILE")]
    pub prune_config: Option<PathBuf>,
    /// Write query text into the access log (off: logs never hold queries).
    #[arg(long)]
    pub log_queries: bool,
    /// A host name clients may reach this server by, beyond its addresses
    /// and `localhost` (repeatable; e.g. the name a reverse proxy or DNS
    /// gives it). Other `Host` headers get 403: a web page cannot point its
    /// own name at this address to read or write it.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_hosts: Vec<String>,
    /// A web page origin (`https://app.example.com`) that may send writes
    /// and searches (repeatable). Other browser origins get 403: a page the
    /// user visits cannot change the served trees.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    #[command(flatten)]
    pub judge: JudgeArgs,
    #[command(flatten)]
    pub nav: NavArgs,
}

fn options(args: &ServeArgs) -> Result<ServeOptions> {
    let trees = args
        .trees
        .iter()
        .map(|t| t.parse::<TreeSpec>())
        .collect::<Result<Vec<_>, _>>()?;
    let mut options = ServeOptions::new(trees, args.judge.options()?);
    options.navigator = args.nav.config()?;
    options.limits = Limits::from_flags(
        args.max_body_bytes,
        args.max_query_chars,
        args.max_chunks,
        args.request_deadline,
        args.max_concurrent,
        args.queue,
        args.grace,
    )?
    .with_connections(args.max_connections, args.header_timeout, args.body_timeout)?;
    options.auth = match (&args.auth_token_env, &args.auth_token_file) {
        (Some(var), _) => Some(Tokens::from_env(var)?),
        (None, Some(path)) => Some(Tokens::from_file(path)?),
        (None, None) => None,
    };
    options.counter = crate::prune::token_counter(args.tokenizer.as_deref(), true)?;
    options.prune = match &args.prune_config {
        Some(path) => Some(treenav::prune::PruneConfig::read(path)?),
        None => None,
    };
    options.log_queries = args.log_queries;
    options.allowed = treenav::serve::Allowed::new(&args.allow_hosts, &args.allow_origins)?;
    Ok(options)
}

pub async fn run(args: &ServeArgs) -> Result<()> {
    let options = options(args)?;
    if !args.addr.ip().is_loopback() && options.auth.is_none() {
        tracing::warn!(addr = %args.addr, "listening beyond loopback without authentication (give --auth-token-env or --auth-token-file)");
    }
    let server = Server::bind(args.addr, options).await?;
    let addr = server.local_addr()?;
    if addr.port() == 0 {
        bail!("bound to port 0");
    }
    crate::emit(&format!("listening on http://{addr}\n"))?;
    server.run(treenav::serve::shutdown_signal()).await?;
    Ok(())
}
