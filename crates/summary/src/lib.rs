//! Cluster summaries: extractive (class-based TF-IDF terms plus central
//! titles, offline) or one sentence per cluster from an OpenAI-compatible
//! chat endpoint, cached on disk by a hash of the cluster's members.
//! The tree's build labels its clusters with these; the update relabels
//! touched leaves with the extractive line.

#![warn(missing_docs)]

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use treenav_embed::Progress;
use treenav_http::{ApiKey, ClientConfig, Endpoint, HttpClient, HttpError};
use treenav_text::{is_displayable, stable_hash, terms};

/// Result of summarising.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors of the LLM summariser (the extractive one cannot fail).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The chat endpoint failed or is misconfigured (see `retryable()`).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// The summary cache could not be read or written.
    #[error("cannot access {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A background task failed.
    #[error("background task failed: {0}")]
    Task(String),
}

/// Terms shown in an extractive summary.
pub const SUMMARY_TERMS: usize = 6;
/// Central titles shown in an extractive summary.
pub const SUMMARY_TITLES: usize = 3;
const PROMPT_VERSION: &str = "summary-v1";

fn default_concurrency() -> usize {
    4
}
fn default_timeout() -> u64 {
    120
}

/// Which summariser to use, as it appears in a config file or on the CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SummarizerOptions {
    /// Distinctive terms plus the most central titles (offline, deterministic).
    #[default]
    Extractive,
    /// One sentence per cluster from an OpenAI-compatible chat endpoint.
    Llm {
        /// Base URL (`http://127.0.0.1:8080`) or the full chat-completions URL.
        endpoint: String,
        /// The model name.
        model: String,
        /// Environment variable holding the API key; none is sent when unset.
        /// By default, none.
        #[serde(default)]
        api_key_env: Option<String>,
        /// Folder of the summary cache. By default, `$TREENAV_CACHE_DIR/summaries`,
        /// else `~/.cache/treenav/summaries`.
        #[serde(default)]
        cache_dir: Option<PathBuf>,
        /// Requests in flight at most. By default, 4.
        #[serde(default = "default_concurrency")]
        concurrency: usize,
        /// Timeout of one request in seconds. By default, 120.
        #[serde(default = "default_timeout")]
        timeout_secs: u64,
    },
}

/// What a summariser knows of one cluster.
#[derive(Debug, Clone)]
pub struct ClusterFacts {
    /// Source ids of all documents beneath, for the cache key.
    pub member_ids: Vec<String>,
    /// Titles of its most central documents, most central first.
    pub central_titles: Vec<String>,
    /// Its most distinctive terms, best first.
    pub terms: Vec<String>,
}

/// A ready summariser.
#[derive(Debug, Clone)]
pub enum Summarizer {
    /// See [`SummarizerOptions::Extractive`].
    Extractive,
    /// See [`SummarizerOptions::Llm`].
    Llm(Arc<LlmSummarizer>),
}

/// The LLM summariser's settings.
#[derive(Debug)]
pub struct LlmSummarizer {
    client: HttpClient,
    url: String,
    model: String,
    key: Option<ApiKey>,
    cache_dir: PathBuf,
    concurrency: usize,
}

pub use treenav_embed::default_cache_dir;

/// The chat-completions URL for an endpoint given as a base or in full.
pub fn chat_url(endpoint: &str) -> String {
    treenav_http::join_url(endpoint, "/v1/chat/completions")
}

impl Summarizer {
    /// Checks the options and builds the summariser.
    pub fn new(options: &SummarizerOptions) -> Result<Summarizer> {
        match options {
            SummarizerOptions::Extractive => Ok(Summarizer::Extractive),
            SummarizerOptions::Llm {
                endpoint,
                model,
                api_key_env,
                cache_dir,
                concurrency,
                timeout_secs,
            } => {
                let endpoint = Endpoint::new(
                    "--summary-endpoint",
                    endpoint,
                    "/v1/chat/completions",
                    model,
                    api_key_env.as_deref(),
                    ClientConfig {
                        timeout: Duration::from_secs((*timeout_secs).max(1)),
                        ..ClientConfig::default()
                    },
                )
                .map_err(Error::Http)?;
                Ok(Summarizer::Llm(Arc::new(LlmSummarizer {
                    client: endpoint.client,
                    url: endpoint.url,
                    model: endpoint.model,
                    key: endpoint.key,
                    cache_dir: cache_dir
                        .clone()
                        .unwrap_or_else(|| default_cache_dir().join("summaries")),
                    concurrency: (*concurrency).max(1),
                })))
            }
        }
    }

    /// A short description for the tree's metadata.
    pub fn describe(&self) -> String {
        match self {
            Summarizer::Extractive => "extractive".into(),
            Summarizer::Llm(s) => format!("llm(model={}, url={})", s.model, s.url),
        }
    }

