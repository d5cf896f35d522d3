//! The OpenAPI document (`GET /openapi.json`), generated from the wire
//! types in [`crate::api`] so a client in any language can be generated.

use crate::api::*;
use std::sync::OnceLock;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "treenav",
        description = "Retrieval by decision-model tree navigation, and context pruning.",
        license(name = "MIT OR Apache-2.0")
    ),
    paths(retrieve, retrieve_batch, prune, trees, reload, add_documents, delete_documents, compact, healthz, readyz, metrics),
    components(schemas(
        RetrieveRequest, RetrieveResponse, BatchRequest, BatchResponse, BatchItem, PruneRequest, PruneResponse, TreesResponse, TreeInfo,
        ReloadRequest, ReloadResponse, ReloadOutcome, Readiness, ErrorBody, ErrorDetail,
        DeleteDocumentsRequest, UpdateResponse,
        treenav_navigator::Strategy
    )),
    modifiers(&BearerAuth, &Settings)
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The navigator's settings as the retrieve request's properties, from
/// the navigator's one list (names, help, ranges, defaults): a setting a
/// strategy declares is documented with no edit here.
struct Settings;

impl utoipa::Modify for Settings {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{schema::Schema, RefOr};
        let defaults = match serde_json::to_value(treenav_navigator::NavigatorConfig::default()) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        let components = openapi.components.get_or_insert_with(Default::default);
        let Some(RefOr::T(Schema::Object(request))) = components.schemas.get_mut("RetrieveRequest")
        else {
            return;
        };
        for (_, setting) in treenav_navigator::settings::all().filter(|(_, s)| s.public) {
            let default = defaults.get(setting.name).cloned();
            request.properties.insert(
                setting.name.to_string(),
                setting_schema(setting, default).into(),
            );
        }
    }
}

/// One setting's schema: its JSON type, range, help and default.
fn setting_schema(
    setting: &treenav_navigator::settings::Setting,
    default: Option<serde_json::Value>,
) -> utoipa::openapi::schema::Schema {
    use treenav_navigator::settings::Kind;
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    let of = |t: Type| {
        ObjectBuilder::new()
            .schema_type(t)
            .description(Some(setting.help))
            .default(default.clone())
    };
    let nullable = |t: Type| {
        ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                t,
                Type::Null,
            ]))
            .description(Some(setting.help))
    };
    let object = match setting.kind {
        Kind::Count { min, max } => of(Type::Integer).minimum(Some(min)).maximum(Some(max)),
        Kind::Number { min, max } => of(Type::Number).minimum(Some(min)).maximum(Some(max)),
        Kind::Gap { max } => nullable(Type::Number)
            .minimum(Some(0.0))
            .maximum(Some(max))
            .default(default),
        Kind::Seconds => nullable(Type::Number)
            .exclusive_minimum(Some(0.0))
            .maximum(Some(treenav_judge::checked::MAX_SECONDS)),
        Kind::Usd => nullable(Type::Number)
            .minimum(Some(0.0))
            .maximum(Some(treenav_judge::checked::MAX_USD)),
        Kind::Switch => of(Type::Boolean),
        Kind::Choice(names) => of(Type::String).enum_values(Some(names.iter().copied())),
        Kind::Counts { min, max, most } => {
            let item = ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(min))
                .maximum(Some(max));
            return ArrayBuilder::new()
                .items(item.build())
                .max_items(Some(most))
                .description(Some(setting.help))
                .default(default)
                .into();
        }
    };
    object.into()
}

/// The document as JSON text, built once.
pub(crate) fn document() -> String {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        ApiDoc::openapi().to_pretty_json().unwrap_or_else(|e| {
            format!("{{\"error\": \"cannot render the OpenAPI document: {e}\"}}")
        })
    })
    .clone()
}

// Path declarations for the document (the handlers live in `routes`).

/// Ranked passages for a question, from one tree.
#[utoipa::path(post, path = "/v1/retrieve", request_body = RetrieveRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, body = RetrieveResponse),
        (status = 400, body = ErrorBody, description = "a field is invalid (named in `field`)"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "no such tree"),
        (status = 413, body = ErrorBody), (status = 502, body = ErrorBody, description = "the judge failed"),
        (status = 503, body = ErrorBody, description = "overloaded; see Retry-After"),
        (status = 504, body = ErrorBody, description = "the request deadline passed")))]
#[allow(dead_code)]
fn retrieve() {}

/// Several retrievals in one call: each answered as `/v1/retrieve` would,
/// a few at a time, in order; a request that fails gets its status and
/// error in its place and the rest are answered.
#[utoipa::path(post, path = "/v1/retrieve/batch", request_body = BatchRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, body = BatchResponse),
        (status = 400, body = ErrorBody, description = "not 1 to 64 requests, or a body that does not parse"),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody)))]
#[allow(dead_code)]
fn retrieve_batch() {}

