//! The route handlers. They parse and check the request, take an
//! admission slot, and hand the work to the navigator or the pruner; no
//! retrieval logic lives here.

use crate::api::{
    BatchItem, BatchRequest, BatchResponse, DeleteDocumentsRequest, PruneRequest, PruneResponse,
    ReloadRequest, ReloadResponse, RetrieveRequest, RetrieveResponse, TreesResponse,
    UpdateResponse, API_VERSION, MAX_BATCH,
};
use crate::error::ApiError;
use crate::observe;
use crate::observe::Noted;
use crate::registry::Change;
use crate::App;
use axum::body::{Body, Bytes, HttpBody as _};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use axum::Json;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use treenav_judge::checked;
use treenav_navigator::{Navigator, NavigatorConfig};
use treenav_prune::{input, PruneOptions, Pruner};
use treenav_tree::filter::Filter;

/// The body, read within the body timeout and the size limit: 408 when it
/// does not arrive in time (a client sending half a body never holds a
/// connection and its buffer longer), 413 when too large, 400 naming
/// `body` when the stream breaks.
async fn read_body(app: &App, body: Body) -> Result<Bytes, ApiError> {
    let limit = app.limits.max_body_bytes;
    let too_large = || ApiError::too_large("body", "the request body is larger than the limit");
    let declared = body.size_hint().lower();
    if declared > limit as u64 {
        return Err(too_large());
    }
    match tokio::time::timeout(app.limits.body_timeout, axum::body::to_bytes(body, limit)).await {
        Err(_) => Err(ApiError::body_timeout(
            app.limits.body_timeout.as_secs_f64(),
        )),
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => {
            let over = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if over {
                Err(too_large())
            } else {
                Err(ApiError::bad_field(
                    "body",
                    format!("cannot read the request body: {e}"),
                ))
            }
        }
    }
}

/// Parses JSON (one value, nothing after it), naming the field at fault
/// (its path) in the error, or `body` when the JSON itself is broken.
fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = format!("invalid request: {inner}");
        let field = if inner.is_syntax() || inner.is_eof() || path.contains('?') {
            "body".to_string()
        } else if path == "." {
            // serde names a missing or unknown field in its message only.
            quoted_field(&inner.to_string()).unwrap_or_else(|| "body".to_string())
        } else {
            path
        };
        ApiError::bad_field(&field, message)
    })?;
    de.end().map_err(|e| {
        ApiError::bad_field(
            "body",
            format!("invalid request: {e} (one JSON object per request)"),
        )
    })?;
    Ok(value)
}

/// The first `` `name` `` in a serde message (missing/unknown field).
fn quoted_field(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_string())
}

/// A question: not empty, not longer than the limit.
fn question(app: &App, field: &str, text: &str) -> Result<(), ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::bad_field(field, format!("`{field}` is empty")));
    }
    let chars = text.chars().count();
    if chars > app.limits.max_query_chars {
        return Err(ApiError::bad_field(
            field,
            format!(
                "`{field}` has {chars} characters; the limit is {}",
                app.limits.max_query_chars
            ),
        ));
    }
    Ok(())
}

fn out_of_range(field: &str) -> impl Fn(checked::OutOfRange) -> ApiError + '_ {
    move |e| ApiError::bad_field(field, e.to_string())
}

