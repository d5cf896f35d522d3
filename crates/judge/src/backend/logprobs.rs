//! Decision emulation over an ordinary language model that returns
//! next-token log-probabilities: one completion of one token per question,
//! `temperature: 0`, the top 20 log-probabilities. A label's probability is
//! the mass of all its token variants (`Yes`, ` yes`, `YES`…); the answer is
//! renormalised over the labels, and flagged when the labels hold less than
//! half the mass.
//!
//! Three routes ([`LogprobsApi`]): chat completions (the model's chat
//! template), completions and llama.cpp's native `/completion` (a plain-text
//! prompt ending in `Answer:`). The shared context comes first and is the
//! same for every question of a call, so a server with prefix caching
//! prefills it once: the first question of a call is sent alone, the rest
//! after it, concurrently (sent all at once, every parallel slot of a
//! llama.cpp server prefilled the context again). The prompt tokens the
//! server served from its cache are counted in the usage.

use crate::backend::op::{Op, OpKind, Raw, Values};
use crate::backend::remote::Remote;
use crate::error::{Error, Result};
use crate::render::{choose_question, grade_question, judge_question, render_state};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

const NAME: &str = "openai-logprobs";

/// The backend's profile: One completion per question; top-20 log-probabilities cap the options.
pub(crate) const PROFILE: super::Profile = super::Profile {
    kind: NAME,
    about: "yes/no emulation over an OpenAI-compatible endpoint with log-probabilities",
    limits: crate::Limits {
        max_questions: 64,
        max_options: 20,
        max_state_tokens: 6_000,
    },
    price_per_million: 0.0,
    in_process: false,
    pointwise: false,
};

/// Below this label mass an answer is flagged as unreliable.
pub(crate) const MIN_LABEL_MASS: f64 = 0.5;
/// Log-probabilities asked for per position (OpenAI's maximum).
const TOP_N: u32 = 20;
/// The system message of the chat route, and the first paragraph of the
/// plain-text prompt.
/// The instruction of a yes/no question.
const YES_NO: &str = "Answer yes or no.";
const SYSTEM: &str = "You judge candidates listed in a context. Reply with exactly one of the allowed answers and nothing else.";

/// Options of a judge over any OpenAI-compatible endpoint with
/// log-probabilities (vLLM, llama.cpp, Ollama, hosted APIs): yes/no and
/// label emulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenaiLogprobsOptions {
    /// Base URL, e.g. `http://127.0.0.1:8000`.
    pub endpoint: String,
    /// Model id (use a non-thinking instruct model).
    pub model: String,
    /// Environment variable holding the key; none sent when unset.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Which of the server's routes to ask. By default, `chat`.
    #[serde(default)]
    pub api: LogprobsApi,
}

/// The route an `openai-logprobs` judge asks: the three ways servers expose
/// next-token log-probabilities.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LogprobsApi {
    /// `POST /v1/chat/completions` with `logprobs: true, top_logprobs: 20`:
    /// the model's chat template wraps the prompt (OpenAI, vLLM, llama.cpp,
    /// Ollama).
    #[default]
    Chat,
    /// `POST /v1/completions` with `logprobs: 20` on a plain-text prompt
    /// that ends in `Answer:` (no chat template; vLLM, llama.cpp).
    Completions,
    /// llama.cpp's native `POST /completion` with `n_probs: 20` and
    /// `cache_prompt: true` on the same plain-text prompt: the leanest
    /// request on llama.cpp.
    Llama,
}

impl LogprobsApi {
    /// Every route, in the order the CLI lists them.
    pub const ALL: [LogprobsApi; 3] = [LogprobsApi::Chat, LogprobsApi::Completions, LogprobsApi::Llama];

    /// The path below the endpoint.
    pub fn path(self) -> &'static str {
        match self {
            LogprobsApi::Chat => "/v1/chat/completions",
            LogprobsApi::Completions => "/v1/completions",
            LogprobsApi::Llama => "/completion",
        }
    }

    /// The name used in config and on the CLI.
    pub fn name(self) -> &'static str {
        match self {
            LogprobsApi::Chat => "chat",
            LogprobsApi::Completions => "completions",
            LogprobsApi::Llama => "llama",
        }
    }
}