/// Keep only the chunks the answer needs.
#[utoipa::path(post, path = "/v1/prune", request_body = PruneRequest,
    security((), ("bearer" = [])),
    responses(
        (status = 200, body = PruneResponse), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 413, body = ErrorBody),
        (status = 502, body = ErrorBody), (status = 503, body = ErrorBody),
        (status = 504, body = ErrorBody)))]
#[allow(dead_code)]
fn prune() {}

/// The served trees.
#[utoipa::path(get, path = "/v1/trees", security((), ("bearer" = [])),
    responses((status = 200, body = TreesResponse), (status = 401, body = ErrorBody)))]
#[allow(dead_code)]
fn trees() {}

/// Reload one tree (or all) from its file; a bad file is refused and the
/// old copy keeps serving.
#[utoipa::path(post, path = "/v1/admin/reload", request_body(content = ReloadRequest, description = "optional"),
    security((), ("bearer" = [])),
    responses((status = 200, body = ReloadResponse), (status = 422, body = ReloadResponse, description = "a file was refused"),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody)))]
#[allow(dead_code)]
fn reload() {}

/// Add documents to a tree (ids it has are replaced): a JSON array of
/// passages-JSONL records (`id`, `text`, optional `title`, `doc_id`, other
/// fields metadata) or BEIR records (`_id`, `title`, `text`).
#[utoipa::path(post, path = "/v1/trees/{name}/documents",
    params(("name" = String, Path, description = "the tree")),
    request_body(content = Vec<serde_json::Value>, description = "the documents"),
    security((), ("bearer" = [])),
    responses((status = 200, body = UpdateResponse), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody, description = "no such tree"),
        (status = 409, body = ErrorBody, description = "another update is running"),
        (status = 413, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "the tree needs an embedder the service lacks")))]
#[allow(dead_code)]
fn add_documents() {}

/// Remove documents from a tree by id (ids it lacks are reported).
#[utoipa::path(delete, path = "/v1/trees/{name}/documents",
    params(("name" = String, Path, description = "the tree")),
    request_body = DeleteDocumentsRequest,
    security((), ("bearer" = [])),
    responses((status = 200, body = UpdateResponse), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)))]
#[allow(dead_code)]
fn delete_documents() {}

/// Fold a tree's updates into a new tree file (as `treenav compact`).
#[utoipa::path(post, path = "/v1/trees/{name}/compact",
    params(("name" = String, Path, description = "the tree")),
    security((), ("bearer" = [])),
    responses((status = 200, body = UpdateResponse), (status = 400, body = ErrorBody),
        (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody)))]
#[allow(dead_code)]
fn compact() {}

/// The process is up.
#[utoipa::path(get, path = "/healthz", responses((status = 200, description = "up")))]
#[allow(dead_code)]
fn healthz() {}

/// Trees loaded and the judge answering (a cached checkup).
#[utoipa::path(get, path = "/readyz",
    responses((status = 200, body = Readiness), (status = 503, body = Readiness)))]
#[allow(dead_code)]
fn readyz() {}

/// Prometheus metrics (text format).
#[utoipa::path(get, path = "/metrics", security((), ("bearer" = [])),
    responses((status = 200, content_type = "text/plain", body = String)))]
#[allow(dead_code)]
fn metrics() {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    /// Every route the router has is in the document, and nothing else:
    /// the routes are read from the router's source.
    #[test]
    fn the_document_lists_every_route_of_the_router() {
        let source = include_str!("lib.rs");
        let routed: BTreeSet<String> = source
            .split(".route(")
            .skip(1)
            .filter_map(|rest| rest.trim_start().strip_prefix('"')?.split('"').next())
            // The document itself and the search page are not API routes.
            .filter(|p| *p != "/openapi.json" && *p != "/")
            .map(str::to_string)
            .collect();
        assert!(routed.len() >= 9, "{routed:?}");
        let doc: serde_json::Value = serde_json::from_str(&super::document()).expect("json");
        let documented: BTreeSet<String> = doc["paths"]
            .as_object()
            .expect("paths")
            .keys()
            .cloned()
            .collect();
        assert_eq!(routed, documented);
        let documents = &doc["paths"]["/v1/trees/{name}/documents"];
        assert!(documents["post"].is_object() && documents["delete"].is_object());
    }

    /// Every public navigator setting is a property of the retrieve
    /// request, with its help and range; library-only ones are not.
    #[test]
    fn the_request_lists_every_setting() {
        let doc: serde_json::Value = serde_json::from_str(&super::document()).expect("json");
        let request = &doc["components"]["schemas"]["RetrieveRequest"]["properties"];
        for (_, setting) in treenav_navigator::settings::all() {
            let property = &request[setting.name];
            match setting.public {
                true => assert_eq!(property["description"], setting.help, "{}", setting.name),
                false => assert!(property.is_null(), "{}", setting.name),
            }
        }
        assert_eq!(request["judge_budget"]["maximum"], 100_000);
        assert_eq!(request["strategy"]["enum"][0], "best-first");
        assert_eq!(request["budgets"]["items"]["minimum"], 1);
        assert!(request["settings"].is_null() && request["query"].is_object());
    }
}
