//! Client of any OpenAI-compatible `POST /v1/embeddings` server.

use crate::{Error, Progress, Result};
use ndarray::Array2;
use serde::Deserialize;
use treenav_http::{ApiKey, HttpClient};

#[derive(Deserialize)]
struct EmbeddingReply {
    data: Vec<EmbeddingItem>,
}

#[derive(Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

/// The embeddings URL for an endpoint given as a base (`http://host:port`,
/// `…/v1`) or as the full URL.
pub fn embeddings_url(endpoint: &str) -> String {
    treenav_http::join_url(endpoint, "/v1/embeddings")
}

/// Embeds texts in batches; rows come back L2-normalised, in input order.
pub async fn embed(
    client: &HttpClient,
    url: &str,
    model: &str,
    key: Option<&ApiKey>,
    batch_size: usize,
    texts: &[String],
    progress: &dyn Progress,
) -> Result<Array2<f32>> {
    let mut rows: Vec<Vec<f32>> = Vec::with_capacity(texts.len());
    for batch in texts.chunks(batch_size.max(1)) {
        let body = serde_json::json!({ "model": model, "input": batch });
        let reply = client
            .post_json::<_, EmbeddingReply>(url, key, &body)
            .await
            .map_err(Error::Http)?;
        let mut data = reply.body.data;
        if data.len() != batch.len() {
            return Err(Error::Http(treenav_http::HttpError::malformed(
                url,
                format!("asked for {} embeddings, got {}", batch.len(), data.len()),
            )));
        }
        if data.iter().all(|d| d.index.is_some()) {
            data.sort_by_key(|d| d.index);
        }
        for (i, item) in data.into_iter().enumerate() {
            if item.index.is_some_and(|ix| ix != i) {
                return Err(Error::Http(treenav_http::HttpError::malformed(
                    url,
                    "embedding indices are not 0..n",
                )));
            }
            rows.push(item.embedding);
        }
        progress.inc(batch.len() as u64);
    }
    let dims = rows.first().map(Vec::len).unwrap_or(0);
    if dims == 0 && !rows.is_empty() {
        return Err(Error::Http(treenav_http::HttpError::malformed(
            url,
            "empty embedding vector",
        )));
    }
    let mut out = Array2::<f32>::zeros((rows.len(), dims));
    for (i, row) in rows.iter().enumerate() {
        if row.len() != dims {
            return Err(Error::Http(treenav_http::HttpError::malformed(
                url,
                format!(
                    "embedding {i} has {} dimensions, the first had {dims}",
                    row.len()
                ),
            )));
        }
        if row.iter().any(|x| !x.is_finite()) {
            return Err(Error::Http(treenav_http::HttpError::malformed(
                url,
                format!("embedding {i} holds a non-finite number"),
            )));
        }
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        let scale = if norm > 0.0 { 1.0 / norm } else { 0.0 };
        for (dst, x) in out.row_mut(i).iter_mut().zip(row) {
            *dst = x * scale;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[test]
    fn url_forms() {
        use super::embeddings_url as u;
        assert_eq!(u("http://h:1"), "http://h:1/v1/embeddings");
        assert_eq!(u("http://h:1/v1/"), "http://h:1/v1/embeddings");
        assert_eq!(u("http://h:1/v1/embeddings"), "http://h:1/v1/embeddings");
    }
}