pub(crate) fn build(o: &OpenaiLogprobsOptions, client: &treenav_http::ClientConfig) -> super::Built {
    // llama.cpp's native route has no `/v1`: a base given with one (as the
    // OpenAI routes want) still finds it.
    let base = match o.api {
        LogprobsApi::Llama => o
            .endpoint
            .trim_end_matches('/')
            .strip_suffix("/v1")
            .unwrap_or(&o.endpoint),
        _ => &o.endpoint,
    };
    let remote = Remote::new(NAME, base, &o.model, &o.api_key_env, o.api.path(), client)?;
    Ok((Box::new(Logprobs { remote, api: o.api }), o.model.clone()))
}

impl super::Backend for Logprobs {
    fn profile(&self) -> super::Profile {
        PROFILE
    }

    fn call<'a>(&'a self, op: &'a Op<'a>) -> futures::future::BoxFuture<'a, Result<Raw>> {
        Box::pin(self.answer(op))
    }

    fn probe_llm<'a>(
        &'a self,
        state: &'a str,
        question: &'a str,
    ) -> Option<futures::future::BoxFuture<'a, Result<LlmProbe>>> {
        Some(Box::pin(self.probe(state, question)))
    }
}

#[derive(Debug)]
pub(crate) struct Logprobs {
    pub(crate) remote: Remote,
    pub(crate) api: LogprobsApi,
}

/// What any of the three routes may answer; each field is read only where
/// that route puts it.
#[derive(Deserialize)]
struct Reply {
    /// Chat and completions.
    #[serde(default)]
    choices: Vec<ChoiceItem>,
    /// llama.cpp's native route.
    #[serde(default)]
    completion_probabilities: Vec<Position>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    usage: Option<ReplyUsage>,
    /// llama.cpp (every route): prompt tokens evaluated and reused.
    #[serde(default)]
    timings: Option<Timings>,
    /// llama.cpp's native route: prompt tokens in all (its
    /// `tokens_cached` counts the slot's whole cache after the request,
    /// not what was reused, so `timings.cache_n` is read instead).
    #[serde(default)]
    tokens_evaluated: Option<u64>,
}

#[derive(Deserialize)]
struct ReplyUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct Timings {
    #[serde(default)]
    cache_n: Option<u64>,
    #[serde(default)]
    prompt_n: Option<u64>,
}

