//! Every navigator setting, listed once.
//!
//! A setting is a field of [`crate::NavigatorConfig`] or of a strategy's
//! own settings (flattened into it), named as serde names it. This list
//! gives each its help line, its kind and its range; from it come the
//! range checks of [`crate::NavigatorConfig::check`], the CLI's flags
//! (`--` and the name with `-`; `--no-…` for a switch that is on by
//! default), the fields `serve`'s retrieve request takes and their OpenAPI
//! schema, and what the Python client lists. A strategy declares its own
//! (`SETTINGS` in its file) and the registry adds them. Tests hold the
//! list to serde's names, both ways.

use crate::{Error, Result, Strategy};
use serde_json::{Map, Value};
use treenav_judge::checked;

/// What a setting holds, and its range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A whole number in `min..=max`.
    Count {
        /// The least accepted.
        min: u64,
        /// The most accepted.
        max: u64,
    },
    /// A list of whole numbers, each in `min..=max`, at most `most` long.
    Counts {
        /// The least accepted.
        min: u64,
        /// The most accepted.
        max: u64,
        /// The longest list.
        most: usize,
    },
    /// A finite number in `min..=max`.
    Number {
        /// The least accepted.
        min: f64,
        /// The most accepted.
        max: f64,
    },
    /// A number of logits in `0..=max`, or none (`null`: never).
    Gap {
        /// The most accepted.
        max: f64,
    },
    /// A time in seconds, or none (`null`).
    Seconds,
    /// An amount in USD, or none (`null`).
    Usd,
    /// On or off.
    Switch,
    /// One of these names.
    Choice(&'static [&'static str]),
}

/// One setting: its serde name, what it does, what it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Setting {
    /// The name in config, requests and traces (`judge_budget`); the
    /// flag is the same with `-` (`--judge-budget`).
    pub name: &'static str,
    /// One line for `--help`, OpenAPI and the Python client.
    pub help: &'static str,
    /// What it holds and its range.
    pub kind: Kind,
    /// Whether users set it (a flag, a request field); `false`: the
    /// library's only (a tool sets it, e.g. `bench --evidence`).
    pub public: bool,
}

impl Setting {
    /// A whole number in `min..=max`.
    pub const fn count(name: &'static str, help: &'static str, min: u64, max: u64) -> Setting {
        Setting::of(name, help, Kind::Count { min, max })
    }

    /// A finite number in `min..=max`.
    pub const fn number(name: &'static str, help: &'static str, min: f64, max: f64) -> Setting {
        Setting::of(name, help, Kind::Number { min, max })
    }

    /// On or off.
    pub const fn switch(name: &'static str, help: &'static str) -> Setting {
        Setting::of(name, help, Kind::Switch)
    }

    /// A setting of any kind.
    pub const fn of(name: &'static str, help: &'static str, kind: Kind) -> Setting {
        Setting {
            name,
            help,
            kind,
            public: true,
        }
    }

    /// This setting, for the library only (no flag, no request field).
    pub const fn library_only(self) -> Setting {
        Setting {
            public: false,
            ..self
        }
    }

    /// Its command-line flag without the dashes: the name with `-`, and
    /// `no-` before a switch that is on by default.
    pub fn flag(&self, default: &Value) -> String {
        let flag = self.name.replace('_', "-");
        match (self.kind, default) {
            (Kind::Switch, Value::Bool(true)) => format!("no-{flag}"),
            _ => flag,
        }
    }

    /// Checks a value given for this setting (JSON): its type and range.
    pub fn check(&self, value: &Value) -> Result<()> {
        let problem = |what: String| Error::Setting {
            name: self.name.to_string(),
            problem: format!("must be {what}, got {value}"),
        };
        let ranged = |e: checked::OutOfRange| Error::Setting {
            name: self.name.to_string(),
            problem: format!("must be {}, got {}", e.range, e.value),
        };
        match (self.kind, value) {
            (Kind::Count { min, max }, _) => match value.as_u64() {
                Some(n) => checked::count(self.name, n, min..=max)
                    .map(drop)
                    .map_err(ranged),
                None => Err(problem(format!("a whole number in {min}..={max}"))),
            },
            (Kind::Counts { min, max, most }, Value::Array(items)) => {
                if items.len() > most {
                    return Err(problem(format!("a list of at most {most} numbers")));
                }
                items
                    .iter()
                    .try_for_each(|item| Setting::count(self.name, self.help, min, max).check(item))
            }
            (Kind::Counts { min, max, .. }, _) => {
                Err(problem(format!("a list of whole numbers in {min}..={max}")))
            }
            (Kind::Number { min, max }, _) => match value.as_f64() {
                Some(x) => checked::within(self.name, x, min..=max)
                    .map(drop)
                    .map_err(ranged),
                None => Err(problem(format!("a number in [{min}, {max}]"))),
            },
            (Kind::Gap { .. } | Kind::Seconds | Kind::Usd, Value::Null) => Ok(()),
            (Kind::Gap { max }, _) => Setting::number(self.name, self.help, 0.0, max).check(value),
            (Kind::Seconds, Value::Number(n)) => {
                let secs = n.as_f64().unwrap_or(f64::NAN);
                checked::seconds(self.name, secs).map(drop).map_err(ranged)
            }
            (Kind::Usd, Value::Number(n)) => {
                let usd = n.as_f64().unwrap_or(f64::NAN);
                checked::usd(self.name, usd).map(drop).map_err(ranged)
            }
            (Kind::Seconds, _) => Err(problem("a number of seconds".into())),
            (Kind::Usd, _) => Err(problem("an amount in USD".into())),
            (Kind::Switch, Value::Bool(_)) => Ok(()),
            (Kind::Switch, _) => Err(problem("true or false".into())),
            (Kind::Choice(names), Value::String(s)) if names.contains(&s.as_str()) => Ok(()),
            (Kind::Choice(names), _) => Err(problem(format!("one of {}", names.join(", ")))),
        }
    }
}

