//! Every fitted model in one place: the embedding judge's calibration, the
//! exploration's fusion and the cascade's model, each keyed by a typed
//! identity of the embedder (and judge) it was fitted for.
//!
//! The weights are `fitted.json` beside this file, read at compile time:
//! the fitting scripts write their entry there (`scripts/fit-fusion.py
//! --write`, `scripts/fit-calibration.py --write`), so what ships is what
//! the script printed, and each entry carries the command that refits it
//! and what it was fitted on (docs/calibration.md has the tables). The
//! formulas that use the weights live beside the evidence they read: the
//! calibration in the embedding judge, the fusion and the cascade in the
//! navigator's `fusion` module.

use serde::{Deserialize, Serialize};
use std::sync::LazyLock;

/// An embedder a model was fitted for, told from the description a tree
/// records for its embedder (`onnx(bge-small-en, cls)`) by the one parser
/// the tree's own embedder is rebuilt with.
pub use treenav_onnx::KnownEmbedder as Embedder;

/// A judge kind a cascade was fitted for (a backend's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JudgeKind {
    /// The in-process ms-marco-MiniLM cross-encoder.
    #[serde(rename = "cross-encoder")]
    CrossEncoder,
}

impl JudgeKind {
    /// The fitted identity of a backend, if a cascade was fitted for it.
    pub fn of(kind: crate::BackendKind) -> Option<JudgeKind> {
        match kind {
            crate::BackendKind::CrossEncoder => Some(JudgeKind::CrossEncoder),
            _ => None,
        }
    }
}

/// A Platt calibration of the cosine: `P = σ(a · cos + b)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platt {
    /// Slope.
    pub a: f64,
    /// Intercept.
    pub b: f64,
}

impl Platt {
    /// P(relevant) of a cosine.
    pub fn probability(&self, cosine: f64) -> f64 {
        crate::probability::sigmoid(self.a * cosine + self.b)
    }
}

/// For an embedder without a fitted calibration: a cosine of 0.8 is even
/// odds (a guess, said as such).
pub const UNFITTED: Platt = Platt { a: 15.0, b: -12.0 };

/// The weights of the exploration's fitted fusion (the navigator's
/// `FittedFusion` reads a passage's evidence with them): `σ(bias + judge ·
/// J + graph · G + lexical_peak · g + g · Σ weight · lexical part)`, g the
/// query's lexical gate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fusion {
    /// The intercept.
    pub bias: f64,
    /// The weight of the judge's logit.
    pub judge: f64,
    /// The weight of the document's BM25 rank part.
    pub lexical_document: f64,
    /// The weight of the support by judged neighbours.
    pub graph: f64,
    /// The weight of the passage's BM25 rank part among the judged.
    pub lexical_passage: f64,
    /// The weight of the passage's share of the best BM25 score.
    pub bm25_share: f64,
    /// The weight of the lexical gate alone.
    pub lexical_peak: f64,
}

/// The weights of the cascade's model: `bias + explored · zₑ + (judged +
/// judged_gap · g + judged_question · q + judged_short · s) · zⱼ + gap · g`
/// for a passage the judge judged, g the query's judge gap, q 1 when the
/// query is a question, s 1 when the passages the judge read are
/// sentence-sized (the navigator's `FittedCascade::order` applies it;
/// only the order it gives the judged passages counts).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cascade {
    /// The intercept.
    pub bias: f64,
    /// The weight of the exploration's logit.
    pub explored: f64,
    /// The weight of the judge's logit.
    pub judged: f64,
    /// The weight of the judge's logit times the query's gap.
    pub judged_gap: f64,
    /// The weight of the judge's logit added when the query is a question.
    pub judged_question: f64,
    /// The weight of the judge's logit added when the passages it read are
    /// sentence-sized.
    pub judged_short: f64,
    /// The weight of the query's gap.
    pub gap: f64,
}

/// One fitted model with what it is for and how it was made.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry<M> {
    embedder: Embedder,
    #[serde(default)]
    judge: Option<JudgeKind>,
    /// The command that refits it.
    refit: String,
    /// What it was fitted on.
    #[allow(dead_code)]
    fitted_on: String,
    model: M,
}

/// A table of fitted models (`fitted.json`'s form): [`shipped`] is the
/// one compiled in; [`Models::read`] reads another (a refit under test).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Models {
    #[allow(dead_code)] // read by people
    about: String,
    calibration: Vec<Entry<Platt>>,
    fusion: Vec<Entry<Fusion>>,
    cascade: Vec<Entry<Cascade>>,
}

impl Models {
    /// Reads a table; an unknown field, or an embedder or judge without an
    /// identity here, is an error.
    pub fn read(text: &str) -> Result<Models, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// The embedding judge's calibration for an embedder (by its recorded
    /// description): the fitted one, else [`UNFITTED`].
    pub fn calibration(&self, embedder: &str) -> Platt {
        let id = Embedder::of(embedder);
        self.calibration
            .iter()
            .find(|e| Some(e.embedder) == id)
            .map_or(UNFITTED, |e| e.model)
    }

