//! TF-IDF vectors reduced to a few dense dimensions by a seeded random projection.
//!
//! Each kept term gets a fixed pseudo-random ±1 vector derived from a stable
//! hash of the term and the seed; a text's vector is the sum of its terms'
//! vectors weighted by (1 + ln tf) · idf, then L2-normalised. By the
//! Johnson–Lindenstrauss lemma, dot products (cosines) of the TF-IDF vectors
//! are approximately kept, which is all k-means needs. Deterministic: the same
//! texts, dims and seed give the same vectors on every machine.
//!
//! The vocabulary and IDF fitted on a build's documents are a
//! [`TfidfModel`], kept beside the tree so that documents added later are
//! embedded in the same space.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use treenav_text::{stable_hash, terms};

/// Terms kept at most (by document frequency) to bound memory on large corpora.
const MAX_VOCABULARY: usize = 200_000;

/// Output dimensions a model may have (what `--embedder tfidf` accepts).
pub const MAX_DIMS: usize = 4096;

/// A fitted TF-IDF embedder: its kept terms with their IDF, the dimensions
/// and the projection seed. Checked where it is read (dimensions in range,
/// terms sorted and unique), so that a text's terms are found by binary
/// search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "ModelFields")]
pub struct TfidfModel {
    dims: usize,
    seed: u64,
    terms: Vec<(String, f32)>,
}

/// A model as stored, before it is checked.
#[derive(Deserialize)]
struct ModelFields {
    dims: usize,
    seed: u64,
    terms: Vec<(String, f32)>,
}

impl TryFrom<ModelFields> for TfidfModel {
    type Error = String;

    fn try_from(m: ModelFields) -> Result<TfidfModel, String> {
        if !(1..=MAX_DIMS).contains(&m.dims) {
            return Err(format!(
                "a TF-IDF model of {} dimensions, out of range 1..={MAX_DIMS}",
                m.dims
            ));
        }
        if let Some(pair) = m.terms.windows(2).find(|w| w[0].0 >= w[1].0) {
            return Err(format!(
                "a TF-IDF model's terms are not sorted and unique (`{}` before `{}`)",
                pair[0].0, pair[1].0
            ));
        }
        if let Some((term, _)) = m.terms.iter().find(|(_, w)| !w.is_finite()) {
            return Err(format!(
                "a TF-IDF model's term `{term}` has no finite weight"
            ));
        }
        Ok(TfidfModel {
            dims: m.dims,
            seed: m.seed,
            terms: m.terms,
        })
    }
}

/// A text's term counts.
fn term_counts(text: &str) -> HashMap<String, u32> {
    let mut tf = HashMap::new();
    for term in terms(text) {
        *tf.entry(term).or_insert(0u32) += 1;
    }
    tf
}

/// How many of `texts` use each term, reading one text at a time (no
/// text's counts are kept: at 5M documents keeping them all took ≈ 10 GB).
fn document_frequencies(texts: &[String]) -> HashMap<String, u32> {
    let mut df: HashMap<String, u32> = HashMap::new();
    for text in texts {
        for term in term_counts(text).into_keys() {
            *df.entry(term).or_insert(0) += 1;
        }
    }
    df
}

/// The vocabulary and IDF of `n` texts whose document frequencies are `df`.
fn fit_df(df: &HashMap<String, u32>, n: usize, dims: usize, seed: u64) -> TfidfModel {
    // Terms in one text only cannot pull two texts together; terms in more
    // than half carry no topic. Keep the rest (all of them for tiny corpora).
    let max_df = ((n as f64) * 0.5).ceil().max(2.0) as u32;
    let min_df = if n >= 20 { 2 } else { 1 };
    let mut vocab: Vec<(&str, u32)> = df
        .iter()
        .map(|(t, d)| (t.as_str(), *d))
        .filter(|(_, d)| *d >= min_df && *d <= max_df)
        .collect();
    vocab.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    vocab.truncate(MAX_VOCABULARY);
    let mut terms: Vec<(String, f32)> = vocab
        .into_iter()
        .map(|(term, d)| {
            let idf = ((1.0 + n as f64) / (1.0 + d as f64)).ln() as f32 + 1.0;
            (term.to_string(), idf)
        })
        .collect();
    terms.sort_by(|a, b| a.0.cmp(&b.0));
    TfidfModel { dims, seed, terms }
}

impl TfidfModel {
    /// Fits the vocabulary and IDF of `texts`.
    pub fn fit(texts: &[String], dims: usize, seed: u64) -> TfidfModel {
        fit_df(&document_frequencies(texts), texts.len(), dims, seed)
    }

    /// Output dimensions.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Projection seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Kept terms and their IDF, sorted by term.
    pub fn terms(&self) -> &[(String, f32)] {
        &self.terms
    }

    /// The kept `term` and its IDF, by binary search of the sorted terms.
    fn idf(&self, term: &str) -> Option<(&str, f32)> {
        let i = self
            .terms
            .binary_search_by(|(t, _)| t.as_str().cmp(term))
            .ok()?;
        self.terms.get(i).map(|(t, w)| (t.as_str(), *w))
    }

