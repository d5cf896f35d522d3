//! The navigator's configuration, checked once before any query.

use crate::best_first::settings::BestFirstConfig;
use crate::settings;
use crate::{Error, Result, Strategy, StrategySettings};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;
use treenav_judge::checked;

/// What to do when a judge call still fails after the dispatcher's retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnJudgeError {
    /// Fail the query with an error naming the level and batch.
    Fail,
    /// Score that batch with the lexical judge instead, and record it in the trace.
    Fallback,
}

/// The navigator's defaults that the CLI's flags and `serve` show too
/// (the library's [`NavigatorConfig::default`] reads them).
pub mod defaults {
    /// Passages returned (r).
    pub const RETURNED_PASSAGES: usize = 10;
    /// Passages reranked by one multiple-choice question (m).
    pub const SHORTLIST: usize = 5;
    /// Candidates per judge call of a levels walk.
    pub const BATCH_SIZE: usize = 100;
    /// Member titles on a cluster's card.
    pub const CARD_TITLES: usize = 30;
    /// Sentences shown after a document's title.
    pub const LEAD_SENTENCES: usize = 1;
    /// BM25 documents added to the document level.
    pub const LEXICAL_ENTRY: usize = 20;
}

/// Navigator settings (linfa style: set, then [`NavigatorConfig::check`]).
///
/// ```
/// use treenav_navigator::NavigatorConfig;
/// let config = NavigatorConfig::default().batch_size(100).retention_budgets([20, 10]).check()?;
/// assert_eq!(config.budget(0), 20);
/// assert_eq!(config.budget(5), 10);
/// # Ok::<(), treenav_navigator::Error>(())
/// ```
///
/// Its JSON form has one field per setting of [`crate::settings::all`],
/// each strategy's own flattened in; [`NavigatorConfig::with_settings`]
/// sets them by name, as flags and requests give them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NavigatorConfig {
    pub(crate) batch_size: usize,
    #[serde(rename = "budgets")]
    pub(crate) retention_budgets: Vec<usize>,
    #[serde(rename = "top")]
    pub(crate) returned_passages: usize,
    pub(crate) per_document: usize,
    pub(crate) shortlist: usize,
    pub(crate) card_titles: usize,
    pub(crate) lead_sentences: usize,
    pub(crate) calibration: bool,
    pub(crate) lexical_entry: usize,
    pub(crate) on_judge_error: OnJudgeError,
    #[serde(rename = "deadline")]
    pub(crate) deadline_secs: Option<f64>,
    #[serde(rename = "max_cost")]
    pub(crate) max_cost_usd: Option<f64>,
    pub(crate) strategy: Strategy,
    #[serde(flatten)]
    pub(crate) strategies: StrategySettings,
}

/// The budget of a level with none configured.
pub const DEFAULT_BUDGET: usize = 10;

impl Default for NavigatorConfig {
    fn default() -> Self {
        NavigatorConfig {
            batch_size: defaults::BATCH_SIZE,
            retention_budgets: Vec::new(),
            returned_passages: defaults::RETURNED_PASSAGES,
            per_document: 0,
            shortlist: defaults::SHORTLIST,
            card_titles: defaults::CARD_TITLES,
            lead_sentences: defaults::LEAD_SENTENCES,
            calibration: true,
            lexical_entry: defaults::LEXICAL_ENTRY,
            on_judge_error: OnJudgeError::Fail,
            deadline_secs: None,
            max_cost_usd: None,
            strategy: Strategy::default(),
            strategies: StrategySettings::default(),
        }
    }
}

impl NavigatorConfig {
    /// Candidates per judge call (1–200). By default, 100.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }

    /// Candidates kept per level, top level first (k_1, k_2, …); levels
    /// beyond the list keep 10. By default, 10 at every level.
    pub fn retention_budgets(mut self, budgets: impl IntoIterator<Item = usize>) -> Self {
        self.retention_budgets = budgets.into_iter().collect();
        self
    }

    /// Passages returned (r). By default, 10.
    pub fn returned_passages(mut self, r: usize) -> Self {
        self.returned_passages = r;
        self
    }