/// The navigator a request asks for: the tree's own, or one reconfigured
/// with the request's settings (each checked where it enters, an error
/// naming it).
fn navigator_for(served: &Navigator, req: &RetrieveRequest) -> Result<Option<Navigator>, ApiError> {
    if req.settings.is_empty() {
        return Ok(None);
    }
    let config: NavigatorConfig = served.config().settings().clone();
    let config = config
        .with_settings(&req.settings)
        .and_then(NavigatorConfig::check)
        .map_err(setting_error)?;
    served
        .reconfigured(config)
        .map(Some)
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// A setting's error names it as the request did.
fn setting_error(e: treenav_navigator::Error) -> ApiError {
    match e {
        treenav_navigator::Error::Setting { ref name, .. } => {
            ApiError::bad_field(name, e.to_string())
        }
        other => ApiError::bad_request(other.to_string()),
    }
}

fn navigation_error(e: treenav_navigator::Error) -> ApiError {
    use treenav_navigator::Error as E;
    match e {
        E::EmptyQuery => ApiError::bad_field("query", e.to_string()),
        E::Filter(_) => ApiError::bad_field("filter", e.to_string()),
        E::Config(_) => ApiError::bad_request(e.to_string()),
        E::Deadline(secs) => ApiError::deadline(secs),
        E::Judge { .. } | E::Rerank(_) | E::JudgeSetup(_) | E::CostCap { .. } => {
            ApiError::judge(e.to_string())
        }
        other => ApiError::internal(other.to_string()),
    }
}

/// Runs `work` under an admission slot and the request deadline.
async fn admitted<T>(
    app: &App,
    work: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    let limited = async {
        let _slot = app.admission.admit().await?;
        work.await
    };
    tokio::time::timeout(app.limits.deadline, limited)
        .await
        .map_err(|_| ApiError::deadline(app.limits.deadline.as_secs_f64()))?
}

pub(crate) async fn retrieve(
    State(app): State<Arc<App>>,
    noted: Option<Extension<Noted>>,
    raw: Body,
) -> Result<Json<RetrieveResponse>, ApiError> {
    let req: RetrieveRequest = parse(&read_body(&app, raw).await?)?;
    if let Some(Extension(noted)) = noted {
        noted.tree(&req.tree);
    }
    answer(&app, req).await.map(Json)
}

/// `POST /v1/retrieve/batch`: each request answered as `/v1/retrieve`
/// would, a few at a time, in order; one failing does not fail the rest.
pub(crate) async fn retrieve_batch(
    State(app): State<Arc<App>>,
    raw: Body,
) -> Result<Json<BatchResponse>, ApiError> {
    use futures::StreamExt;
    /// Requests of one batch run at once (each takes an admission slot).
    const AT_ONCE: usize = 4;
    let batch: BatchRequest = parse(&read_body(&app, raw).await?)?;
    if !(1..=MAX_BATCH).contains(&batch.requests.len()) {
        return Err(ApiError::bad_field(
            "requests",
            format!(
                "{} requests: a batch carries 1 to {MAX_BATCH}",
                batch.requests.len()
            ),
        ));
    }
    let results = futures::stream::iter(batch.requests)
        .map(|req| answer(&app, req))
        .buffered(AT_ONCE)
        .map(|result| match result {
            Ok(found) => BatchItem::Found(Box::new(found)),
            Err(e) => BatchItem::Failed {
                status: e.status.as_u16(),
                error: e.detail,
            },
        })
        .collect()
        .await;
    Ok(Json(BatchResponse {
        version: API_VERSION,
        results,
    }))
}

/// One retrieval, as `POST /v1/retrieve` answers it.
async fn answer(app: &App, req: RetrieveRequest) -> Result<RetrieveResponse, ApiError> {
    question(app, "query", &req.query)?;
    let served = app.registry.current(&req.tree).await.ok_or_else(|| {
        if let Some(why) = app.registry.not_loaded(&req.tree) {
            return ApiError::tree_not_loaded(&req.tree, &why);
        }
        ApiError::not_found(format!(
            "no tree named `{}` (trees: {})",
            req.tree,
            app.registry.names().join(", ")
        ))
        .field("tree")
    })?;
    if app.log_queries {
        // Debug formatting: quoted, with newlines and control characters
        // escaped, so a query can neither forge a log line nor reach the
        // terminal's escape codes.
        tracing::info!(target: "treenav_serve::access", tree = ?req.tree, query = ?req.query, "retrieve");
    }
    let filter = match &req.filter {
        Some(f) => {
            Filter::from_json(f).map_err(|e| ApiError::bad_field("filter", e.to_string()))?
        }
        None => Filter::none(),
    };
    served.check_unchanged(&req.tree)?;
    let custom = navigator_for(&served.navigator, &req)?;
    let navigator = custom.as_ref().unwrap_or(&served.navigator);
    let found = admitted(app, async {
        navigator
            .retrieve_filtered(&req.query, &filter)
            .await
            .map_err(navigation_error)
    })
    .await;
    // Written over while this request read it: what it read (or the read
    // error, which would name the server's path) is not answered.
    served.check_unchanged(&req.tree)?;
    let found = found?;
    observe::judge_usage("retrieve", &found.trace.usage);
    Ok(RetrieveResponse::new(
        &req.tree,
        found,
        req.trace,
        served.info.generation,
    ))
}

/// The request's pruner settings; those it does not give come from the
/// saved config when the service has one, else the pruner's defaults.
fn prune_options(app: &App, req: &PruneRequest) -> Result<PruneOptions, ApiError> {
    let saved = app.prune.as_ref();
    let field = if req.threshold.is_some() {
        "threshold"
    } else {
        "strategy"
    };
    let strategy = match (req.strategy.as_deref(), saved) {
        (None, Some(config)) if req.threshold.is_none() => config.strategy,
        (name, _) => {
            let name = name.or(saved.map(|c| c.strategy.name())).unwrap_or("grade");
            treenav_prune::Strategy::named(name, req.threshold, req.extra, req.n)
                .map_err(|e| ApiError::bad_field(field, e.to_string()))?
        }
    };
    let token_budget = req.token_budget.or(saved.and_then(|c| c.token_budget));
    if let Some(budget) = token_budget {
        checked::count("token_budget", budget, 1..=100_000_000)
            .map_err(out_of_range("token_budget"))?;
    }
    let keep_top_k = req.keep_top_k.or(saved.map(|c| c.keep_top_k)).unwrap_or(1);
    let keep_top_k = checked::count("keep_top_k", keep_top_k, 0..=1_000_000)
        .map_err(out_of_range("keep_top_k"))?;
    Ok(PruneOptions {
        strategy,
        keep_top_k,
        token_budget,
        counter: app.counter.clone(),
        edge_placement: req.edge_placement,
    })
}

fn prune_error(e: treenav_prune::Error) -> ApiError {
    use treenav_prune::Error as E;
    match e {
        E::Input(_) => ApiError::bad_field("chunks", e.to_string()),
        E::Config(_) => ApiError::bad_request(e.to_string()),
        E::Judge(_) => ApiError::judge(e.to_string()),
        other => ApiError::internal(other.to_string()),
    }
}

pub(crate) async fn prune(
    State(app): State<Arc<App>>,
    raw: Body,
) -> Result<Json<PruneResponse>, ApiError> {
    let req: PruneRequest = parse(&read_body(&app, raw).await?)?;
    question(&app, "question", &req.question)?;
    if req.chunks.len() > app.limits.max_chunks {
        return Err(ApiError::too_large(
            "chunks",
            format!(
                "{} chunks; the limit is {}",
                req.chunks.len(),
                app.limits.max_chunks
            ),
        ));
    }
    let pruner =
        Pruner::new(app.prune_judge.clone(), prune_options(&app, &req)?).map_err(prune_error)?;
    let chunks = input::to_chunks(req.chunks);
    let pruned = admitted(&app, async {
        pruner
            .prune(&req.question, &chunks)
            .await
            .map_err(prune_error)
    })
    .await?;
    let s = &pruned.stats;
    observe::judge_usage(
        "prune",
        &treenav_judge::Usage {
            calls: s.judge_calls,
            input_tokens: s.input_tokens,
            cost_usd: s.cost_usd,
            ..Default::default()
        },
    );
    Ok(Json(PruneResponse::new(pruned)))
}

pub(crate) async fn trees(State(app): State<Arc<App>>) -> Json<TreesResponse> {
    // The generations listed are the ones on disk (a tree another process
    // updated is loaded first).
    app.registry.stale().await;
    Json(TreesResponse {
        version: API_VERSION,
        trees: app.registry.infos(),
    })
}

pub(crate) async fn healthz() -> Json<serde_json::Value> {
    Json(serde_json::json!({"status": "ok"}))
}

pub(crate) async fn readyz(State(app): State<Arc<App>>) -> Response {
    let readiness = app.readiness().await;
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(readiness)).into_response()
}

