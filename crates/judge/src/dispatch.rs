//! The dispatcher: limits, tournament, cache, concurrency, deadline, usage.

use crate::backend::Limits;
use crate::backend::{text_key, Backend, CorpusStats, Op, OpKind, Raw, Values};
use crate::checked;
use crate::error::{Error, ErrorKind, Result};
use crate::options::JudgeOptions;
use crate::render::{call_tokens, split_batches};
use crate::{
    confidence, expected_level, normalize, Candidate, Choice, Grade, Grades, Judgments, Scale,
    Usage,
};
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tracing::Instrument;
use treenav_http::{ClientConfig, RetryPolicy};
use treenav_text::fingerprint;

#[derive(Debug)]
struct Inner {
    options: JudgeOptions,
    backend: Box<dyn Backend>,
    kind: &'static str,
    model: String,
    limits: Limits,
    semaphore: Semaphore,
    cache: Option<moka::future::Cache<u128, Arc<Raw>>>,
    deadline: Option<Duration>,
    price_in: f64,
    price_out: f64,
}

/// A decision model behind the dispatcher. Cheap to clone; share it freely.
#[derive(Debug, Clone)]
pub struct Judge {
    inner: Arc<Inner>,
}

/// The dispatcher's numbers, checked.
struct CheckedDispatch {
    timeout: Duration,
    deadline: Option<Duration>,
    max_reply_bytes: usize,
}

/// Range checks of the dispatcher's numbers, once, where they enter.
fn check_dispatch(d: &crate::options::DispatchOptions) -> Result<CheckedDispatch> {
    let config = |e: checked::OutOfRange| Error::config(e.to_string());
    checked::count("dispatch.concurrency", d.concurrency, 1..=4096).map_err(config)?;
    checked::count("dispatch.max_retries", d.max_retries, 0..=100).map_err(config)?;
    checked::count("dispatch.cache_capacity", d.cache_capacity, 0..=100_000_000).map_err(config)?;
    let max_reply_bytes = checked::count(
        "dispatch.max_reply_bytes",
        d.max_reply_bytes,
        1024..=1 << 32,
    )
    .map_err(config)?;
    let timeout = checked::seconds("dispatch.timeout_secs", d.timeout_secs).map_err(config)?;
    let deadline = d
        .deadline_secs
        .map(|s| checked::seconds("dispatch.deadline_secs", s))
        .transpose()
        .map_err(config)?;
    if let Some(p) = d.price_per_million_input {
        checked::usd("dispatch.price_per_million_input", p).map_err(config)?;
    }
    checked::usd(
        "dispatch.price_per_million_output",
        d.price_per_million_output,
    )
    .map_err(config)?;
    Ok(CheckedDispatch {
        timeout,
        deadline,
        // At most 4 GiB: fits in `usize` on 64-bit; saturates on 32-bit.
        max_reply_bytes: usize::try_from(max_reply_bytes).unwrap_or(usize::MAX),
    })
}

/// The answer cache `d` asks for (none at capacity 0).
fn new_cache(d: &crate::options::DispatchOptions) -> Option<moka::future::Cache<u128, Arc<Raw>>> {
    (d.cache_capacity > 0).then(|| moka::future::Cache::new(d.cache_capacity))
}

impl Judge {
    /// Checks the options and builds the judge. A missing endpoint, model or
    /// API key (when a key variable is named) fails here, saying what to set.
    pub fn new(options: &JudgeOptions) -> Result<Judge> {
        let d = &options.dispatch;
        let checked = check_dispatch(d)?;
        let limits = d.limits.unwrap_or_else(|| options.backend.default_limits());
        if limits.max_questions == 0 || limits.max_options < 2 || limits.max_state_tokens == 0 {
            return Err(Error::config(
                "limits need max_questions ≥ 1, max_options ≥ 2 and max_state_tokens ≥ 1",
            ));
        }
        let client = ClientConfig {
            timeout: checked.timeout,
            max_body_bytes: checked.max_reply_bytes,
            retry: RetryPolicy {
                max_retries: d.max_retries,
                ..RetryPolicy::default()
            },
            ..ClientConfig::default()
        };
        let (backend, model) = options.backend.build(&client)?;
        let kind = backend.profile().kind;
        Ok(Judge {
            inner: Arc::new(Inner {
                options: options.clone(),
                backend,
                kind,
                model,
                limits,
                semaphore: Semaphore::new(d.concurrency),
                cache: new_cache(d),
                deadline: checked.deadline,
                price_in: d
                    .price_per_million_input
                    .unwrap_or_else(|| options.backend.default_price_per_million()),
                price_out: d.price_per_million_output,
            }),
        })
    }

