//! The wire types of the HTTP API (version [`API_VERSION`]): what each
//! route takes and gives, with their OpenAPI schemas. The CLI prints the
//! same types for `query --json` and `prune --json`.

use serde::{Deserialize, Serialize};
use treenav_judge::Usage;
use treenav_navigator::{RankedPassage, Retrieval, Trace};
use treenav_prune::input::ChunkIn;
use treenav_prune::Pruned;
use utoipa::ToSchema;

/// The version of the JSON this API speaks; bumped on a breaking change.
pub const API_VERSION: u32 = 1;

/// `POST /v1/retrieve`: a question for one tree, and any navigator
/// setting by name (each `treenav query` flag's name with `_`: `top`,
/// `strategy`, `judge_budget`, `explore_budget`, …; listed with their
/// ranges and defaults in this schema). Settings not given take the
/// server's (its `--top`, `--strategy`, … flags).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
pub struct RetrieveRequest {
    /// The tree's name (see `GET /v1/trees`).
    pub tree: String,
    /// The question.
    pub query: String,
    /// Only documents whose metadata passes: an object of field → value
    /// (equal) or field → operators, all of which must hold, e.g.
    /// `{"source": "wiki", "year": {"gte": 2019, "lt": 2022}, "tenant":
    /// {"in": ["a", "b"]}, "lang": {"ne": "de"}}`. Operators: `eq`, `ne`
    /// (also true when the field is missing), `in`, `gt`, `gte`, `lt`,
    /// `lte` (bounds are numbers or ISO 8601 dates, compared as text). A
    /// field holding a list passes when one item does; `a.b` reaches into
    /// nested objects. Nothing else is judged or returned; a filter nothing
    /// passes gives no passage.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub filter: Option<serde_json::Value>,
    /// Include the trace: how the passages were found (rounds or levels).
    #[serde(default)]
    pub trace: bool,
    /// The navigator settings given, by name (the schema lists each as a
    /// property of its own, added from the navigator's list). A name that
    /// is no setting is refused, naming it.
    #[serde(flatten)]
    #[schema(ignore)]
    pub settings: serde_json::Map<String, serde_json::Value>,
}

/// The passages found, best first: `treenav query --json`'s output.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RetrieveResponse {
    /// [`API_VERSION`].
    pub version: u32,
    /// The tree searched.
    pub tree: String,
    /// The question.
    pub query: String,
    /// Passages, best first: the reranked shortlist, then the rest. Their
    /// `score` is one probability scale, non-increasing down the list.
    pub passages: Vec<RankedPassage>,
    /// Fewer passages than `top` exist within reach: the search widened
    /// until nothing was left.
    pub exhausted: bool,
    /// What the query cost (judge calls, tokens, USD).
    pub usage: Usage,
    /// Candidates shown to the judge in all.
    pub candidates_judged: usize,
    /// Wall time of the retrieval, ms.
    pub latency_ms: f64,
    /// The tree's update generation answered from (0: as built; one more
    /// per update since its file was written).
    pub generation: u64,
    /// How the passages were found (when asked for).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub trace: Option<Trace>,
}

impl RetrieveResponse {
    /// The response for a retrieval from the tree named `tree`.
    pub fn new(
        tree: &str,
        found: Retrieval,
        with_trace: bool,
        generation: u64,
    ) -> RetrieveResponse {
        RetrieveResponse {
            version: API_VERSION,
            tree: tree.to_string(),
            query: found.query,
            passages: found.passages,
            exhausted: found.exhausted,
            usage: found.trace.usage.clone(),
            candidates_judged: found.trace.candidates_judged,
            latency_ms: found.trace.latency_ms,
            generation,
            trace: with_trace.then_some(found.trace),
        }
    }
}

/// The most requests one `POST /v1/retrieve/batch` carries.
pub const MAX_BATCH: usize = 64;

/// `POST /v1/retrieve/batch`: several retrievals in one call.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    /// The requests (1–64), each as `POST /v1/retrieve` takes it; they
    /// run a few at a time, each under its own deadline.
    pub requests: Vec<RetrieveRequest>,
}

/// One answer of a batch: the retrieval, or the error the request would
/// have got alone (with its HTTP status).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum BatchItem {
    /// The request's retrieval.
    Found(Box<RetrieveResponse>),
    /// The request's error.
    Failed {
        /// The status the request alone would have got.
        status: u16,
        /// What went wrong.
        error: ErrorDetail,
    },
}

/// `POST /v1/retrieve/batch`'s answer: one item per request, in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct BatchResponse {
    /// Response format version.
    pub version: u32,
    /// One per request, in the order sent.
    pub results: Vec<BatchItem>,
}

