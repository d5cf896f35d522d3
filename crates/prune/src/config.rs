//! A pruner's settings in a file (`prune.json`), as `treenav bench --prune
//! --target-recall R` fits them on an evaluation set: the strategy and its
//! threshold, the judge whose scores the threshold cuts, and where the
//! threshold came from. `treenav prune --config`, `treenav serve
//! --prune-config` (and through it the Python client) use it.
//!
//! ```json
//! {"strategy": {"kind": "keep", "threshold": 0.31}, "keep_top_k": 1,
//!  "judge": {"backend": {"kind": "lexical"}},
//!  "fitted": {"dataset": "…/scifact", "split": "train", "questions": 300, …}}
//! ```

use crate::{Error, PruneOptions, Result, Strategy, TokenCounter};
use serde::{Deserialize, Serialize};
use std::path::Path;
use treenav_judge::JudgeOptions;

/// The largest config file read.
const MAX_BYTES: u64 = 1 << 20;

/// A pruner's settings, as a file holds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PruneConfig {
    /// The strategy and its knob.
    pub strategy: Strategy,
    /// The first k chunks of the incoming ranking always pass.
    #[serde(default = "one")]
    pub keep_top_k: usize,
    /// Tokens the kept chunks may use at most.
    #[serde(default)]
    pub token_budget: Option<usize>,
    /// The judge the threshold was chosen with: another judge's scores
    /// are on another scale, so users of the file judge with this one.
    pub judge: JudgeOptions,
    /// Where the threshold came from, when it was fitted.
    #[serde(default)]
    pub fitted: Option<Fitted>,
}

fn one() -> usize {
    1
}

/// How a threshold was chosen: the data, the target and what it bought.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fitted {
    /// The dataset (its path as given).
    pub dataset: String,
    /// Its split.
    pub split: String,
    /// Questions run.
    pub questions: usize,
    /// Questions whose gold was among the retrieved chunks.
    pub gold_retrieved: usize,
    /// Chunks retrieved per question.
    pub depth: usize,
    /// The share of needed chunks to keep that was asked.
    pub target_recall: f64,
    /// The share kept there.
    pub recall_retention: f64,
    /// The share of retrieved chunks dropped there.
    pub compression: f64,
    /// The command that fitted it.
    pub command: String,
}

impl PruneConfig {
    /// Reads and checks a config file; errors name the file and the field.
    pub fn read(path: &Path) -> Result<PruneConfig> {
        let kind = treenav_files::Kind::new("--prune-config", MAX_BYTES);
        let bytes = treenav_files::read(path, &kind).map_err(|e| Error::Config(e.to_string()))?;
        let config: PruneConfig = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        config
            .check()
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        Ok(config)
    }

    /// Writes the config through a temporary file and a rename.
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::Config(format!("cannot encode the config: {e}")))?;
        text.push('\n');
        treenav_files::atomic::write(path, text.as_bytes())
            .map_err(|e| Error::Config(format!("cannot write {}: {e}", path.display())))
    }

    /// The settings checked: the strategy's knob, the budget, the fit's
    /// shares.
    pub fn check(&self) -> Result<()> {
        self.strategy.check()?;
        if self.token_budget == Some(0) {
            return Err(Error::Config("token_budget must be at least 1".into()));
        }
        if let Some(f) = &self.fitted {
            for (name, v) in [
                ("fitted.target_recall", f.target_recall),
                ("fitted.recall_retention", f.recall_retention),
                ("fitted.compression", f.compression),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return Err(Error::Config(format!("{name} must be in 0..=1, got {v}")));
                }
            }
        }
        Ok(())
    }

    /// The pruner's options: this config's, tokens counted by `counter`.
    pub fn options(&self, counter: TokenCounter) -> PruneOptions {
        PruneOptions {
            strategy: self.strategy,
            keep_top_k: self.keep_top_k,
            token_budget: self.token_budget,
            counter,
            edge_placement: false,
        }
    }

    /// The judge to prune with: this config's, or `named` (a judge the
    /// user named, with its own options) when it is of the same kind;
    /// another kind is refused, its scores being on another scale. `path`
    /// names the config in the error.
    pub fn judge_or(&self, named: Option<JudgeOptions>, path: &Path) -> Result<JudgeOptions> {
        let fitted = self.judge.backend.kind();
        match named {
            None => Ok(self.judge.clone()),
            Some(judge) if judge.backend.backend_kind() == self.judge.backend.backend_kind() => {
                Ok(judge)
            }
            Some(judge) => Err(Error::Config(format!(
                "{}: its threshold was fitted with the {fitted} judge; --judge {} scores on another scale",
                path.display(),
                judge.backend.kind()
            ))),
        }
    }

    /// One line on where the threshold came from.
    pub fn describe(&self) -> String {
        let knob = match self.strategy {
            Strategy::Grade { threshold } | Strategy::Keep { threshold } => {
                format!("threshold {threshold}")
            }
            Strategy::BudgetSelect { extra, .. } => format!("extra {extra}"),
            Strategy::TopN { n } => format!("n {n}"),
        };
        let judge = self.judge.backend.kind();
        match &self.fitted {
            Some(f) => format!(
                "{} {knob} ({judge} judge), fitted on {} {} ({} questions) for recall ≥ {}: kept {:.3} of the needed chunks, dropped {:.3} of all",
                self.strategy.name(),
                f.dataset,
                f.split,
                f.questions,
                f.target_recall,
                f.recall_retention,
                f.compression
            ),
            None => format!("{} {knob} ({judge} judge)", self.strategy.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> PruneConfig {
        PruneConfig {
            strategy: Strategy::Keep { threshold: 0.3 },
            keep_top_k: 1,
            token_budget: None,
            judge: JudgeOptions::default(),
            fitted: Some(Fitted {
                dataset: "d".into(),
                split: "train".into(),
                questions: 10,
                gold_retrieved: 9,
                depth: 15,
                target_recall: 0.95,
                recall_retention: 0.96,
                compression: 0.5,
                command: "treenav bench …".into(),
            }),
        }
    }

    #[test]
    fn a_written_config_reads_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("prune.json");
        config().write(&path).expect("write");
        assert_eq!(PruneConfig::read(&path).expect("read"), config());
        assert!(config()
            .describe()
            .contains("threshold 0.3 (lexical judge)"));
    }

    #[test]
    fn a_bad_config_names_the_file_and_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("prune.json");
        let mut bad = config();
        bad.strategy = Strategy::Keep { threshold: 1.5 };
        std::fs::write(&path, serde_json::to_string(&bad).expect("json")).expect("write");
        let err = PruneConfig::read(&path)
            .expect_err("out of range")
            .to_string();
        assert!(err.contains("prune.json") && err.contains("0..=1"), "{err}");
        std::fs::write(
            &path,
            r#"{"strategy": {"kind": "keep", "threshold": 0.5}, "judge": {}, "treshold": 1}"#,
        )
        .expect("write");
        let err = PruneConfig::read(&path).expect_err("unknown").to_string();
        assert!(err.contains("treshold"), "{err}");
    }
}