/// The navigator's own settings, read by every strategy (each strategy
/// lists its own in its file).
pub(crate) const NAVIGATOR: &[Setting] = &[
    Setting::of(
        "strategy",
        "How judgments are spent: `best-first` spends judge_budget; `levels` keeps budgets per level (≈ 8× the judgments for the same quality on SciFact).",
        Kind::Choice(Strategy::NAMES),
    ),
    Setting::count("top", "Passages returned (r).", 1, 1000),
    Setting::count("per_document", "At most N passages of one document in the result (0: no limit).", 0, 1000),
    Setting::count("shortlist", "Passages reranked by one multiple-choice question (m ≤ top; 0 turns it off).", 0, 1000),
    Setting::of(
        "budgets",
        "levels: candidates kept per level, top level first, e.g. 20,10 (missing levels keep 10).",
        Kind::Counts { min: 1, max: 100_000, most: 64 },
    ),
    Setting::count("batch_size", "Candidates per judge call.", 1, 200),
    Setting::count("card_titles", "Member titles on a cluster's card.", 0, 1000),
    Setting::count("lead_sentences", "Sentences shown after a document's title.", 1, 100),
    Setting::switch("calibration", "Calibrate the batches of a level against shared references."),
    Setting::count("lexical_entry", "Add the top N BM25 documents to the document level, always expanded (0: off).", 0, 10_000),
    Setting::of(
        "on_judge_error",
        "What a judge call that still fails after retries does: fail the query, or score its batch with the lexical judge (fallback).",
        Kind::Choice(&["fail", "fallback"]),
    ),
    Setting::of("deadline", "Time limit of the query in seconds.", Kind::Seconds),
    Setting::of("max_cost", "Cost limit of the query in USD.", Kind::Usd),
];

/// Every setting: the navigator's, then each strategy's own, with the
/// strategy they belong to.
pub fn all() -> impl Iterator<Item = (Option<Strategy>, &'static Setting)> {
    let common = NAVIGATOR.iter().map(|s| (None, s));
    let own = Strategy::ALL
        .iter()
        .flat_map(|&strategy| strategy.settings().iter().map(move |s| (Some(strategy), s)));
    common.chain(own)
}

/// The setting named `name`.
pub fn named(name: &str) -> Option<&'static Setting> {
    all().map(|(_, s)| s).find(|s| s.name == name)
}

/// Checks every setting of a config's JSON form against the list.
pub(crate) fn check_all(json: &Map<String, Value>) -> Result<()> {
    for (_, setting) in all() {
        setting.check(json.get(setting.name).unwrap_or(&Value::Null))?;
    }
    Ok(())
}

/// Checks settings given from outside (flags, a request): each a public
/// setting, of its kind, within its range.
pub(crate) fn check_given(given: &Map<String, Value>) -> Result<()> {
    for (name, value) in given {
        match named(name) {
            Some(setting) if setting.public => setting.check(value)?,
            _ => {
                return Err(Error::Setting {
                    name: name.clone(),
                    problem: "is not a setting (see `treenav query --help`)".into(),
                })
            }
        }
    }
    Ok(())
}

/// `f64::INFINITY` as `null` in JSON (which has no infinity), and back.
pub(crate) mod infinity_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Writes a number, `null` for infinity.
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        match x.is_infinite() {
            true => s.serialize_none(),
            false => s.serialize_f64(*x),
        }
    }

    /// Reads a number, infinity for `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NavigatorConfig;
    use std::collections::BTreeSet;

    /// The list and serde's names are one: every field of the config's
    /// JSON form is listed, every listed setting is a field, none twice.
    #[test]
    fn the_list_is_serdes_names() {
        let json = serde_json::to_value(NavigatorConfig::default()).expect("json");
        let fields: BTreeSet<&str> = json
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        let listed: Vec<&str> = all().map(|(_, s)| s.name).collect();
        let unique: BTreeSet<&str> = listed.iter().copied().collect();
        assert_eq!(
            listed.len(),
            unique.len(),
            "a name listed twice: {listed:?}"
        );
        assert_eq!(fields, unique);
        assert!(check_all(json.as_object().expect("object")).is_ok());
    }

    /// A value is checked for its kind and range, naming the setting.
    #[test]
    fn values_are_checked_by_kind_naming_the_setting() {
        let says = |name: &str, value: Value| {
            let given = Map::from_iter([(name.to_string(), value)]);
            check_given(&given)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(says("top", Value::from(0)).contains("top must be in 1..=1000, got 0"));
        assert!(says("top", Value::from("ten")).contains("top must be a whole number"));
        assert!(says("budgets", serde_json::json!([0])).contains("budgets must be in"));
        assert!(says("strategy", Value::from("dfs")).contains("best-first, levels"));
        assert!(says("deadline", Value::from(-1.0)).contains("deadline must be in (0"));
        assert!(says("colour", Value::from(1)).contains("colour is not a setting"));
        assert!(says("keep_evidence", Value::from(true)).contains("is not a setting"));
        assert!(says("skip_judge_gap", Value::Null).is_empty());
        assert!(says("fusion", Value::from(2.5)).is_empty());
    }
}