#[derive(Deserialize)]
struct ChoiceItem {
    #[serde(default)]
    logprobs: Option<LogprobBlock>,
    /// Chat: the generated message.
    #[serde(default)]
    message: Option<Message>,
    /// Completions: the generated text.
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

/// Chat's shape (also llama.cpp's `/v1/completions`) or OpenAI's legacy
/// completions shape (one `{token: logprob}` map per position).
#[derive(Deserialize)]
#[serde(untagged)]
enum LogprobBlock {
    Content {
        content: Vec<Position>,
    },
    Legacy {
        top_logprobs: Vec<BTreeMap<String, f64>>,
    },
}

#[derive(Deserialize)]
struct Position {
    #[serde(default)]
    top_logprobs: Vec<TopLogprob>,
}

#[derive(Deserialize)]
struct TopLogprob {
    token: String,
    logprob: f64,
}

/// The first position's top tokens, what the model generated, and the
/// reply's token counts.
struct Reading {
    top: Vec<(String, f64)>,
    generated: String,
    input_tokens: Option<u64>,
    output_tokens: u64,
    cached_tokens: u64,
}

impl Reply {
    fn into_reading(self) -> Option<Reading> {
        let (top, generated) = match self.choices.into_iter().next() {
            Some(choice) => {
                let generated = choice
                    .message
                    .and_then(|m| m.content)
                    .or(choice.text)
                    .unwrap_or_default();
                let top = match choice.logprobs? {
                    LogprobBlock::Content { content } => pairs(content.into_iter().next()?),
                    LogprobBlock::Legacy { top_logprobs } => {
                        top_logprobs.into_iter().next()?.into_iter().collect()
                    }
                };
                (top, generated)
            }
            None => (
                pairs(self.completion_probabilities.into_iter().next()?),
                self.content.unwrap_or_default(),
            ),
        };
        let timings = self.timings.as_ref();
        let cache_n = timings.and_then(|t| t.cache_n);
        let (input_tokens, output_tokens, details) = match self.usage {
            Some(u) => (
                u.prompt_tokens,
                u.completion_tokens,
                u.prompt_tokens_details.and_then(|d| d.cached_tokens),
            ),
            None => {
                let evaluated = timings
                    .and_then(|t| t.prompt_n)
                    .map(|n| n.saturating_add(cache_n.unwrap_or(0)))
                    .or(self.tokens_evaluated);
                (evaluated, 1, None)
            }
        };
        Some(Reading {
            top,
            generated,
            input_tokens,
            output_tokens,
            cached_tokens: details.or(cache_n).unwrap_or(0),
        })
    }
}

fn pairs(p: Position) -> Vec<(String, f64)> {
    p.top_logprobs
        .into_iter()
        .map(|t| (t.token, t.logprob))
        .collect()
}

/// One answer: the label distribution, whether it is flagged, and tokens used.
struct Answer {
    probabilities: Vec<f64>,
    flagged: bool,
    input_tokens: Option<u64>,
    output_tokens: u64,
    cached_tokens: u64,
}

/// What [`Logprobs::probe`] found out about an endpoint: whether it returns
/// log-probabilities, how the yes/no answers are spelled among the model's
/// likeliest first tokens, and what the model writes before an answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmProbe {
    /// The route asked (`chat`, `completions`, `llama`).
    pub api: &'static str,
    /// Whether the reply carried top log-probabilities.
    pub logprobs: bool,
    /// The first position's likeliest tokens, as the server spells them
    /// (leading spaces and case kept), with their probabilities.
    pub top_tokens: Vec<(String, f64)>,
    /// The tokens among them read as `yes` or `no`.
    pub yes_no_tokens: Vec<String>,
    /// Share of the first token's probability on `yes`/`no` variants.
    pub label_mass: f64,
    /// What the model generated (a few tokens), unmodified.
    pub generated: String,
    /// What comes before the answer in the generation when it does not
    /// start with yes/no: a thinking model's `<think>`, a chat template's
    /// preamble, a space or a newline.
    pub before_answer: Option<String>,
    /// Prompt tokens the server reported served from its prefix cache on a
    /// second identical-prefix request (`None`: it reports none).
    pub cached_prompt_tokens: Option<u64>,
}