pub(crate) async fn metrics() -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        observe::render(),
    )
        .into_response()
}

/// The search page: one static file compiled into the binary (no build
/// step, no CDN), which calls `/v1/trees` and `/v1/retrieve` like any
/// client; the page itself holds no data, so it needs no token.
pub(crate) async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:",
            ),
        ],
        include_str!("page.html"),
    )
        .into_response()
}

pub(crate) async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::document(),
    )
        .into_response()
}

pub(crate) async fn reload(State(app): State<Arc<App>>, raw: Body) -> Result<Response, ApiError> {
    let bytes = read_body(&app, raw).await?;
    let req: ReloadRequest = if bytes.iter().all(u8::is_ascii_whitespace) {
        ReloadRequest::default()
    } else {
        parse(&bytes)?
    };
    let trees = app.registry.reload(req.tree.as_deref()).await?;
    let status = if trees.iter().all(|t| t.reloaded) {
        StatusCode::OK
    } else {
        StatusCode::UNPROCESSABLE_ENTITY
    };
    Ok((status, Json(ReloadResponse { trees })).into_response())
}

/// Documents as the body of `POST /v1/trees/{name}/documents`: a JSON
/// array of records in the passages-JSONL schema (`id`, `text`, optional
/// `title`, `doc_id` — absent: the record is a document of its own, under
/// its `id` — other fields the metadata) or BEIR's (`_id`, `title`,
/// `text`), one kind per request; a corpus, or a 400 naming the element at
/// fault.
fn documents_of(bytes: &[u8]) -> Result<treenav_tree::corpus::Corpus, ApiError> {
    let records: Vec<serde_json::Map<String, serde_json::Value>> = parse(bytes)?;
    if records.is_empty() {
        return Err(ApiError::bad_field(
            "body",
            "no documents: send a non-empty array",
        ));
    }
    let beir = records[0].contains_key("_id");
    if let Some(i) = records.iter().position(|r| r.contains_key("_id") != beir) {
        return Err(ApiError::bad_field(
            "body",
            format!(
                "element {} is a {} record, element 1 a {} one: send one kind per request",
                i + 1,
                if beir {
                    "passages-JSONL (`id`)"
                } else {
                    "BEIR (`_id`)"
                },
                if beir {
                    "BEIR (`_id`)"
                } else {
                    "passages-JSONL (`id`)"
                },
            ),
        ));
    }
    let format = if beir {
        treenav_tree::corpus::Format::Beir
    } else {
        treenav_tree::corpus::Format::PassagesJsonl
    };
    // A record without `doc_id` is a document of its own, under its `id`:
    // the id a client posts is the id it deletes.
    let lines: Vec<String> = records
        .into_iter()
        .map(|mut r| {
            if !beir && !r.contains_key("doc_id") {
                if let Some(id) = r.get("id").cloned() {
                    r.insert("doc_id".into(), id);
                }
            }
            serde_json::Value::Object(r).to_string()
        })
        .collect();
    treenav_tree::corpus::load_str(
        &lines.join("\n"),
        "body",
        format,
        &treenav_tree::corpus::LoadOptions::default(),
    )
    .map_err(|e| {
        // `body:3: …` is the array's third element.
        ApiError::bad_field("body", format!("{e} (line N is the array's element N)"))
    })
}