    /// A judge like this one whose lexical backend uses corpus statistics
    /// (plain data) for its IDF. Other backends ignore statistics and get a
    /// clone of this judge (sharing its cache and limits). The lexical judge
    /// returned has a cache of its own, since its answers differ.
    pub fn with_corpus_stats(&self, stats: Arc<CorpusStats>) -> Result<Judge> {
        let Some(backend) = self.inner.backend.with_corpus_stats(stats) else {
            return Ok(self.clone());
        };
        Ok(self.fresh(
            backend,
            format!("{} with corpus statistics", self.inner.model),
        ))
    }

    /// A judge like this one whose embedding backend reads vectors from
    /// `source` (a navigator's, over a tree); `None` for the other
    /// backends, which read none. The judge returned has a cache of its own.
    pub fn with_vectors(&self, source: Arc<dyn crate::VectorSource>) -> Option<Judge> {
        let backend = self.inner.backend.with_vectors(source.clone())?;
        Some(self.fresh(backend, source.embedder()))
    }

    /// Whether the backend scores from stored vectors (the embedding judge).
    pub fn uses_vectors(&self) -> bool {
        self.inner.backend.uses_vectors()
    }

    /// A judge with this one's options and loaded model but a cache and
    /// concurrency limit of its own, whose cross-encoder shares scored
    /// (query, text) pairs with this judge and every judge made from it
    /// this way: a pair one of them scored is not run through the model
    /// again (its tokens are still counted in the asking judge's usage).
    /// For a sweep that compares systems on the same pairs; their seconds
    /// then show what each added. `None` for other backends, whose answer
    /// to a candidate depends on the call it is in.
    pub fn sharing_scores(&self) -> Option<Judge> {
        let backend = self.inner.backend.sharing_scores()?;
        Some(self.fresh(backend, self.inner.model.clone()))
    }

    /// What this judge's shared scores depend on beside the pair (the
    /// model file and its token limit), and those scores: `None` unless
    /// the judge shares scores ([`Judge::sharing_scores`]). For saving
    /// them to a score file.
    pub fn scored_pairs(&self) -> Option<(String, Vec<crate::ScoredPair>)> {
        self.inner.backend.scored_pairs()
    }

    /// Adds pairs scored before (read from a score file written under
    /// `tag`) to this judge's shared scores. Fails when the judge shares
    /// none or `tag` is not this judge's: a score depends on the model
    /// file and the token limit.
    pub fn add_scored_pairs(&self, tag: &str, pairs: &[crate::ScoredPair]) -> Result<()> {
        self.inner
            .backend
            .add_scored_pairs(tag, pairs)
            .unwrap_or_else(|| {
                Err(Error::config(
                    "only the cross-encoder's scores can be reused",
                ))
            })
    }

    /// A judge with this one's settings, `backend` and `model`, and a new
    /// cache and concurrency limit.
    fn fresh(&self, backend: Box<dyn Backend>, model: String) -> Judge {
        let i = &self.inner;
        let d = &i.options.dispatch;
        Judge {
            inner: Arc::new(Inner {
                options: i.options.clone(),
                backend,
                kind: i.kind,
                model,
                limits: i.limits,
                semaphore: Semaphore::new(d.concurrency),
                cache: new_cache(d),
                deadline: i.deadline,
                price_in: i.price_in,
                price_out: i.price_out,
            }),
        }
    }

    /// Whether the backend reads corpus statistics ([`Judge::with_corpus_stats`]).
    pub fn uses_corpus_stats(&self) -> bool {
        self.inner.backend.uses_corpus_stats()
    }

