//! The analyzer: how text becomes the terms every lexical part of treenav
//! counts — the document index (tantivy), the passage statistics and the
//! lexical judge. One analyzer per tree, recorded with its statistics and
//! its index, so the terms counted at build time are the terms scored at
//! query time.
//!
//! | name | what |
//! |---|---|
//! | `en-stem` (default) | split on what is not a letter or digit, drop words over 40 bytes, lower-case, drop [`crate::is_stopword`]s, English Snowball stemming |
//! | `simple` | the same without stopwords or stemming |
//! | `words` | the analyzer of trees built before tantivy: split on what is not a letter, digit or `_`, lower-case, drop stopwords, no stemming |

use std::cell::RefCell;
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
    TokenStream,
};

/// How text becomes terms.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize,
)]
pub enum Analyzer {
    /// Words, lower-cased, stopwords dropped, English stemming.
    #[default]
    EnStem,
    /// Words, lower-cased.
    Simple,
    /// Trees built before tantivy: words (and `_`), lower-cased, stopwords
    /// dropped, not stemmed ([`crate::terms`]).
    Words,
}

/// Every analyzer's name, for help and errors.
pub const ANALYZER_NAMES: &[&str] = &["en-stem", "simple", "words"];

/// Words longer than this (bytes) are dropped, as tantivy's stock analyzers do.
const LONGEST_WORD: usize = 40;

impl Analyzer {
    /// Its name (`en-stem`, `simple`, `words`): also the tokenizer's name in
    /// a tantivy index.
    pub fn name(&self) -> &'static str {
        match self {
            Analyzer::EnStem => "en-stem",
            Analyzer::Simple => "simple",
            Analyzer::Words => "words",
        }
    }

    /// The tantivy analyzer doing the same (for an index's tokenizer).
    pub fn tantivy(&self) -> TextAnalyzer {
        let words = || {
            TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(LONGEST_WORD))
                .filter(LowerCaser)
        };
        match self {
            Analyzer::EnStem => words()
                .filter(StopWordFilter::remove(stopwords()))
                .filter(Stemmer::new(Language::English))
                .build(),
            Analyzer::Simple => words().build(),
            Analyzer::Words => TextAnalyzer::builder(WordsTokenizer).build(),
        }
    }

    /// The terms of `text`, in order.
    pub fn terms(&self, text: &str) -> Vec<String> {
        if *self == Analyzer::Words {
            return crate::terms(text).collect();
        }
        thread_local! {
            static ANALYZERS: RefCell<Vec<(Analyzer, TextAnalyzer)>> = const { RefCell::new(Vec::new()) };
        }
        ANALYZERS.with(|cell| {
            let mut analyzers = cell.borrow_mut();
            let i = match analyzers.iter().position(|(a, _)| a == self) {
                Some(i) => i,
                None => {
                    analyzers.push((*self, self.tantivy()));
                    analyzers.len() - 1
                }
            };
            let mut out = Vec::new();
            let mut stream = analyzers[i].1.token_stream(text);
            while stream.advance() {
                out.push(stream.token().text.clone());
            }
            out
        })
    }
}

impl std::fmt::Display for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Analyzer {
    type Err = String;

    fn from_str(s: &str) -> Result<Analyzer, String> {
        match s {
            "en-stem" | "en_stem" => Ok(Analyzer::EnStem),
            "simple" => Ok(Analyzer::Simple),
            "words" => Ok(Analyzer::Words),
            other => Err(format!(
                "unknown analyzer `{other}` (analyzers: {})",
                ANALYZER_NAMES.join(", ")
            )),
        }
    }
}

/// The stopword list as owned strings, for tantivy's filter.
fn stopwords() -> Vec<String> {
    crate::STOPWORDS.iter().map(|w| w.to_string()).collect()
}

/// [`crate::terms`] as a tantivy tokenizer (the `words` analyzer).
#[derive(Clone, Default)]
struct WordsTokenizer;

/// The tokens of one text for [`WordsTokenizer`].
struct WordsStream {
    tokens: Vec<tantivy::tokenizer::Token>,
    at: usize,
}

impl tantivy::tokenizer::Tokenizer for WordsTokenizer {
    type TokenStream<'a> = WordsStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> WordsStream {
        let tokens = crate::terms(text)
            .enumerate()
            .map(|(position, text)| tantivy::tokenizer::Token {
                position,
                text,
                ..Default::default()
            })
            .collect();
        WordsStream { tokens, at: 0 }
    }
}

impl TokenStream for WordsStream {
    fn advance(&mut self) -> bool {
        self.at += 1;
        self.at <= self.tokens.len()
    }

    fn token(&self) -> &tantivy::tokenizer::Token {
        &self.tokens[self.at - 1]
    }

    fn token_mut(&mut self) -> &mut tantivy::tokenizer::Token {
        &mut self.tokens[self.at - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn en_stem_stems_and_drops_stopwords() {
        let a = Analyzer::EnStem;
        assert_eq!(
            a.terms("The Running dogs were RUNNING; runs of the dog."),
            vec!["run", "dog", "run", "run", "dog"]
        );
        assert_eq!(Analyzer::Simple.terms("The Dogs"), vec!["the", "dogs"]);
        assert_eq!(
            Analyzer::Words.terms("The snake_case Dogs"),
            vec!["snake_case", "dogs"]
        );
        let long = "x".repeat(41);
        assert!(a.terms(&long).is_empty(), "words over 40 bytes are dropped");
    }

    #[test]
    fn names_round_trip_and_unknown_ones_are_named() {
        for name in ANALYZER_NAMES {
            let a: Analyzer = name.parse().expect("known");
            assert_eq!(a.name(), *name);
        }
        let e = "porter".parse::<Analyzer>().expect_err("unknown");
        assert!(e.contains("en-stem, simple, words"), "{e}");
    }

    #[test]
    fn the_tantivy_analyzer_gives_the_same_terms() {
        for a in [Analyzer::EnStem, Analyzer::Simple, Analyzer::Words] {
            let text = "Insulin lowers blood-glucose levels; snake_case 42 ÉTÉ";
            let mut t = a.tantivy();
            let mut stream = t.token_stream(text);
            let mut got = Vec::new();
            while stream.advance() {
                got.push(stream.token().text.clone());
            }
            assert_eq!(got, a.terms(text), "{a}");
        }
    }
}
