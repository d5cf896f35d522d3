//! treenav as an HTTP service (`treenav serve`): retrieval and pruning over
//! named trees with one judge, behind limits, optional bearer auth,
//! Prometheus metrics, an OpenAPI document, zero-downtime reloads and a
//! graceful shutdown. No retrieval logic lives here: the routes hand work
//! to the navigator and the pruner.
//!
//! | route | what |
//! |---|---|
//! | `POST /v1/retrieve` | ranked passages for a question ([`api::RetrieveRequest`]) |
//! | `POST /v1/prune` | the chunks an answer needs ([`api::PruneRequest`]) |
//! | `GET /v1/trees` | the served trees |
//! | `POST /v1/admin/reload` | reload one tree or all from their files |
//! | `POST /v1/trees/{name}/documents` | add documents (ids it has are replaced) |
//! | `DELETE /v1/trees/{name}/documents` | remove documents by id |
//! | `GET /healthz`, `GET /readyz` | up; trees loaded and the judge answering |
//! | `GET /metrics` | Prometheus text |
//! | `GET /openapi.json` | the OpenAPI document |
//! | `GET /` | a search page: passages, scores, metadata and the navigation drawn |
//!
//! ```no_run
//! use treenav_serve::{Server, ServeOptions, TreeSpec};
//! # async fn run() -> Result<(), treenav_serve::Error> {
//! let trees = vec!["scifact=scifact.tree".parse::<TreeSpec>()?];
//! let options = ServeOptions::new(trees, Default::default());
//! let server = Server::bind("127.0.0.1:8080".parse().expect("address"), options).await?;
//! server.run(treenav_serve::shutdown_signal()).await
//! # }
//! ```
#![warn(missing_docs)]

mod admission;
pub mod api;
mod auth;
mod connections;
mod error;
mod heavy;
mod intent;
mod observe;
mod openapi;
mod options;
mod ready;
mod registry;
mod routes;

pub use auth::Tokens;
pub use error::{ApiError, Error};
pub use intent::Allowed;
pub use options::{Limits, ServeOptions, TreeSpec};

use admission::Admission;
use axum::routing::{get, post};
use axum::Router;
use registry::Registry;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use treenav_judge::Judge;
use treenav_prune::TokenCounter;

/// What every handler shares.
#[derive(Debug)]
pub(crate) struct App {
    registry: Registry,
    judge: Judge,
    /// The judge of `/v1/prune`: lists with no tree.
    prune_judge: Judge,
    /// `/v1/prune`'s defaults from a saved config.
    prune: Option<treenav_prune::PruneConfig>,
    counter: TokenCounter,
    limits: Limits,
    admission: Admission,
    log_queries: bool,
    ready: ready::LastCheckup,
}

/// The judge of `/v1/prune`, which judges lists with no tree: a saved
/// config's (`--prune-config`; the embedding judge embeds the chunks with
/// bge-small); else the pruner's default, the lexical judge, as `treenav
/// prune`, when the service judges trees with the embedding judge; else
/// the service's judge (a cross-encoder, an LLM).
pub(crate) fn prune_judge(options: &ServeOptions, judge: &Judge) -> Result<Judge, Error> {
    if let Some(config) = &options.prune {
        return Ok(treenav_navigator::list_judge(&config.judge)?);
    }
    if judge.uses_vectors() {
        return Ok(Judge::new(&treenav_judge::JudgeOptions::default())?);
    }
    Ok(judge.clone())
}

/// A bound service, ready to run.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    app: Arc<App>,
    auth: Option<Tokens>,
    allowed: Arc<Allowed>,
}