    /// For an LLM behind the logprobs protocol, what its endpoint returns
    /// to one yes/no question about `candidates` ([`crate::LlmProbe`]);
    /// `None` for other backends. Bypasses the cache and the limits.
    pub async fn probe_llm(
        &self,
        query: &str,
        candidates: &[crate::Candidate],
    ) -> Option<Result<crate::LlmProbe>> {
        let state = crate::render::render_state(query, candidates);
        let question = candidates
            .first()
            .map(|c| crate::render::judge_question(0, c))
            .unwrap_or_default();
        let probe = self.inner.backend.probe_llm(&state, &question)?;
        Some(probe.await)
    }

    /// The backend kind (`lexical`, `systemone`, …).
    pub fn kind(&self) -> &'static str {
        self.inner.kind
    }

    /// Which backend decides.
    pub fn backend_kind(&self) -> crate::BackendKind {
        self.inner.options.backend.backend_kind()
    }

    /// Whether the backend scores each candidate alone (a cross-encoder):
    /// its scores are then comparable across calls without calibration
    /// references.
    pub fn pointwise(&self) -> bool {
        self.inner.backend.profile().pointwise
    }

    /// The model (or, for the lexical judge, its formula).
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The limits one call may hold.
    pub fn limits(&self) -> Limits {
        self.inner.limits
    }

    /// P(relevant) for every candidate, from shared-context calls that each
    /// fit the backend's limits (run concurrently).
    pub async fn judge(&self, query: &str, candidates: &[Candidate]) -> Result<Judgments> {
        let start = Instant::now();
        let work = async {
            let results = self.run_batches(OpKind::Judge, query, candidates).await?;
            let mut usage = Usage::default();
            let mut probabilities = Vec::with_capacity(candidates.len());
            for ((raw, u), batch) in &results {
                usage.add(u);
                match &raw.values {
                    Values::Probabilities(p) if p.len() == batch.len() => probabilities.extend(p),
                    other => return Err(self.mismatch("judge", batch.len(), other)),
                }
            }
            Ok(Judgments {
                probabilities,
                usage,
            })
        };
        let mut out = self.with_deadline(work).await?;
        out.usage.latency_ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok(out)
    }

    /// For every candidate, a distribution over the scale's levels.
    pub async fn grade(
        &self,
        query: &str,
        candidates: &[Candidate],
        scale: &Scale,
    ) -> Result<Grades> {
        scale.check()?;
        let start = Instant::now();
        let work = async {
            let results = self
                .run_batches(OpKind::Grade(scale), query, candidates)
                .await?;
            let mut usage = Usage::default();
            let mut grades = Vec::with_capacity(candidates.len());
            for ((raw, u), batch) in &results {
                usage.add(u);
                match &raw.values {
                    Values::Grades(g) if g.len() == batch.len() => {
                        for p in g {
                            if p.len() != scale.levels.len() {
                                return Err(self.mismatch(
                                    "grade",
                                    scale.levels.len(),
                                    &raw.values,
                                ));
                            }
                            let p = normalize(p);
                            grades.push(Grade {
                                expected: expected_level(&p),
                                probabilities: p,
                            });
                        }
                    }
                    other => return Err(self.mismatch("grade", batch.len(), other)),
                }
            }
            Ok(Grades { grades, usage })
        };
        let mut out = self.with_deadline(work).await?;
        out.usage.latency_ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok(out)
    }

    /// One distribution over the candidates. Beyond the backend's option or
    /// state limits it runs a tournament: groups in parallel, then a final
    /// over the group winners; a candidate's probability is its group
    /// probability times its group winner's final probability.
    pub async fn choose(&self, query: &str, candidates: &[Candidate]) -> Result<Choice> {
        if candidates.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                self.inner.kind,
                "choose needs at least one candidate",
            ));
        }
        let start = Instant::now();
        let mut out = self
            .with_deadline(self.tournament(query, candidates))
            .await?;
        out.usage.latency_ms = start.elapsed().as_secs_f64() * 1000.0;
        Ok(out)
    }

    /// One choose call over candidates that fit one state.
    async fn choose_once(&self, query: &str, candidates: &[Candidate]) -> Result<Choice> {
        if candidates.len() == 1 {
            return Ok(Choice {
                probabilities: vec![1.0],
                best: 0,
                confidence: 1.0,
                usage: Usage::default(),
            });
        }
        let texts: Vec<u128> = candidates.iter().map(|c| text_key(&c.text)).collect();
        let (raw, usage) = self
            .run(Op {
                kind: OpKind::Choose,
                query,
                candidates,
                texts: &texts,
            })
            .await?;
        let Values::Choice(p) = &raw.values else {
            return Err(self.mismatch("choose", candidates.len(), &raw.values));
        };
        if p.len() != candidates.len() {
            return Err(self.mismatch("choose", candidates.len(), &raw.values));
        }
        let p = normalize(p);
        Ok(Choice {
            best: argmax(&p),
            confidence: confidence(&p),
            probabilities: p,
            usage,
        })
    }

    fn tournament<'a>(
        &'a self,
        query: &'a str,
        candidates: &'a [Candidate],
    ) -> futures::future::BoxFuture<'a, Result<Choice>> {
        Box::pin(async move {
            let mut groups = self.batches(query, candidates, self.inner.limits.max_options);
            if groups.len() > 1 && groups.len() == candidates.len() {
                // Every candidate fills the state limit alone: the final would
                // be as big as the first round and the tournament would never
                // end. Pair them anyway (the backend cuts long texts).
                groups = (0..candidates.len())
                    .step_by(2)
                    .map(|s| s..(s + 2).min(candidates.len()))
                    .collect();
            }
            if groups.len() == 1 {
                return self.choose_once(query, candidates).await;
            }
            let rounds = futures::future::try_join_all(
                groups
                    .iter()
                    .map(|g| self.tournament(query, &candidates[g.clone()])),
            )
            .await?;
            let winners: Vec<Candidate> = rounds
                .iter()
                .zip(&groups)
                .map(|(c, g)| candidates[g.start + c.best].clone())
                .collect();
            let last = self.tournament(query, &winners).await?;
            let mut usage = last.usage.clone();
            let mut probabilities = Vec::with_capacity(candidates.len());
            for (round, (g_final, _)) in rounds.iter().zip(last.probabilities.iter().zip(&groups)) {
                usage.add(&round.usage);
                probabilities.extend(round.probabilities.iter().map(|p| p * g_final));
            }
            let best = groups[last.best].start + rounds[last.best].best;
            let probabilities = normalize(&probabilities);
            Ok(Choice {
                confidence: confidence(&probabilities),
                probabilities,
                best,
                usage,
            })
        })
    }

    /// Runs one call per batch of [`Judge::batches`], all at once; each
    /// reply comes with the candidates it answers. Texts are keyed once.
    async fn run_batches<'a>(
        &self,
        kind: OpKind<'_>,
        query: &str,
        candidates: &'a [Candidate],
    ) -> Result<Vec<((Arc<Raw>, Usage), &'a [Candidate])>> {
        let texts: Vec<u128> = candidates.iter().map(|c| text_key(&c.text)).collect();
        let batches = self.batches(query, candidates, self.inner.limits.max_questions);
        let results = futures::future::try_join_all(batches.iter().map(|r| {
            self.run(Op {
                kind,
                query,
                candidates: &candidates[r.clone()],
                texts: &texts[r.clone()],
            })
        }))
        .await?;
        Ok(results
            .into_iter()
            .zip(batches)
            .map(|(reply, r)| (reply, &candidates[r]))
            .collect())
    }

    /// Splits candidates into consecutive batches of at most `max` whose
    /// rendered state fits the token limit (at least one candidate each).
    fn batches(&self, query: &str, candidates: &[Candidate], max: usize) -> Vec<Range<usize>> {
        split_batches(
            query,
            candidates,
            |_| max,
            self.inner.limits.max_state_tokens,
        )
    }

    async fn with_deadline<T>(
        &self,
        work: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        match self.inner.deadline {
            None => work.await,
            Some(limit) => tokio::time::timeout(limit, work).await.unwrap_or_else(|_| {
                Err(Error::new(
                    ErrorKind::Deadline,
                    self.inner.kind,
                    format!(
                        "no complete answer within the deadline of {:.1} s",
                        limit.as_secs_f64()
                    ),
                ))
            }),
        }
    }

    fn mismatch(&self, op: &str, expected: usize, got: &Values) -> Error {
        Error::malformed(
            self.inner.kind,
            format!("{op}: expected answers for {expected} items, got {got:?}"),
        )
    }

    /// The cache key: backend, model, question kind and the candidates in
    /// full (a backend may read more than the rendered, length-capped state),
    /// each text by its key computed once per request.
    fn cache_key(&self, op: &Op<'_>) -> u128 {
        let mut head = format!("{}\n{}\n", self.inner.kind, self.inner.model);
        match op.kind {
            OpKind::Judge => head.push_str("judge\n"),
            OpKind::Choose => head.push_str("choose\n"),
            OpKind::Grade(scale) => {
                head.push_str("grade\n");
                head.push_str(&scale.levels.join("\u{1f}"));
                head.push('\n');
            }
        }
        head.push_str(op.query);
        let mut bytes = Vec::with_capacity(16 + 32 * op.candidates.len());
        bytes.extend_from_slice(&fingerprint(head.as_bytes()).to_le_bytes());
        for (c, text) in op.candidates.iter().zip(op.texts) {
            bytes.extend_from_slice(&fingerprint(c.id.as_bytes()).to_le_bytes());
            bytes.extend_from_slice(&text.to_le_bytes());
        }
        fingerprint(&bytes)
    }

    async fn run(&self, op: Op<'_>) -> Result<(Arc<Raw>, Usage)> {
        let key = self.cache_key(&op);
        if let Some(cache) = &self.inner.cache {
            if let Some(hit) = cache.get(&key).await {
                return Ok((
                    hit,
                    Usage {
                        cache_hits: 1,
                        ..Usage::default()
                    },
                ));
            }
        }
        let _permit = self
            .inner
            .semaphore
            .acquire()
            .await
            .map_err(|e| Error::new(ErrorKind::Config, self.inner.kind, e.to_string()))?;
        let span = tracing::debug_span!(
            "judge_call",
            backend = self.inner.kind,
            candidates = op.candidates.len()
        );
        let raw = self.inner.backend.call(&op).instrument(span).await?;
        let raw = Arc::new(check_reported_usage(self.inner.kind, raw)?);
        let input_tokens = raw
            .input_tokens
            .filter(|t| *t > 0)
            .unwrap_or_else(|| call_tokens(op.query, op.candidates));
        let cost_usd = raw.cost_usd.unwrap_or(
            input_tokens as f64 * self.inner.price_in / 1e6
                + raw.output_tokens as f64 * self.inner.price_out / 1e6,
        );
        let usage = Usage {
            calls: 1,
            input_tokens,
            output_tokens: raw.output_tokens,
            cost_usd,
            low_confidence: raw.low_confidence,
            cached_input_tokens: raw.cached_input_tokens.min(input_tokens),
            vectors_scored: raw.vectors_scored,
            ..Usage::default()
        };
        if let Some(cache) = &self.inner.cache {
            cache.insert(key, raw.clone()).await;
        }
        Ok((raw, usage))
    }
}

