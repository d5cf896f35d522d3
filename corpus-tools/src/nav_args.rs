//! The navigator's flags, shared by `query`, `bench` and `serve`: one per
//! public setting of the navigator's list
//! (`treenav::navigator::settings`), named `--` and the setting's name
//! with `-` (`--no-…` for a switch on by default), its help and default
//! from the list, so a setting a strategy declares is a flag with no edit
//! here. An error names the flag typed.

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Command};
use serde_json::{Map, Number, Value};
use treenav::navigator::settings::{self, Kind, Setting};
use treenav::navigator::{Error, NavigatorConfig, Strategy};

/// The settings given on the command line, by name.
#[derive(Debug, Clone, Default)]
pub struct NavArgs {
    given: Map<String, Value>,
}

/// Earlier spellings, kept (hidden) so scripts that pass them still run:
/// the flag, the setting it sets and the value.
fn kept() -> [(&'static str, &'static str, Value); 4] {
    [
        ("fallback", "on_judge_error", Value::from("fallback")),
        ("alternate", "adaptive_split", Value::Bool(false)),
        ("adaptive-split", "adaptive_split", Value::Bool(true)),
        ("no-clusters", "clusters", Value::Bool(false)),
    ]
}

impl NavArgs {
    /// The settings: the library's defaults with those given, checked.
    pub fn config(&self) -> Result<NavigatorConfig> {
        let config = NavigatorConfig::default()
            .with_settings(&self.given)
            .map_err(as_flag)?;
        config.clone().check().map_err(as_flag)?;
        Ok(config)
    }
}

/// A setting's error, naming the flag that sets it.
fn as_flag(e: Error) -> anyhow::Error {
    match e {
        Error::Setting { name, problem } => {
            anyhow::anyhow!("--{} {problem}", name.replace('_', "-"))
        }
        other => other.into(),
    }
}

/// The settings' defaults, by name.
fn defaults() -> Map<String, Value> {
    match serde_json::to_value(NavigatorConfig::default()) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The flag of one setting.
fn arg(setting: &Setting, default: &Value, heading: &str) -> Arg {
    let help = match (setting.kind, default) {
        (Kind::Switch, Value::Bool(true)) => {
            format!("{} On by default: this turns it off.", setting.help)
        }
        _ => setting.help.to_string(),
    };
    let arg = Arg::new(setting.name)
        .long(setting.flag(default))
        .help(help)
        .help_heading(heading.to_string());
    let shown = match default {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    };
    let arg = match shown {
        Some(text) => arg.default_value(text),
        None => arg,
    };
    match setting.kind {
        Kind::Count { .. } => arg.value_parser(clap::value_parser!(u64)).value_name("N"),
        Kind::Counts { .. } => arg
            .value_parser(clap::value_parser!(u64))
            .value_delimiter(',')
            .action(ArgAction::Append)
            .value_name("N,N"),
        Kind::Number { .. } | Kind::Gap { .. } => {
            arg.value_parser(clap::value_parser!(f64)).value_name("X")
        }
        Kind::Seconds => arg
            .value_parser(clap::value_parser!(f64))
            .value_name("SECS"),
        Kind::Usd => arg.value_parser(clap::value_parser!(f64)).value_name("USD"),
        Kind::Switch if default == &Value::Bool(true) => arg.action(ArgAction::SetFalse),
        Kind::Switch => arg.action(ArgAction::SetTrue),
        Kind::Choice(names) => arg
            .value_parser(choices(setting.name, names))
            .value_name("NAME"),
    }
}

/// A choice's values, each strategy with its profile's line.
fn choices(name: &str, names: &'static [&'static str]) -> PossibleValuesParser {
    PossibleValuesParser::new(names.iter().map(|&value| {
        let about = match name {
            "strategy" => value.parse::<Strategy>().ok().map(|s| s.profile().about),
            _ => None,
        };
        match about {
            Some(about) => PossibleValue::new(value).help(about),
            None => PossibleValue::new(value),
        }
    }))
}

/// A number as JSON; one JSON cannot hold (NaN, ∞) as its text, which the
/// setting's check refuses by name.
fn number(x: f64) -> Value {
    Number::from_f64(x).map_or_else(|| Value::from(x.to_string()), Value::Number)
}

/// The value given on the command line for `setting`, if any.
fn given(matches: &ArgMatches, setting: &Setting) -> Option<Value> {
    if matches.value_source(setting.name) != Some(ValueSource::CommandLine) {
        return None;
    }
    let name = setting.name;
    Some(match setting.kind {
        Kind::Count { .. } => Value::from(*matches.get_one::<u64>(name)?),
        Kind::Counts { .. } => Value::from(
            matches
                .get_many::<u64>(name)?
                .copied()
                .collect::<Vec<u64>>(),
        ),
        Kind::Number { .. } | Kind::Gap { .. } | Kind::Seconds | Kind::Usd => {
            number(*matches.get_one::<f64>(name)?)
        }
        Kind::Switch => Value::Bool(matches.get_flag(name)),
        Kind::Choice(_) => Value::from(matches.get_one::<String>(name)?.as_str()),
    })
}

impl clap::FromArgMatches for NavArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut given = Map::new();
        for (flag, name, value) in kept() {
            if matches.get_flag(flag) {
                given.insert(name.to_string(), value);
            }
        }
        for (_, setting) in settings::all().filter(|(_, s)| s.public) {
            if let Some(value) = self::given(matches, setting) {
                given.insert(setting.name.to_string(), value);
            }
        }
        Ok(NavArgs { given })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = NavArgs::from_arg_matches(matches)?;
        Ok(())
    }
}

impl clap::Args for NavArgs {
    fn augment_args(mut cmd: Command) -> Command {
        let defaults = defaults();
        for (strategy, setting) in settings::all().filter(|(_, s)| s.public) {
            let heading = match strategy {
                None => "Navigation".to_string(),
                Some(s) => format!("Strategy {}", s.name()),
            };
            let default = defaults.get(setting.name).unwrap_or(&Value::Null);
            cmd = cmd.arg(arg(setting, default, &heading));
        }
        for (flag, _, _) in kept() {
            cmd = cmd.arg(
                Arg::new(flag)
                    .long(flag)
                    .action(ArgAction::SetTrue)
                    .hide(true),
            );
        }
        cmd
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        NavArgs::augment_args(cmd)
    }
}
