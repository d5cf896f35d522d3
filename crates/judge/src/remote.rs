//! The request plumbing the HTTP backends share: where to post, the model,
//! the key, and error mapping. Retries and timeouts are `treenav-http`'s.

use crate::error::{Error, Result};
use serde::de::DeserializeOwned;
use treenav_http::{ApiKey, HttpClient};

/// A remote decision-model endpoint.
#[derive(Debug)]
pub(crate) struct Remote {
    pub(crate) client: HttpClient,
    pub(crate) url: String,
    pub(crate) model: String,
    pub(crate) key: Option<ApiKey>,
}

impl Remote {
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