/// Most tokens one call may report (input or output): more than any model's
/// context holds, far below where sums could overflow.
pub const MAX_REPORTED_TOKENS: u64 = 1 << 40;

/// The one place a server's usage figures enter: token counts and cost out
/// of range (a negative or absurd cost would defeat `--max-cost`; a count
/// near `u64::MAX` would overflow the sums) make the reply malformed.
fn check_reported_usage(backend: &'static str, raw: Raw) -> Result<Raw> {
    let malformed = |e: checked::OutOfRange| {
        Error::malformed(backend, format!("the reply's usage is out of range: {e}"))
    };
    let tokens = 0..=MAX_REPORTED_TOKENS;
    checked::count(
        "input_tokens",
        raw.input_tokens.unwrap_or(0),
        tokens.clone(),
    )
    .map_err(malformed)?;
    checked::count("output_tokens", raw.output_tokens, tokens.clone()).map_err(malformed)?;
    checked::count("cached_tokens", raw.cached_input_tokens, tokens).map_err(malformed)?;
    if let Some(cost) = raw.cost_usd {
        checked::usd("cost", cost).map_err(malformed)?;
    }
    Ok(raw)
}

/// The index of the largest value (the first among equals).
pub(crate) fn argmax(p: &[f64]) -> usize {
    p.iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |(bi, bp), (i, x)| {
            if *x > bp {
                (i, *x)
            } else {
                (bi, bp)
            }
        })
        .0
}
