//! A query's gold resolved to passage and document indices, and the
//! metrics of a ranking against it.

use crate::baselines::Collection;
use crate::dataset::{GoldLevel, Query};
use crate::metrics::{score, Metrics};
use crate::{Error, Result};
use std::collections::{HashMap, HashSet};

/// Gold of one query resolved to passage and document indices.
pub(crate) struct Gold {
    /// Passage gold unit of each passage (by index), for passage metrics.
    pub(crate) passage_unit: HashMap<usize, usize>,
    pub(crate) passage_units: usize,
    pub(crate) passage_relevant: usize,
    /// Gold documents (indices), ordered.
    pub(crate) documents: Vec<usize>,
}

impl Gold {
    /// Every gold passage (by index): the gold passages themselves, or every
    /// passage of a gold document.
    pub(crate) fn passages(&self) -> HashSet<usize> {
        self.passage_unit.keys().copied().collect()
    }
}

/// Resolves a query's gold ids against the collection; a gold id the
/// corpus lacks is an error (the dataset and corpus disagree).
pub(crate) fn resolve(query: &Query, level: GoldLevel, c: &Collection) -> Result<Gold> {
    match level {
        GoldLevel::Passage => {
            let mut passage_unit = HashMap::new();
            let mut documents = Vec::new();
            for (u, id) in query.gold.iter().enumerate() {
                let i = *c.index.get(id).ok_or_else(|| Error::MissingGold {
                    query: query.id.clone(),
                    level: "passage",
                    id: id.clone(),
                })?;
                passage_unit.insert(i, u);
                if !documents.contains(&c.document_of[i]) {
                    documents.push(c.document_of[i]);
                }
            }
            Ok(Gold {
                passage_units: query.gold.len(),
                passage_relevant: query.gold.len(),
                passage_unit,
                documents,
            })
        }
        GoldLevel::Document => {
            let mut passage_unit = HashMap::new();
            let mut documents = Vec::new();
            for (u, id) in query.gold.iter().enumerate() {
                let d =
                    c.documents
                        .iter()
                        .position(|x| x == id)
                        .ok_or_else(|| Error::MissingGold {
                            query: query.id.clone(),
                            level: "document",
                            id: id.clone(),
                        })?;
                documents.push(d);
                for p in &c.passages_of[d] {
                    passage_unit.insert(*p, u);
                }
            }
            Ok(Gold {
                passage_units: documents.len(),
                passage_relevant: passage_unit.len(),
                passage_unit,
                documents,
            })
        }
    }
}

pub(crate) fn metrics(ranking: &[usize], gold: &Gold, c: &Collection) -> (Metrics, Metrics) {
    let passage: Vec<Option<usize>> = ranking
        .iter()
        .take(10)
        .map(|i| gold.passage_unit.get(i).copied())
        .collect();
    let mut seen = HashSet::new();
    let documents: Vec<Option<usize>> = ranking
        .iter()
        .map(|i| c.document_of[*i])
        .filter(|d| seen.insert(*d))
        .take(10)
        .map(|d| gold.documents.iter().position(|g| *g == d))
        .collect();
    (
        score(&passage, gold.passage_units, gold.passage_relevant),
        score(&documents, gold.documents.len(), gold.documents.len()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use treenav_corpus::{load_str, Format, LoadOptions};

    /// Gold the corpus lacks is a typed error naming the query, the level
    /// and the id.
    #[test]
    fn missing_gold_is_typed() {
        let corpus = load_str(
            r#"{"_id":"d1","title":"T","text":"Some text here."}"#,
            "c.jsonl",
            Format::Beir,
            &LoadOptions::default(),
        )
        .expect("corpus");
        let c = Collection::new(&corpus);
        let q = Query {
            id: "q1".into(),
            text: "text".into(),
            gold: vec!["d9".into()],
        };
        match resolve(&q, GoldLevel::Document, &c) {
            Err(Error::MissingGold { query, level, id }) => {
                assert_eq!(
                    (query.as_str(), level, id.as_str()),
                    ("q1", "document", "d9")
                );
            }
            other => panic!("expected MissingGold, got {:?}", other.map(|g| g.documents)),
        }
        let ok = resolve(
            &Query {
                gold: vec!["d1".into()],
                ..q
            },
            GoldLevel::Document,
            &c,
        )
        .expect("present");
        assert_eq!(ok.passages().len(), 1);
    }
}
