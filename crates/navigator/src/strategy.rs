//! The strategies: how a query spends its judgments.
//!
//! Each strategy is a module of its own that declares its [`Profile`]
//! (name, one line for `--strategy`'s help, what it spends and reads) and
//! its `run` (a query within a scope to a [`crate::Retrieval`]); one line
//! in the crate root's `strategies!` registers it: the [`crate::Strategy`]
//! variant (its kebab-case name in config, `serve`'s requests and
//! OpenAPI), the CLI's `--strategy` values ([`crate::Strategy::ALL`]) and
//! the dispatch follow. The registry sits in the crate root, beside the
//! module declarations, so the navigator (which strategies run on) never
//! depends on a strategy's module. A strategy with settings of its own
//! keeps them and their checks in a leaf module beside it
//! (`best_first/settings.rs`: [`crate::BestFirstConfig`]), which the
//! navigator's config names without depending on the strategy's search.

use crate::{Error, Result, Strategy};

/// What a strategy is, declared in its own file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// Its name on the command line, in config and in traces.
    pub name: &'static str,
    /// One line saying what it does, for `--strategy`'s help.
    pub about: &'static str,
    /// Whether it spends `judge_budget`: the check then asks the budget to
    /// exceed the shortlist (whose rerank it pays for).
    pub spends_judge_budget: bool,
    /// Whether it reads the BM25 index over documents even with
    /// `lexical_entry` off.
    pub reads_document_index: bool,
}

/// Registers the strategies (invoked once, in the crate root, where the
/// modules are declared): `Variant in module,` per strategy, its file
/// `module.rs` holding `PROFILE`, its settings (`Settings`, a serde
/// struct with defaults, and `SETTINGS`, their list for
/// [`crate::settings`]; both may be empty) and
/// `async fn run(&Navigator, query, &Scope) -> Result<Retrieval>`.
macro_rules! strategies {
    ($( $(#[$meta:meta])* $variant:ident in $module:ident, )*) => {
        $( mod $module; )*

        /// How the navigator spends its judgments (`kebab-case` in config
        /// and requests: each variant's [`StrategyProfile::name`]).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "kebab-case")]
        #[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
        pub enum Strategy {
            $( $(#[$meta])* $variant, )*
        }

        impl Strategy {
            /// Every strategy, in the order the CLI lists them.
            pub const ALL: &'static [Strategy] = &[$( Strategy::$variant, )*];

            /// Their names, in the same order.
            pub const NAMES: &'static [&'static str] = &[$( $module::PROFILE.name, )*];

            /// The settings of its own, declared in its file.
            pub fn settings(self) -> &'static [crate::settings::Setting] {
                match self {
                    $( Strategy::$variant => $module::SETTINGS, )*
                }
            }

            /// The profile declared in the strategy's file.
            pub fn profile(self) -> StrategyProfile {
                match self {
                    $( Strategy::$variant => $module::PROFILE, )*
                }
            }

            /// Runs one query within `scope`.
            pub(crate) async fn run(
                self,
                navigator: &Navigator,
                query: &str,
                scope: &navigate::Scope,
            ) -> Result<Retrieval> {
                match self {
                    $( Strategy::$variant => $module::run(navigator, query, scope).await, )*
                }
            }
        }

        /// Every strategy's own settings, each strategy's flattened into
        /// [`NavigatorConfig`]'s JSON form (their names are unique: a test).
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(default)]
        pub struct StrategySettings {
            $( #[serde(flatten)] pub(crate) $module: $module::Settings, )*
        }
    };
}

impl Strategy {
    /// Its name on the command line, in config and in traces.
    pub fn name(self) -> &'static str {
        self.profile().name
    }
}

impl std::str::FromStr for Strategy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Strategy> {
        let s = s.trim();
        Strategy::ALL
            .iter()
            .copied()
            .find(|strategy| strategy.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Strategy::ALL.iter().map(|s| s.name()).collect();
                Error::Config(format!(
                    "unknown strategy `{s}` (strategies: {})",
                    names.join(", ")
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::Strategy;

    /// A profile's name is the one serde reads and writes, so config,
    /// requests, `--strategy` and traces agree.
    #[test]
    fn each_profile_names_its_variant_as_serde_does() {
        for &strategy in Strategy::ALL {
            let json = serde_json::to_string(&strategy).expect("serialize");
            assert_eq!(json, format!("\"{}\"", strategy.name()));
            assert_eq!(strategy.name().parse::<Strategy>().ok(), Some(strategy));
            assert!(!strategy.profile().about.is_empty());
        }
        assert_eq!(Strategy::default(), Strategy::BestFirst);
    }
}