/// `POST /v1/prune`: keep only the chunks the answer needs.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PruneRequest {
    /// The question.
    pub question: String,
    /// The chunks, best first: strings or `{"id", "text"}` objects.
    pub chunks: Vec<ChunkIn>,
    /// `grade` (default), `keep`, `budget-select` or `top-n`.
    #[serde(default)]
    pub strategy: Option<String>,
    /// grade: lowest expected grade kept (1–5, default 4); keep and
    /// budget-select: lowest P(yes) (0–1, default 0.5).
    #[serde(default)]
    pub threshold: Option<f64>,
    /// budget-select: chunks the model may add (default 3).
    #[serde(default)]
    pub extra: Option<usize>,
    /// top-n: chunks kept (default 5).
    #[serde(default)]
    pub n: Option<usize>,
    /// The first k chunks always pass (default 1).
    #[serde(default)]
    pub keep_top_k: Option<usize>,
    /// Tokens the kept chunks may use at most.
    #[serde(default)]
    pub token_budget: Option<usize>,
    /// Order kept chunks strongest at the start and the end.
    #[serde(default)]
    pub edge_placement: bool,
}

/// What pruning kept: `treenav prune --json`'s output.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PruneResponse {
    /// [`API_VERSION`].
    pub version: u32,
    /// The pruner's result.
    #[serde(flatten)]
    pub pruned: Pruned,
}

impl PruneResponse {
    /// The response for a pruner's result.
    pub fn new(pruned: Pruned) -> PruneResponse {
        PruneResponse {
            version: API_VERSION,
            pruned,
        }
    }
}

/// One served tree, as `GET /v1/trees` lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TreeInfo {
    /// The name requests use.
    pub name: String,
    /// The file it was loaded from.
    pub path: String,
    /// Its format version.
    pub format_version: u32,
    /// Node counts.
    pub documents: usize,
    /// Passages.
    pub passages: usize,
    /// Cluster nodes.
    pub clusters: usize,
    /// The corpus source given to the build.
    pub source: String,
    /// The embedder used for clustering.
    pub embedder: String,
    /// The summariser.
    pub summarizer: String,
    /// The builder's version.
    pub built_by: String,
    /// Seconds since the Unix epoch when this copy was loaded.
    pub loaded_at: u64,
    /// Its update generation (0: as built; one more per update).
    pub generation: u64,
}

/// `DELETE /v1/trees/{name}/documents`: the ids of the documents to remove.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteDocumentsRequest {
    /// Document ids.
    pub ids: Vec<String>,
}

/// The outcome of `POST` or `DELETE /v1/trees/{name}/documents` and of
/// `POST /v1/trees/{name}/compact` (generation 0: the updates are folded
/// into the tree file; counts 0).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UpdateResponse {
    /// [`API_VERSION`].
    pub version: u32,
    /// The tree.
    pub tree: String,
    /// Its update generation now; requests from now on are answered from it.
    pub generation: u64,
    /// Documents added (new ids).
    pub added: usize,
    /// Documents replaced (ids it had).
    pub replaced: usize,
    /// Documents removed.
    pub removed: usize,
    /// Ids asked to be removed that it does not have.
    pub not_found: Vec<String>,
    /// Documents sent exactly as the tree holds them: left as they are.
    pub unchanged: usize,
    /// Documents it holds now.
    pub documents: usize,
    /// Whether the tree's documents had to be embedded again (a tree saved
    /// without its vectors), as `treenav add` says.
    pub embedded_again: bool,
    /// Passages the tree held without a vector of their own (added by an
    /// update written before deltas kept them), embedded by this add, once.
    pub passages_embedded_again: usize,
}

/// `GET /v1/trees`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TreesResponse {
    /// [`API_VERSION`].
    pub version: u32,
    /// The trees, by name.
    pub trees: Vec<TreeInfo>,
}

/// `POST /v1/admin/reload`: which tree to reload (all when absent).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReloadRequest {
    /// The tree's name; all trees when absent.
    #[serde(default)]
    pub tree: Option<String>,
}

/// The outcome of reloading one tree.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReloadOutcome {
    /// The tree.
    pub name: String,
    /// Whether the new file now serves.
    pub reloaded: bool,
    /// Why not (the old copy keeps serving).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `POST /v1/admin/reload`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ReloadResponse {
    /// One outcome per tree asked for.
    pub trees: Vec<ReloadOutcome>,
}

/// `GET /readyz`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Readiness {
    /// Whether requests can be served.
    pub ready: bool,
    /// Trees loaded.
    pub trees: usize,
    /// The judge's backend.
    pub judge: String,
    /// Whether the judge answered the last checkup.
    pub judge_ok: bool,
    /// Why not ready, or the checkup's warnings.
    pub problems: Vec<String>,
    /// Seconds since the judge's last checkup.
    pub checked_secs_ago: f64,
}

/// Every error's body: `{"error": {"code", "message", "field"?}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// An error.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable code: `bad_request`, `payload_too_large`, `unauthorized`,
    /// `not_found`, `method_not_allowed`, `overloaded`, `deadline`, `judge`, `reload`, `internal`.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// The request field at fault, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}