    /// One summary per cluster, in order.
    pub async fn summarize(
        &self,
        clusters: Vec<ClusterFacts>,
        progress: &dyn Progress,
    ) -> Result<Vec<String>> {
        match self {
            Summarizer::Extractive => {
                progress.inc(clusters.len() as u64);
                Ok(clusters.iter().map(extractive_line).collect())
            }
            Summarizer::Llm(s) => s.clone().summarize(clusters, progress).await,
        }
    }
}

/// A title on one line (see [`treenav_text::one_line`]), cut at `max_chars`.
fn shorten(title: &str, max_chars: usize) -> String {
    treenav_text::one_line(title, max_chars)
}

/// The extractive summary line: distinctive terms, then central titles.
pub fn extractive_line(facts: &ClusterFacts) -> String {
    let terms: Vec<&str> = facts
        .terms
        .iter()
        .take(SUMMARY_TERMS)
        .map(String::as_str)
        .collect();
    let titles: Vec<String> = facts
        .central_titles
        .iter()
        .filter(|t| !t.trim().is_empty())
        .take(SUMMARY_TITLES)
        .map(|t| shorten(t, 90))
        .collect();
    match (terms.is_empty(), titles.is_empty()) {
        (false, false) => format!("{} — e.g. {}", terms.join(", "), titles.join("; ")),
        (false, true) => terms.join(", "),
        (true, false) => format!("e.g. {}", titles.join("; ")),
        (true, true) => "miscellaneous documents".into(),
    }
}

/// Class-based TF-IDF over document frequencies: the most distinctive,
/// displayable terms of each group of documents.
///
/// `doc_terms[d]` are the term counts of document `d`; `groups[c]` lists the
/// documents of cluster `c`. Weight of term t in cluster c:
/// df(t, c) · ln(1 + A / df(t)), with df(t, c) the documents of c holding t,
/// df(t) those of all clusters and A the mean documents per cluster (BERTopic's
/// c-TF-IDF, counting documents rather than occurrences so that one document
/// repeating an abbreviation does not speak for its cluster).
pub fn class_tfidf(
    doc_terms: &[Vec<u32>],
    vocab: &[String],
    groups: &[Vec<usize>],
    top: usize,
) -> Vec<Vec<String>> {
    let group_df: Vec<HashMap<u32, u32>> = groups
        .iter()
        .map(|g| {
            let mut df: HashMap<u32, u32> = HashMap::new();
            for &d in g {
                if let Some(ids) = doc_terms.get(d) {
                    for t in ids {
                        *df.entry(*t).or_insert(0) += 1;
                    }
                }
            }
            df
        })
        .collect();
    let mut total: HashMap<u32, u64> = HashMap::new();
    for df in &group_df {
        for (t, c) in df {
            *total.entry(*t).or_insert(0) += u64::from(*c);
        }
    }
    let docs: usize = groups.iter().map(Vec::len).sum();
    let mean = docs as f64 / groups.len().max(1) as f64;
    group_df
        .iter()
        .zip(groups)
        .map(|(df, group)| {
            // In a cluster of several documents, a term of one document only
            // does not describe the cluster.
            let min_df = if group.len() >= 4 { 2 } else { 1 };
            let mut scored: Vec<(f64, &str)> = df
                .iter()
                .filter_map(|(t, c)| {
                    let term = vocab.get(*t as usize)?;
                    if !is_displayable(term) || *c < min_df {
                        return None;
                    }
                    let f = total.get(t).copied().unwrap_or(1).max(1) as f64;
                    Some((f64::from(*c) * (1.0 + mean / f).ln(), term.as_str()))
                })
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            scored
                .into_iter()
                .take(top)
                .map(|(_, t)| t.to_string())
                .collect()
        })
        .collect()
}

/// Interns the terms of each document, given as its pieces of text:
/// (each document's distinct term ids, sorted; the vocabulary). Only which
/// terms a document has matters to [`class_tfidf`], so a document costs 4
/// bytes per distinct term.
pub fn count_terms<D, S>(docs: D) -> (Vec<Vec<u32>>, Vec<String>)
where
    D: IntoIterator,
    D::Item: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut vocab = Vec::new();
    let sets = docs
        .into_iter()
        .map(|pieces| {
            let mut ids: Vec<u32> = Vec::new();
            for piece in pieces {
                for term in terms(piece.as_ref()) {
                    let id = match index.get(&term) {
                        Some(id) => *id,
                        None => {
                            let id = vocab.len() as u32;
                            vocab.push(term.clone());
                            index.insert(term, id);
                            id
                        }
                    };
                    ids.push(id);
                }
            }
            ids.sort_unstable();
            ids.dedup();
            ids.shrink_to_fit();
            ids
        })
        .collect();
    (sets, vocab)
}