pub(crate) async fn add_documents(
    State(app): State<Arc<App>>,
    axum::extract::Path(name): axum::extract::Path<String>,
    raw: Body,
) -> Result<Json<UpdateResponse>, ApiError> {
    let corpus = documents_of(&read_body(&app, raw).await?)?;
    Ok(Json(app.registry.update(&name, Change::Add(corpus)).await?))
}

pub(crate) async fn delete_documents(
    State(app): State<Arc<App>>,
    axum::extract::Path(name): axum::extract::Path<String>,
    raw: Body,
) -> Result<Json<UpdateResponse>, ApiError> {
    let req: DeleteDocumentsRequest = parse(&read_body(&app, raw).await?)?;
    if req.ids.is_empty() {
        return Err(ApiError::bad_field("ids", "no ids: send at least one"));
    }
    Ok(Json(
        app.registry.update(&name, Change::Remove(req.ids)).await?,
    ))
}

pub(crate) async fn compact(
    State(app): State<Arc<App>>,
    axum::extract::Path(name): axum::extract::Path<String>,
    raw: Body,
) -> Result<Json<UpdateResponse>, ApiError> {
    let bytes = read_body(&app, raw).await?;
    if !bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_field("body", "compaction takes no body"));
    }
    Ok(Json(app.registry.update(&name, Change::Compact).await?))
}

pub(crate) async fn not_found() -> ApiError {
    ApiError::not_found("no such route (see /openapi.json)")
}

pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::method_not_allowed()
}

#[cfg(test)]
mod tests {
    use super::documents_of;

    /// The id a client posts is the id it deletes; a mixed array is refused.
    #[test]
    fn a_posted_record_is_a_document_under_its_own_id() {
        let body = br#"[{"id": "vpn-setup", "title": "VPN", "text": "Connect with the client."},
                        {"id": "p2", "doc_id": "faq", "title": "FAQ", "text": "One."},
                        {"id": "p3", "doc_id": "faq", "title": "FAQ", "text": "Two."}]"#;
        let corpus = documents_of(body).expect("corpus");
        let ids: Vec<&str> = corpus.documents.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["vpn-setup", "faq"]);
        assert_eq!(corpus.documents[1].passages.len(), 2);
        let mixed = br#"[{"id": "a", "text": "x"}, {"_id": "b", "text": "y"}]"#;
        let e = format!("{:?}", documents_of(mixed).expect_err("mixed"));
        assert!(e.contains("element 2"), "{e}");
    }
}
