//! How chunks are chosen: the strategies and their settings.

use crate::{Error, Result};
use serde::{Deserialize, Serialize};

/// How chunks are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Strategy {
    /// Grade every chunk 1–5 in one shared context; keep expected grade ≥ threshold.
    Grade {
        /// Lowest expected grade kept (1–5). By default, 4.
        threshold: f64,
    },
    /// Ask per chunk whether it is needed; keep P(yes) ≥ threshold.
    Keep {
        /// Lowest P(yes) kept (0–1). By default, 0.5.
        threshold: f64,
    },
    /// Keep the first `keep_top_k`; the model adds at most `extra` of its yes answers.
    BudgetSelect {
        /// Chunks the model may add.
        extra: usize,
        /// Lowest P(yes) the model's additions need. By default, 0.5.
        threshold: f64,
    },
    /// Positional truncation: keep the first `n` (the baseline).
    TopN {
        /// Chunks kept.
        n: usize,
    },
}

/// The strategies' names, as `named` takes them.
pub const STRATEGY_NAMES: [&str; 4] = ["grade", "keep", "budget-select", "top-n"];

impl Strategy {
    /// A strategy by name with its settings, each defaulting when not
    /// given: `threshold` 4 (grade) or 0.5 (keep, budget-select), `extra`
    /// 3, `n` 5. Settings a strategy does not use are ignored.
    pub fn named(
        name: &str,
        threshold: Option<f64>,
        extra: Option<usize>,
        n: Option<usize>,
    ) -> Result<Strategy> {
        let strategy = match name {
            "grade" => Strategy::Grade {
                threshold: threshold.unwrap_or(4.0),
            },
            "keep" => Strategy::Keep {
                threshold: threshold.unwrap_or(0.5),
            },
            "budget-select" => Strategy::BudgetSelect {
                extra: extra.unwrap_or(3),
                threshold: threshold.unwrap_or(0.5),
            },
            "top-n" => Strategy::TopN { n: n.unwrap_or(5) },
            other => {
                return Err(Error::Config(format!(
                    "unknown strategy `{other}` (strategies: {})",
                    STRATEGY_NAMES.join(", ")
                )))
            }
        };
        strategy.check()?;
        Ok(strategy)
    }

    /// Its name: grade, keep, budget-select or top-n.
    pub fn name(&self) -> &'static str {
        match self {
            Strategy::Grade { .. } => "grade",
            Strategy::Keep { .. } => "keep",
            Strategy::BudgetSelect { .. } => "budget-select",
            Strategy::TopN { .. } => "top-n",
        }
    }

    pub(crate) fn check(&self) -> Result<()> {
        match *self {
            Strategy::Grade { threshold } if !(1.0..=5.0).contains(&threshold) => Err(
                Error::Config(format!("grade threshold must be in 1..=5, got {threshold}")),
            ),
            Strategy::Keep { threshold } | Strategy::BudgetSelect { threshold, .. }
                if !(0.0..=1.0).contains(&threshold) =>
            {
                Err(Error::Config(format!(
                    "probability threshold must be in 0..=1, got {threshold}"
                )))
            }
            Strategy::BudgetSelect { extra, .. } if extra > MAX_COUNT => Err(Error::Config(
                format!("extra must be at most {MAX_COUNT}, got {extra}"),
            )),
            Strategy::TopN { n } if !(1..=MAX_COUNT).contains(&n) => Err(Error::Config(format!(
                "n must be in 1..={MAX_COUNT}, got {n}"
            ))),
            _ => Ok(()),
        }
    }
}

/// The largest `extra` or `n` a strategy takes.
const MAX_COUNT: usize = 1_000_000;

impl Default for Strategy {
    fn default() -> Self {
        Strategy::Grade { threshold: 4.0 }
    }
}