    /// The exploration's fitted fusion for an embedder, if one was fitted.
    pub fn fusion(&self, embedder: Embedder) -> Option<Fusion> {
        self.fusion
            .iter()
            .find(|e| e.embedder == embedder)
            .map(|e| e.model)
    }

    /// The cascade's fitted model for an embedder and a judge, if one was
    /// fitted.
    pub fn cascade(&self, embedder: Embedder, judge: JudgeKind) -> Option<Cascade> {
        self.cascade
            .iter()
            .find(|e| e.embedder == embedder && e.judge == Some(judge))
            .map(|e| e.model)
    }

    /// The command that refits each model, by section (`calibration`,
    /// `fusion`, `cascade`).
    pub fn refits(&self) -> Vec<(&'static str, &str)> {
        let calibration = self.calibration.iter().map(|e| ("calibration", &*e.refit));
        let fusion = self.fusion.iter().map(|e| ("fusion", &*e.refit));
        let cascade = self.cascade.iter().map(|e| ("cascade", &*e.refit));
        calibration.chain(fusion).chain(cascade).collect()
    }
}

/// The shipped table, parsed once. The file is part of the source, not
/// input: a test parses it, so a malformed edit fails the tests (and would
/// leave every model unfitted, logged, rather than stop a query).
pub fn shipped() -> &'static Models {
    static SHIPPED: LazyLock<Models> = LazyLock::new(|| {
        Models::read(include_str!("fitted.json")).unwrap_or_else(|e| {
            tracing::error!("crates/judge/src/fitted.json: {e}; every model unfitted");
            Models::default()
        })
    });
    &SHIPPED
}

/// The shipped calibration for an embedder ([`Models::calibration`]).
pub fn calibration(embedder: &str) -> Platt {
    shipped().calibration(embedder)
}

/// The shipped fusion for an embedder ([`Models::fusion`]).
pub fn fusion(embedder: Embedder) -> Option<Fusion> {
    shipped().fusion(embedder)
}

/// The shipped cascade for an embedder and a judge ([`Models::cascade`]).
pub fn cascade(embedder: Embedder, judge: JudgeKind) -> Option<Cascade> {
    shipped().cascade(embedder, judge)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped file parses, names the command that refits every entry,
    /// and keys a cascade by its judge (a fusion or calibration by none).
    #[test]
    fn the_shipped_file_parses_and_every_entry_says_how_to_refit_it() {
        let tables = Models::read(include_str!("fitted.json")).expect("fitted.json parses");
        assert!(!tables.calibration.is_empty() && !tables.fusion.is_empty());
        assert!(!tables.cascade.is_empty());
        for (section, refit) in tables.refits() {
            assert!(
                refit.starts_with("python3 scripts/fit-"),
                "{section}: {refit}"
            );
            assert_eq!(section == "cascade", refit.contains("--cascade"), "{refit}");
        }
        assert!(tables.calibration.iter().all(|e| e.judge.is_none()));
        assert!(tables.fusion.iter().all(|e| e.judge.is_none()));
        assert!(tables.cascade.iter().all(|e| e.judge.is_some()));
    }

    /// A field the models do not have, or an embedder without an
    /// identity, is an error (not a model silently missing).
    #[test]
    fn an_unknown_field_or_embedder_is_refused() {
        let good = include_str!("fitted.json");
        assert!(Models::read(&good.replace("\"judged_gap\"", "\"judged_gapp\"")).is_err());
        assert!(Models::read(&good.replace("\"bge-small-en\"", "\"bge-large\"")).is_err());
    }

    #[test]
    fn identities_are_read_from_descriptions_and_kinds() {
        assert_eq!(
            Embedder::of("onnx(bge-small-en, cls)"),
            Some(Embedder::BgeSmallEn)
        );
        assert_eq!(
            Embedder::of("onnx(bge-small-en)"),
            Some(Embedder::BgeSmallEn)
        );
        assert_eq!(Embedder::of("onnx(bge-small-en-v2, cls)"), None);
        assert_eq!(Embedder::of("tfidf(v1)"), None);
        assert_eq!(Embedder::of("openai(model=bge-small-en)"), None);
        assert_eq!(
            JudgeKind::of(crate::BackendKind::CrossEncoder),
            Some(JudgeKind::CrossEncoder)
        );
        assert_eq!(JudgeKind::of(crate::BackendKind::Embedding), None);
    }

    #[test]
    fn calibrations_are_monotone_and_picked_by_embedder() {
        let bge = calibration("onnx(bge-small-en, cls)");
        assert_ne!(bge, UNFITTED);
        assert_eq!(calibration("openai(model=x, url=y)"), UNFITTED);
        for p in [bge, UNFITTED, calibration("minilm(all-MiniLM-L6-v2)")] {
            assert!(p.probability(0.9) > p.probability(0.5));
            assert!((0.0..=1.0).contains(&p.probability(-1.0)));
        }
        assert!(fusion(Embedder::BgeSmallEn).is_some());
        assert!(cascade(Embedder::BgeSmallEn, JudgeKind::CrossEncoder).is_some());
    }
}