    /// At most `n` passages of one document in the result (0: no limit, the
    /// default). The search still returns `returned_passages` when enough
    /// documents are within reach.
    pub fn per_document(mut self, n: usize) -> Self {
        self.per_document = n;
        self
    }

    /// Passages reranked by one multiple-choice question (m ≤ r; 0 or 1 turns
    /// the rerank off). By default, 5.
    pub fn shortlist(mut self, m: usize) -> Self {
        self.shortlist = m;
        self
    }

    /// Member titles shown on a cluster's card after its summary, most
    /// central first. By default, 30 (on SciFact with the lexical judge, the
    /// gold's cluster survived for 0.35 of queries with 8 titles, 0.44 with 30).
    pub fn card_titles(mut self, n: usize) -> Self {
        self.card_titles = n;
        self
    }

    /// Sentences of a document shown after its title. By default, 1 (as the paper).
    pub fn lead_sentences(mut self, n: usize) -> Self {
        self.lead_sentences = n;
        self
    }

    /// Show the same reference candidates in every batch of a level and shift
    /// each batch's scores so the references agree across batches. By default,
    /// on (SciFact, lexical judge: gold document kept 0.18 → 0.28).
    pub fn calibration(mut self, on: bool) -> Self {
        self.calibration = on;
        self
    }

    /// Add the top `n` documents of a BM25 index over the corpus to the
    /// document level's candidates and always expand them (on top of the
    /// level's budget), so navigation can only add recall to flat lexical
    /// retrieval (0 turns it off). By default, 20 (SciFact, lexical judge:
    /// document Hit@1 0.16 → 0.51).
    pub fn lexical_entry(mut self, n: usize) -> Self {
        self.lexical_entry = n;
        self
    }

    /// What a judge failure does. By default, [`OnJudgeError::Fail`].
    pub fn on_judge_error(mut self, on: OnJudgeError) -> Self {
        self.on_judge_error = on;
        self
    }

    /// Overall time limit of one query, in seconds. By default, none.
    pub fn deadline_secs(mut self, secs: Option<f64>) -> Self {
        self.deadline_secs = secs;
        self
    }

    /// Cost limit of one query in USD; navigation stops with an error once
    /// passed. By default, none.
    pub fn max_cost_usd(mut self, usd: Option<f64>) -> Self {
        self.max_cost_usd = usd;
        self
    }

    /// The strategy. By default, [`Strategy::BestFirst`].
    pub fn strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = strategy;
        self
    }

    /// Candidates shown to the judge per query under `best-first`,
    /// references and the shortlist rerank included (at least the
    /// shortlist + 1, at most 100,000). By default, 100.
    pub fn judge_budget(mut self, budget: usize) -> Self {
        self.strategies.best_first.judge_budget = budget;
        self
    }

    /// Every `best-first` setting at once.
    pub fn best_first(mut self, settings: BestFirstConfig) -> Self {
        self.strategies.best_first = settings;
        self
    }

    /// The best-first settings as set so far.
    pub fn best_first_settings(&self) -> &BestFirstConfig {
        &self.strategies.best_first
    }

    /// These settings with those `given` by name (serde's: the flags'
    /// and requests' names, see [`crate::settings::all`]), each checked
    /// for its kind and range first, so an error names the one given.
    /// Giving `top` without `shortlist` keeps the shortlist within it.
    pub fn with_settings(self, given: &Map<String, Value>) -> Result<NavigatorConfig> {
        settings::check_given(given)?;
        let clamp = given.contains_key("top") && !given.contains_key("shortlist");
        let mut json = self.to_json()?;
        json.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
        let mut config: NavigatorConfig = serde_json::from_value(Value::Object(json))
            .map_err(|e| Error::Config(e.to_string()))?;
        if clamp {
            config.shortlist = config.shortlist.min(config.returned_passages);
        }
        Ok(config)
    }

    /// Its JSON form: one field per setting.
    fn to_json(&self) -> Result<Map<String, Value>> {
        match serde_json::to_value(self) {
            Ok(Value::Object(json)) => Ok(json),
            Ok(_) => Err(Error::Config("settings are not an object".into())),
            Err(e) => Err(Error::Config(e.to_string())),
        }
    }

    /// Checks every setting: each within its kind's range (the list in
    /// [`crate::settings`]), then the rules between them.
    pub fn check(self) -> Result<ValidConfig> {
        // JSON has no NaN or infinity: such a limit would read as none.
        for (name, x) in [
            ("deadline", self.deadline_secs),
            ("max_cost", self.max_cost_usd),
        ] {
            if let Some(x) = x.filter(|x| !x.is_finite()) {
                return Err(Error::Setting {
                    name: name.into(),
                    problem: format!("must be a finite number, got {x}"),
                });
            }
        }
        settings::check_all(&self.to_json()?)?;
        if self.shortlist > self.returned_passages {
            return Err(Error::Setting {
                name: "shortlist".into(),
                problem: format!(
                    "({}) must not exceed top ({})",
                    self.shortlist, self.returned_passages
                ),
            });
        }
        let spends_budget = self.strategy.profile().spends_judge_budget;
        self.strategies
            .best_first
            .check(self.shortlist, spends_budget)?;
        Ok(ValidConfig(self))
    }
}