#[derive(Deserialize)]
struct ChatReply {
    choices: Vec<ChatChoice>,
}

#[derive(Deserialize)]
struct ChatChoice {
    message: ChatMessage,
}

#[derive(Deserialize)]
struct ChatMessage {
    #[serde(default)]
    content: Option<String>,
}

impl LlmSummarizer {
    fn cache_path(&self, facts: &ClusterFacts) -> PathBuf {
        let mut ids = facts.member_ids.clone();
        ids.sort();
        let key = format!("{PROMPT_VERSION}\n{}\n{}", self.model, ids.join("\n"));
        self.cache_dir
            .join(format!("{:016x}.txt", stable_hash(key.as_bytes())))
    }

    fn prompt(facts: &ClusterFacts) -> String {
        let titles: Vec<String> = facts
            .central_titles
            .iter()
            .take(20)
            .map(|t| format!("- {}", shorten(t, 120)))
            .collect();
        format!(
            "These documents form one topic cluster of a search index. Most central titles:\n{}\nDistinctive terms: {}.\n\nWrite ONE sentence of at most 25 words saying what this cluster covers, naming its concrete topics. Reply with the sentence only.",
            titles.join("\n"),
            facts.terms.join(", ")
        )
    }

    async fn one(&self, facts: &ClusterFacts) -> Result<String> {
        let path = self.cache_path(facts);
        let kind = treenav_files::Kind::new("summary cache", 64 << 10);
        if let Ok(cached) = treenav_files::read_to_string(&path, &kind) {
            if !cached.trim().is_empty() {
                return Ok(cached.trim().to_string());
            }
        }
        let body = serde_json::json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": "You write short, factual one-sentence summaries."},
                {"role": "user", "content": Self::prompt(facts)}
            ],
            "temperature": 0,
            "max_tokens": 80,
        });
        let reply = self
            .client
            .post_json::<_, ChatReply>(&self.url, self.key.as_ref(), &body)
            .await
            .map_err(Error::Http)?;
        let text = reply
            .body
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .map(|t| {
                t.trim()
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .trim_matches('"')
                    .trim()
                    .to_string()
            })
            .unwrap_or_default();
        if text.is_empty() {
            return Err(Error::Http(HttpError::malformed(
                &self.url,
                "the chat reply holds no text",
            )));
        }
        treenav_files::atomic::write(&path, text.as_bytes()).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        Ok(text)
    }

    async fn summarize(
        self: Arc<Self>,
        clusters: Vec<ClusterFacts>,
        progress: &dyn Progress,
    ) -> Result<Vec<String>> {
        std::fs::create_dir_all(&self.cache_dir).map_err(|source| Error::Io {
            path: self.cache_dir.clone(),
            source,
        })?;
        let semaphore = Arc::new(tokio::sync::Semaphore::new(self.concurrency));
        let mut set = tokio::task::JoinSet::new();
        for (i, facts) in clusters.into_iter().enumerate() {
            let me = self.clone();
            let semaphore = semaphore.clone();
            set.spawn(async move {
                let _permit = semaphore
                    .acquire_owned()
                    .await
                    .map_err(|e| Error::Task(e.to_string()))?;
                me.one(&facts).await.map(|s| (i, s))
            });
        }
        let mut out: Vec<Option<String>> = vec![None; set.len()];
        while let Some(joined) = set.join_next().await {
            let (i, s) = joined.map_err(|e| Error::Task(e.to_string()))??;
            out[i] = Some(s);
            progress.inc(1);
        }
        Ok(out.into_iter().map(Option::unwrap_or_default).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_tfidf_prefers_distinctive_terms() {
        let texts: Vec<String> = [
            "insulin glucose cells study",
            "insulin diabetes study",
            "football goal study",
            "football league match study",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let (counts, vocab) = count_terms(texts.iter().map(|t| [t]));
        let terms = class_tfidf(&counts, &vocab, &[vec![0, 1], vec![2, 3]], 2);
        assert_eq!(terms[0][0], "insulin");
        assert_eq!(terms[1][0], "football");
    }

    #[test]
    fn extractive_line_shape() {
        let f = ClusterFacts {
            member_ids: vec!["1".into()],
            central_titles: vec!["Insulin and you".into(), "".into()],
            terms: vec!["insulin".into(), "glucose".into()],
        };
        assert_eq!(
            extractive_line(&f),
            "insulin, glucose — e.g. Insulin and you"
        );
    }

    #[test]
    fn urls() {
        assert_eq!(chat_url("http://h:1"), "http://h:1/v1/chat/completions");
        assert_eq!(chat_url("http://h:1/v1"), "http://h:1/v1/chat/completions");
    }
}