impl Server {
    /// Checks the options, loads every tree, sets up the judge and binds
    /// `addr` (port 0 picks a free port; see [`Server::local_addr`]).
    pub async fn bind(addr: SocketAddr, options: ServeOptions) -> Result<Server, Error> {
        options.check()?;
        let config = options
            .navigator
            .clone()
            .check()
            .map_err(|e| Error::Config(e.to_string()))?;
        let judge = Judge::new(&options.judge)?;
        let prune_judge = prune_judge(&options, &judge)?;
        // The address first: a port in use is said at once, not after every
        // tree has loaded.
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| Error::Bind { addr, source })?;
        // The recorder before loading, so what loading sets (trees loaded)
        // is kept.
        observe::prometheus();
        let registry = Registry::load(options.trees.clone(), judge.clone(), config).await?;
        let limits = options.limits.clone();
        let app = App {
            registry,
            judge,
            prune_judge,
            prune: options.prune.clone(),
            counter: options.counter.clone(),
            admission: Admission::new(limits.max_concurrent, limits.queue, limits.queue_wait),
            limits,
            log_queries: options.log_queries,
            ready: ready::LastCheckup::default(),
        };
        Ok(Server {
            listener,
            app: Arc::new(app),
            auth: options.auth,
            allowed: Arc::new(options.allowed),
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> Result<SocketAddr, Error> {
        Ok(self.listener.local_addr()?)
    }

    /// The routes, with limits, auth and tracking.
    fn router(&self) -> Router {
        let mut api = Router::new()
            .route("/v1/retrieve", post(routes::retrieve))
            .route("/v1/retrieve/batch", post(routes::retrieve_batch))
            .route("/v1/prune", post(routes::prune))
            .route("/v1/trees", get(routes::trees))
            .route("/v1/admin/reload", post(routes::reload))
            .route(
                "/v1/trees/{name}/documents",
                post(routes::add_documents).delete(routes::delete_documents),
            )
            .route("/v1/trees/{name}/compact", post(routes::compact))
            .route("/metrics", get(routes::metrics));
        if let Some(tokens) = &self.auth {
            api = api.layer(axum::middleware::from_fn_with_state(
                tokens.clone(),
                auth::require,
            ));
        }
        Router::new()
            .route("/", get(routes::page))
            .route("/healthz", get(routes::healthz))
            .route("/readyz", get(routes::readyz))
            .route("/openapi.json", get(routes::openapi))
            .merge(api)
            .fallback(routes::not_found)
            .method_not_allowed_fallback(routes::method_not_allowed)
            .layer(axum::middleware::from_fn_with_state(
                self.allowed.clone(),
                intent::require,
            ))
            .layer(axum::middleware::from_fn(observe::track))
            .with_state(self.app.clone())
    }

    /// Serves until `shutdown` completes, then stops accepting and gives
    /// in-flight requests the grace period to finish. SIGHUP reloads every
    /// tree (on Unix).
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let router = self.router();
        let grace = self.app.limits.grace;
        let started = Arc::new(tokio::sync::Notify::new());
        let notify = started.clone();
        let signalled = async move {
            shutdown.await;
            tracing::info!("shutting down: no new connections; finishing requests in flight");
            notify.notify_one();
        };
        let reloads = tokio::spawn(reload_on_hangup(self.app.clone()));
        let limits = connections::ConnectionLimits {
            max_connections: self.app.limits.max_connections,
            header_timeout: self.app.limits.header_timeout,
        };
        let serve = connections::serve(self.listener, router, limits, signalled);
        let outcome = tokio::select! {
            () = serve => Ok(()),
            _ = async { started.notified().await; tokio::time::sleep(grace).await } => {
                tracing::warn!(grace_secs = grace.as_secs_f64(), "grace period over; requests still in flight were cut");
                Ok(())
            }
        };
        reloads.abort();
        outcome
    }
}

/// Completes on SIGTERM or SIGINT (Ctrl-C).
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

#[cfg(unix)]
async fn reload_on_hangup(app: Arc<App>) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; reload with POST /v1/admin/reload");
        return;
    };
    while hangups.recv().await.is_some() {
        tracing::info!("SIGHUP: reloading every tree");
        if let Err(e) = app.registry.reload(None).await {
            tracing::warn!(error = %e.detail.message, "reload failed");
        }
    }
}

#[cfg(not(unix))]
async fn reload_on_hangup(_app: Arc<App>) {}