impl Logprobs {
    /// The request body of one question on this route, generating
    /// `max_tokens` tokens.
    fn body(&self, state: &str, question: &str, instruction: &str, max_tokens: u32) -> Value {
        let model = &self.remote.model;
        match self.api {
            LogprobsApi::Chat => json!({
                "model": model,
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": format!("{state}\nQuestion: {question}\n{instruction}")},
                ],
                "max_tokens": max_tokens,
                "temperature": 0,
                "logprobs": true,
                "top_logprobs": TOP_N,
            }),
            LogprobsApi::Completions => json!({
                "model": model,
                "prompt": text_prompt(state, question, instruction),
                "max_tokens": max_tokens,
                "temperature": 0,
                "logprobs": TOP_N,
            }),
            LogprobsApi::Llama => json!({
                "model": model,
                "prompt": text_prompt(state, question, instruction),
                "n_predict": max_tokens,
                "temperature": 0,
                "n_probs": TOP_N,
                "cache_prompt": true,
            }),
        }
    }

    /// Sends one question and reads its first position.
    async fn read(
        &self,
        state: &str,
        question: &str,
        instruction: &str,
        max_tokens: u32,
    ) -> Result<Reading> {
        let reading = self
            .read_reply(state, question, instruction, max_tokens)
            .await?;
        reading.ok_or_else(|| {
            Error::malformed(
                NAME,
                format!(
                    "the reply holds no log-probabilities (does the server support them on {}? on llama.cpp's /v1/completions they need `logprobs`, on /completion `n_probs`)",
                    self.api.path()
                ),
            )
        })
    }

    /// [`Self::read`], a reply without log-probabilities as `None` (any
    /// other fault, a cut-off or oversized body or a NaN, is its own error).
    async fn read_reply(
        &self,
        state: &str,
        question: &str,
        instruction: &str,
        max_tokens: u32,
    ) -> Result<Option<Reading>> {
        let body = self.body(state, question, instruction, max_tokens);
        let reply = self.remote.post::<Reply>(NAME, &body).await?;
        Ok(reply.into_reading())
    }

    async fn ask(
        &self,
        state: &str,
        question: &str,
        labels: &[String],
        instruction: &str,
    ) -> Result<Answer> {
        let r = self.read(state, question, instruction, 1).await?;
        let mass = label_mass(&r.top, labels)?;
        let total: f64 = mass.iter().sum();
        // No label among the top tokens: the model answered something else
        // (a real model does, at times). A uniform answer, flagged, keeps
        // the query going; the count of flagged answers tells.
        let probabilities = if total > 0.0 {
            mass.iter().map(|m| m / total).collect()
        } else {
            vec![1.0 / labels.len().max(1) as f64; labels.len()]
        };
        Ok(Answer {
            probabilities,
            flagged: total < MIN_LABEL_MASS,
            input_tokens: r.input_tokens,
            output_tokens: r.output_tokens,
            cached_tokens: r.cached_tokens,
        })
    }

    /// Asks each question about one shared state: the first alone, so the
    /// server caches the state's prefix, then the rest at once.
    async fn ask_all(
        &self,
        state: &str,
        questions: &[String],
        labels: &[String],
        instruction: &str,
    ) -> Result<Vec<Answer>> {
        let Some((first, rest)) = questions.split_first() else {
            return Ok(Vec::new());
        };
        let mut answers = vec![self.ask(state, first, labels, instruction).await?];
        answers.extend(
            futures::future::try_join_all(
                rest.iter().map(|q| self.ask(state, q, labels, instruction)),
            )
            .await?,
        );
        Ok(answers)
    }

    async fn answer(&self, op: &Op<'_>) -> Result<Raw> {
        let state = render_state(op.query, op.candidates);
        let answers: Vec<Answer> = match op.kind {
            OpKind::Judge => {
                let questions: Vec<String> = op
                    .candidates
                    .iter()
                    .enumerate()
                    .map(|(i, c)| judge_question(i, c))
                    .collect();
                let labels = ["yes".to_string(), "no".to_string()];
                self.ask_all(&state, &questions, &labels, YES_NO).await?
            }
            OpKind::Choose => {
                let labels: Vec<String> =
                    (1..=op.candidates.len()).map(|i| i.to_string()).collect();
                let instruction = format!(
                    "Answer with the number of one candidate, 1 to {}.",
                    op.candidates.len()
                );
                vec![
                    self.ask(&state, choose_question(), &labels, &instruction)
                        .await?,
                ]
            }
            OpKind::Grade(scale) => {
                let labels: Vec<String> = (1..=scale.levels.len()).map(|i| i.to_string()).collect();
                let legend: Vec<String> = scale
                    .levels
                    .iter()
                    .enumerate()
                    .map(|(i, l)| format!("{} = {l}", i + 1))
                    .collect();
                let instruction = format!("Answer with one number: {}.", legend.join("; "));
                let questions: Vec<String> = op
                    .candidates
                    .iter()
                    .enumerate()
                    .map(|(i, c)| grade_question(i, c, scale))
                    .collect();
                self.ask_all(&state, &questions, &labels, &instruction)
                    .await?
            }
        };
        Ok(raw(op, answers))
    }

    /// Asks the checkup's yes/no question twice with a few tokens of
    /// generation, and reports what the endpoint returned.
    async fn probe(&self, state: &str, question: &str) -> Result<LlmProbe> {
        let instruction = YES_NO;
        // Only a reply without log-probabilities is reported as such; any
        // other fault is the error `query` would give.
        let first = self.read_reply(state, question, instruction, 8).await?;
        let r = match first {
            Some(r) => r,
            None => {
                return Ok(LlmProbe {
                    api: self.api.name(),
                    logprobs: false,
                    top_tokens: Vec::new(),
                    yes_no_tokens: Vec::new(),
                    label_mass: 0.0,
                    generated: String::new(),
                    before_answer: None,
                    cached_prompt_tokens: None,
                })
            }
        };
        let again = self.read(state, question, instruction, 1).await?;
        let labels = ["yes".to_string(), "no".to_string()];
        let yes_no_tokens = r
            .top
            .iter()
            .filter(|(t, _)| label_of(t, &labels).is_some())
            .map(|(t, _)| t.clone())
            .collect();
        let label_mass = label_mass(&r.top, &labels)?.iter().sum();
        Ok(LlmProbe {
            api: self.api.name(),
            logprobs: true,
            top_tokens: r.top.iter().map(|(t, lp)| (t.clone(), lp.exp())).collect(),
            yes_no_tokens,
            label_mass,
            before_answer: before_answer(&r.generated),
            generated: r.generated,
            cached_prompt_tokens: (again.cached_tokens > 0 || again.input_tokens.is_some())
                .then_some(again.cached_tokens),
        })
    }
}

