//! Client of any OpenAI-compatible `POST /v1/embeddings` server.

use crate::{Error, Progress, Result};
use ndarray::Array2;
use serde::Deserialize;
use std::path::Path;
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

/// Where and how to reach the embeddings server.
pub(crate) struct Remote<'a> {
    pub client: &'a HttpClient,
    pub url: &'a str,
    pub model: &'a str,
    pub key: Option<&'a ApiKey>,
    /// Texts per request.
    pub batch_size: usize,
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Folder of finished batches, by content hash (none: no cache).
    pub cache: Option<&'a Path>,
}

/// Embeds texts in batches, `concurrency` requests at a time; rows come
/// back L2-normalised, in input order. With a cache folder every finished
/// batch is stored under the hash of (url, model, its texts) and read back
/// instead of asked again, so a build that crashed resumes where it was.
pub async fn embed(
    remote: &Remote<'_>,
    texts: &[String],
    progress: &dyn Progress,
) -> Result<Array2<f32>> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    // The futures are made up front (not in `Stream::map`), which keeps the
    // whole future `Send` for callers that spawn it.
    let jobs: Vec<_> = texts
        .chunks(remote.batch_size.max(1))
        .map(|batch| async move {
            let rows = cached_batch(remote, batch).await?;
            progress.inc(batch.len() as u64);
            Ok::<_, Error>(rows)
        })
        .collect();
    let batches: Vec<Vec<Vec<f32>>> = stream::iter(jobs)
        .buffered(remote.concurrency.max(1))
        .try_collect()
        .await?;
    let rows: Vec<Vec<f32>> = batches.into_iter().flatten().collect();
    normalised(remote.url, rows)
}

/// One batch: from the cache, or asked and then cached.
async fn cached_batch(remote: &Remote<'_>, batch: &[String]) -> Result<Vec<Vec<f32>>> {
    let file = remote
        .cache
        .map(|dir| dir.join(format!("{:032x}.emb", batch_key(remote, batch))));
    if let Some(rows) = file.as_deref().and_then(|f| cache::read(f, batch.len())) {
        return Ok(rows);
    }
    let rows = ask(remote, batch).await?;
    if let Some(file) = &file {
        cache::write(file, &rows)?;
    }
    Ok(rows)
}

/// The cache key of a batch: XXH3-128 of the url, the model and each text
/// with its length.
fn batch_key(remote: &Remote<'_>, batch: &[String]) -> u128 {
    let mut h = twox_hash::XxHash3_128::new();
    for part in [CACHE_VERSION, remote.url, remote.model] {
        h.write(&(part.len() as u64).to_le_bytes());
        h.write(part.as_bytes());
    }
    for text in batch {
        h.write(&(text.len() as u64).to_le_bytes());
        h.write(text.as_bytes());
    }
    h.finish_128()
}

/// Changes when the cached bytes' meaning changes.
const CACHE_VERSION: &str = "treenav-embeddings-1";

/// One request for one batch; the rows in input order, as the server sent
/// them (not yet normalised).
async fn ask(remote: &Remote<'_>, batch: &[String]) -> Result<Vec<Vec<f32>>> {
    let url = remote.url;
    let body = serde_json::json!({ "model": remote.model, "input": batch });
    let reply = remote
        .client
        .post_json::<_, EmbeddingReply>(url, remote.key, &body)
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
    let mut rows = Vec::with_capacity(data.len());
    for (i, item) in data.into_iter().enumerate() {
        if item.index.is_some_and(|ix| ix != i) {
            return Err(Error::Http(treenav_http::HttpError::malformed(
                url,
                "embedding indices are not 0..n",
            )));
        }
        rows.push(item.embedding);
    }
    Ok(rows)
}

/// The rows as one matrix, each L2-normalised; all the same width, finite.
fn normalised(url: &str, rows: Vec<Vec<f32>>) -> Result<Array2<f32>> {
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

/// Finished batches on disk: magic, rows, dimensions, then the rows as
/// little-endian f32. Written to a temp file and renamed, so a crash never
/// leaves half a batch under its final name.
mod cache {
    use crate::{Error, Result};
    use std::path::Path;

    const MAGIC: &[u8; 8] = treenav_files::magic::EMBEDDING_CACHE;

    /// The rows of a cached batch of `rows` texts; `None` when absent or not
    /// a whole batch of that size (then it is asked again and rewritten).
    pub(super) fn read(file: &Path, rows: usize) -> Option<Vec<Vec<f32>>> {
        let kind = treenav_files::Kind::new("embedding cache", 1 << 30).with_magic(MAGIC);
        let bytes = treenav_files::read(file, &kind).ok()?;
        let header = bytes.get(..16)?;
        if &header[..8] != MAGIC {
            return None;
        }
        let n = u32::from_le_bytes(header[8..12].try_into().ok()?) as usize;
        let dims = u32::from_le_bytes(header[12..16].try_into().ok()?) as usize;
        if n != rows || bytes.len() != 16 + n.checked_mul(dims)?.checked_mul(4)? {
            return None;
        }
        let values: Vec<f32> = bytes[16..]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Some(
            values
                .chunks(dims.max(1))
                .map(<[f32]>::to_vec)
                .take(n)
                .collect(),
        )
    }

    pub(super) fn write(file: &Path, rows: &[Vec<f32>]) -> Result<()> {
        let io = |source| Error::Io {
            path: file.to_path_buf(),
            source,
        };
        let dims = rows.first().map_or(0, Vec::len);
        if rows.iter().any(|r| r.len() != dims) {
            return Ok(()); // refused later, when the matrix is assembled
        }
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut bytes = Vec::with_capacity(16 + rows.len() * dims * 4);
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(rows.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&(dims as u32).to_le_bytes());
        for x in rows.iter().flatten() {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        treenav_files::atomic::write(file, &bytes).map_err(io)
    }
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