/// A checked [`NavigatorConfig`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidConfig(pub(crate) NavigatorConfig);

impl ValidConfig {
    /// The budget of level `i` (0 = the root's children).
    pub fn budget(&self, level: usize) -> usize {
        self.0
            .retention_budgets
            .get(level)
            .copied()
            .unwrap_or(DEFAULT_BUDGET)
    }

    /// The settings.
    pub fn settings(&self) -> &NavigatorConfig {
        &self.0
    }

    /// Candidates per judge call.
    pub fn batch_size(&self) -> usize {
        self.0.batch_size
    }

    /// Whether batches of a level are calibrated against shared references.
    pub fn calibration(&self) -> bool {
        self.0.calibration
    }

    /// Passages reranked by one multiple-choice question (m).
    pub fn shortlist(&self) -> usize {
        self.0.shortlist
    }

    /// Passages returned (r).
    pub fn returned_passages(&self) -> usize {
        self.0.returned_passages
    }

    /// At most this many passages of one document (`usize::MAX`: no limit).
    pub fn per_document(&self) -> usize {
        match self.0.per_document {
            0 => usize::MAX,
            n => n,
        }
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.0.strategy
    }

    /// The `best-first` settings.
    pub fn best_first(&self) -> &BestFirstConfig {
        &self.0.strategies.best_first
    }

    pub(crate) fn deadline(&self) -> Option<Duration> {
        // Checked in `check`: the conversion succeeds.
        self.0
            .deadline_secs
            .and_then(|s| checked::seconds("deadline_secs", s).ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every count is checked through one function per kind, naming the
    /// field and its range.
    #[test]
    fn counts_name_field_and_range() {
        let says = |config: NavigatorConfig| match config.check() {
            Err(e) => e.to_string(),
            Ok(_) => String::new(),
        };
        assert!(says(NavigatorConfig::default().batch_size(0))
            .contains("batch_size must be in 1..=200, got 0"));
        assert!(says(NavigatorConfig::default().returned_passages(0))
            .contains("top must be in 1..=1000, got 0"));
        let best_first = || NavigatorConfig::default().strategy(Strategy::BestFirst);
        assert!(says(best_first().judge_budget(1))
            .contains("judge_budget (above the shortlist, 5) must be in"));
        // A levels walk does not spend the judge budget: a shortlist above it
        // is no error there.
        let levels = NavigatorConfig::default()
            .strategy(Strategy::Levels)
            .returned_passages(100)
            .shortlist(100);
        assert!(levels.clone().check().is_ok());
        assert!(says(levels.strategy(Strategy::BestFirst)).contains("judge_budget"));
        assert!(says(best_first().best_first(BestFirstConfig {
            fusion: -1.0,
            ..BestFirstConfig::default()
        }))
        .contains("fusion"));
        assert!(NavigatorConfig::default().check().is_ok());
        assert_eq!(
            NavigatorConfig::default()
                .check()
                .map(|c| c.strategy())
                .ok(),
            Some(Strategy::BestFirst),
            "one default strategy everywhere"
        );
        assert_eq!("levels".parse::<Strategy>().ok(), Some(Strategy::Levels));
        assert!("bfs"
            .parse::<Strategy>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
            .contains("best-first, levels"));
    }
}