/// The plain-text prompt of the completions routes: no chat template, the
/// state first (the cacheable prefix), the answer's slot last. A number
/// answer's slot opens a bracket, as the candidates are numbered `[i]`:
/// after a bare `Answer:` tokenizers that split digits (Llama's, SmolLM's)
/// put their mass on the space before the number, not on the number.
fn text_prompt(state: &str, question: &str, instruction: &str) -> String {
    let slot = if instruction == YES_NO {
        "Answer:"
    } else {
        "Answer: ["
    };
    format!("{SYSTEM}\n\n{state}\nQuestion: {question}\n{instruction}\n{slot}")
}

/// The probability mass on each label's token variants (trimmed,
/// lowercased) among the top tokens; a log-probability above 0 or not a
/// number is a malformed reply.
fn label_mass(top: &[(String, f64)], labels: &[String]) -> Result<Vec<f64>> {
    let mut mass = vec![0.0; labels.len()];
    for (token, logprob) in top {
        if !logprob.is_finite() || *logprob > 1e-9 {
            return Err(Error::malformed(
                NAME,
                format!("log-probability {logprob} of token {token:?} is not ≤ 0"),
            ));
        }
        if let Some(i) = label_of(token, labels) {
            mass[i] += logprob.exp();
        }
    }
    Ok(mass)
}

/// The label a token spells, if any: trimmed, a leading `[` dropped,
/// lowercased (`" Yes"`, `"YES"` and `"[2"` spell `yes`, `yes` and `2`).
fn label_of(token: &str, labels: &[String]) -> Option<usize> {
    let token = token.trim().trim_start_matches('[').to_lowercase();
    labels.iter().position(|l| *l == token)
}

/// What a generation holds before its first word `yes` or `no` (any
/// case), when it does not begin with one after white space (`None` when
/// it does, or is empty).
fn before_answer(generated: &str) -> Option<String> {
    let starts_word = |i: usize| {
        let rest = &generated[i..];
        let before = generated[..i].chars().next_back();
        !before.is_some_and(char::is_alphanumeric)
            && ["yes", "no"].iter().any(|w| {
                rest.get(..w.len())
                    .is_some_and(|p| p.eq_ignore_ascii_case(w))
                    && !rest[w.len()..]
                        .chars()
                        .next()
                        .is_some_and(char::is_alphanumeric)
            })
    };
    match generated
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| starts_word(i))
    {
        // A word's own leading space (` Yes`) is not something before it.
        Some(i) if generated[..i].trim().is_empty() => None,
        Some(i) => Some(generated[..i].to_string()),
        None if generated.is_empty() => None,
        None => Some(generated.to_string()),
    }
}