    /// Embeds `texts` into unit vectors in this model's space (zero rows
    /// for texts with no kept term).
    pub fn transform(&self, texts: &[String]) -> Array2<f32> {
        self.project(texts)
    }

    /// The projected rows of `texts`, each counted as it is projected. A
    /// term's ±1 vector is made when a text first uses it (embedding a few
    /// new texts touches a few terms, not the whole vocabulary).
    fn project(&self, texts: &[String]) -> Array2<f32> {
        let dims = self.dims;
        let scale = 1.0 / (dims as f32).sqrt();
        let mut vectors: HashMap<&str, Vec<f32>> = HashMap::new();
        let mut out = Array2::<f32>::zeros((texts.len(), dims));
        for (i, text) in texts.iter().enumerate() {
            let doc = term_counts(text);
            let mut row = out.row_mut(i);
            // Sorted terms: the float sum is then independent of hash-map order.
            let mut entries: Vec<(&String, &u32)> = doc.iter().collect();
            entries.sort();
            for (term, tf) in entries {
                let Some((key, weight)) = self.idf(term) else {
                    continue;
                };
                let v = vectors.entry(key).or_insert_with(|| {
                    let mut rng =
                        Xoshiro256PlusPlus::seed_from_u64(stable_hash(key.as_bytes()) ^ self.seed);
                    (0..dims)
                        .map(|_| if rng.gen::<bool>() { scale } else { -scale })
                        .collect()
                });
                let w = (1.0 + (*tf as f32).ln()) * weight;
                for (x, p) in row.iter_mut().zip(v.iter()) {
                    *x += w * p;
                }
            }
            let norm = row.dot(&row).sqrt();
            if norm > 0.0 {
                row.mapv_inplace(|x| x / norm);
            }
        }
        out
    }
}

/// Fits a model on `texts` and embeds them with it (each text counted
/// twice, once for the vocabulary and once for its row: the counts are
/// never all held).
pub fn fit_embed(texts: &[String], dims: usize, seed: u64) -> (TfidfModel, Array2<f32>) {
    let model = TfidfModel::fit(texts, dims, seed);
    let out = model.project(texts);
    (model, out)
}

/// Embeds `texts` into `dims`-dimensional unit vectors (zero rows for texts with no kept term).
pub fn embed(texts: &[String], dims: usize, seed: u64) -> Array2<f32> {
    fit_embed(texts, dims, seed).1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn deterministic_and_normalised() {
        let t = texts(&[
            "insulin glucose diabetes",
            "glucose insulin",
            "football goal match",
        ]);
        let a = embed(&t, 64, 7);
        let b = embed(&t, 64, 7);
        assert_eq!(a, b);
        for row in a.rows() {
            assert!((row.dot(&row) - 1.0).abs() < 1e-4);
        }
    }

    #[test]
    fn a_fitted_model_embeds_new_texts_as_the_build_did() {
        let t = texts(&[
            "insulin glucose diabetes",
            "glucose insulin",
            "football goal match",
            "match goal league",
        ]);
        let (model, built) = fit_embed(&t, 32, 3);
        assert_eq!(model.transform(&t), built, "the same vectors again");
        let new = model.transform(&texts(&["insulin and glucose levels", "unknownword"]));
        assert!(new.row(0).dot(&built.row(0)) > new.row(0).dot(&built.row(2)));
        assert_eq!(new.row(1).dot(&new.row(1)), 0.0, "no kept term: a zero row");
    }

    #[test]
    fn a_read_model_is_checked_where_it_enters() {
        let (model, _) = fit_embed(&texts(&["insulin glucose", "glucose insulin"]), 8, 1);
        let json = serde_json::to_string(&model).expect("serialise");
        let back: TfidfModel = serde_json::from_str(&json).expect("a saved model reads back");
        assert_eq!(back, model);
        let bad = |s: &str| {
            serde_json::from_str::<TfidfModel>(s)
                .expect_err(s)
                .to_string()
        };
        let unsorted = r#"{"dims":8,"seed":1,"terms":[["b",1.0],["a",1.0]]}"#;
        assert!(
            bad(unsorted).contains("not sorted and unique"),
            "{}",
            bad(unsorted)
        );
        let twice = r#"{"dims":8,"seed":1,"terms":[["a",1.0],["a",2.0]]}"#;
        assert!(bad(twice).contains("not sorted and unique"));
        let wide = r#"{"dims":100000000,"seed":1,"terms":[]}"#;
        assert!(bad(wide).contains("out of range"), "{}", bad(wide));
        assert!(bad(r#"{"dims":0,"seed":1,"terms":[]}"#).contains("out of range"));
    }

    #[test]
    fn similar_texts_are_closer() {
        let t = texts(&[
            "insulin glucose diabetes pancreas",
            "glucose insulin diabetes blood",
            "football goal match league",
        ]);
        let e = embed(&t, 256, 1);
        let sim = |i: usize, j: usize| e.row(i).dot(&e.row(j));
        assert!(
            sim(0, 1) > sim(0, 2) + 0.3,
            "{} vs {}",
            sim(0, 1),
            sim(0, 2)
        );
    }
}
