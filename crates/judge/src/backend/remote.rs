//! The request plumbing the HTTP backends share: where to post, the model,
//! the key, and error mapping. Retries and timeouts are `treenav-http`'s.

use crate::backend::op::{Raw, Values};
use crate::error::{Error, ErrorKind, Result};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;
use treenav_http::{ApiKey, ClientConfig, Endpoint, HttpClient};

/// A remote decision-model endpoint.
#[derive(Debug)]
pub(crate) struct Remote {
    pub(crate) client: HttpClient,
    pub(crate) url: String,
    pub(crate) model: String,
    pub(crate) key: Option<ApiKey>,
}

impl Remote {
    /// A remote at `endpoint` (a base URL, with or without `/v1`) plus
    /// `path`, for `model`, with the key read from `api_key_env` when named.
    pub(crate) fn new(
        backend: &'static str,
        endpoint: &str,
        model: &str,
        api_key_env: &Option<String>,
        path: &str,
        client: &ClientConfig,
    ) -> Result<Remote> {
        let endpoint = Endpoint::new(
            "--endpoint",
            endpoint,
            path,
            model,
            api_key_env.as_deref(),
            client.clone(),
        )
        .map_err(|e| Error::new(ErrorKind::Config, backend, e.message))?;
        Ok(Remote {
            client: endpoint.client,
            url: endpoint.url,
            model: endpoint.model,
            key: endpoint.key,
        })
    }

    /// POSTs a JSON body and decodes the reply; failures are named after `backend`.
    pub(crate) async fn post<T: DeserializeOwned>(
        &self,
        backend: &'static str,
        body: &serde_json::Value,
    ) -> Result<T> {
        self.client
            .post_json::<_, T>(&self.url, self.key.as_ref(), body)
            .await
            .map(|reply| reply.body)
            .map_err(|e| Error::http(backend, e))
    }
}

/// The usage a decisions-style reply may carry.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ReplyUsage {
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cost: Option<f64>,
}

impl ReplyUsage {
    /// The call's [`Raw`]: `values` with the reported usage (missing counts
    /// are estimated by the dispatcher).
    pub(crate) fn into_raw(self, values: Values) -> Raw {
        Raw {
            values,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens.unwrap_or(0),
            cost_usd: self.cost,
            low_confidence: 0,
            cached_input_tokens: 0,
            vectors_scored: 0,
        }
    }
}

/// Checks that answer `a` to question `id` has type `ty`: a `refusal` is a
/// [`ErrorKind::Refused`] error, any other type a malformed reply.
pub(crate) fn typed_answer<'a>(
    backend: &'static str,
    a: &'a Value,
    id: &str,
    ty: &str,
) -> Result<&'a Value> {
    match a.get("type").and_then(Value::as_str) {
        Some(t) if t == ty => Ok(a),
        Some("refusal") => Err(Error::new(
            ErrorKind::Refused,
            backend,
            format!("the model refused question `{id}`"),
        )),
        other => Err(Error::malformed(
            backend,
            format!("answer `{id}` has type {other:?}, expected `{ty}`"),
        )),
    }
}

/// Checks that a choice answer chose one of the labels offered.
pub(crate) fn offered_choice(
    backend: &'static str,
    answer: &Value,
    labels: &[String],
) -> Result<()> {
    let chosen = answer
        .get("choice")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if labels.iter().any(|l| l == chosen) {
        Ok(())
    } else {
        Err(Error::malformed(
            backend,
            format!("choice `{chosen}` was not offered"),
        ))
    }
}