/// The call's answers as the dispatcher's [`Raw`].
fn raw(op: &Op<'_>, answers: Vec<Answer>) -> Raw {
    // Saturating: the counts are the server's, checked by the dispatcher
    // only after this sum (a wrapped sum could slip under its check).
    let sum = |f: &dyn Fn(&Answer) -> u64| answers.iter().fold(0u64, |s, a| s.saturating_add(f(a)));
    let reported = answers.iter().all(|a| a.input_tokens.is_some());
    let input_tokens = sum(&|a| a.input_tokens.unwrap_or(0));
    let output_tokens = sum(&|a| a.output_tokens);
    let cached_input_tokens = sum(&|a| a.cached_tokens);
    let low_confidence = answers.iter().filter(|a| a.flagged).count() as u32;
    let values = match op.kind {
        OpKind::Judge => {
            Values::Probabilities(answers.iter().map(|a| a.probabilities[0]).collect())
        }
        OpKind::Choose => Values::Choice(
            answers
                .into_iter()
                .next()
                .map(|a| a.probabilities)
                .unwrap_or_default(),
        ),
        OpKind::Grade(_) => Values::Grades(answers.into_iter().map(|a| a.probabilities).collect()),
    };
    Raw {
        values,
        input_tokens: (reported && input_tokens > 0).then_some(input_tokens),
        output_tokens,
        cost_usd: None,
        low_confidence,
        cached_input_tokens,
        vectors_scored: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(body: Value) -> Reading {
        serde_json::from_value::<Reply>(body)
            .expect("reply")
            .into_reading()
            .expect("reading")
    }

    /// The three shapes seen in the wild, with their token counts.
    #[test]
    fn reads_every_route_shape() {
        let chat = reading(json!({
            "choices": [{"message": {"content": "Yes"}, "logprobs": {"content": [{"token": "Yes", "logprob": -0.1, "top_logprobs": [{"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": -2.5}]}]}}],
            "usage": {"prompt_tokens": 90, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 80}},
            "timings": {"cache_n": 80, "prompt_n": 10}
        }));
        assert_eq!((chat.top.len(), chat.generated.as_str()), (2, "Yes"));
        assert_eq!((chat.input_tokens, chat.cached_tokens), (Some(90), 80));
        let legacy = reading(json!({
            "choices": [{"text": " yes", "logprobs": {"top_logprobs": [{" yes": -0.2, " no": -1.8}]}}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 1}
        }));
        assert_eq!(legacy.top.len(), 2);
        assert_eq!((legacy.input_tokens, legacy.cached_tokens), (Some(50), 0));
        let native = reading(json!({
            "content": " no",
            "completion_probabilities": [{"token": " no", "logprob": -0.3, "top_logprobs": [{"token": " no", "logprob": -0.3}, {"token": " yes", "logprob": -1.4}]}],
            "timings": {"cache_n": 120, "prompt_n": 7},
            "tokens_evaluated": 127
        }));
        assert_eq!(
            (native.input_tokens, native.cached_tokens),
            (Some(127), 120)
        );
        // No log-probabilities anywhere: no reading.
        let none: Reply =
            serde_json::from_value(json!({"choices": [{"text": "yes", "logprobs": null}]}))
                .expect("reply");
        assert!(none.into_reading().is_none());
    }

    #[test]
    fn variants_of_a_label_add_up() {
        let labels = ["yes".to_string(), "no".to_string()];
        let top = vec![
            ("Yes".to_string(), (0.5f64).ln()),
            (" yes".to_string(), (0.2f64).ln()),
            ("NO".to_string(), (0.1f64).ln()),
            ("<think>".to_string(), (0.2f64).ln()),
        ];
        let m = label_mass(&top, &labels).expect("mass");
        assert!((m[0] - 0.7).abs() < 1e-9 && (m[1] - 0.1).abs() < 1e-9);
        assert!(label_mass(&[("x".into(), 0.5)], &labels).is_err());
        let numbers = ["1".to_string(), "2".to_string()];
        let m = label_mass(
            &[("[2".into(), (0.5f64).ln()), (" 1".into(), (0.25f64).ln())],
            &numbers,
        )
        .expect("mass");
        assert!((m[0] - 0.25).abs() < 1e-9 && (m[1] - 0.5).abs() < 1e-9);
    }

    #[test]
    fn what_comes_before_the_answer() {
        assert_eq!(before_answer("Yes"), None);
        assert_eq!(before_answer(" no"), None);
        assert_eq!(before_answer("\n\nYes"), None);
        assert_eq!(
            before_answer("<think>\nThe user"),
            Some("<think>\nThe user".into())
        );
        assert_eq!(
            before_answer("<think>\n</think>\n\nYes"),
            Some("<think>\n</think>\n\n".into())
        );
        assert_eq!(before_answer(""), None);
        assert_eq!(before_answer("I know. No"), Some("I know. ".into()));
        assert_eq!(before_answer("Él: sí"), Some("Él: sí".into()));
    }
}
