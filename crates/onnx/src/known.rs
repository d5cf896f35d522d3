//! The in-process models a tree can record as its embedder, told from the
//! description the tree keeps (`onnx(bge-small-en, cls)`,
//! `minilm(all-MiniLM-L6-v2)`): one parser, so the code that rebuilds a
//! tree's embedder and the code that picks a fitted model agree on what a
//! description names.

use serde::{Deserialize, Serialize};

/// A known in-process sentence embedder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KnownEmbedder {
    /// BAAI bge-small-en (`--embedder bge-small`), recorded as
    /// `onnx(bge-small-en, …)`.
    #[serde(rename = "bge-small-en")]
    BgeSmallEn,
    /// all-MiniLM-L6-v2 (`--embedder minilm`), recorded as `minilm(…)`.
    #[serde(rename = "all-MiniLM-L6-v2")]
    MiniLmL6,
}

impl KnownEmbedder {
    /// The known embedder a recorded description names, if any: the model
    /// name inside `onnx(…)` (up to its first comma), or any `minilm(…)`.
    pub fn of(description: &str) -> Option<KnownEmbedder> {
        if description.starts_with("minilm(") {
            return Some(KnownEmbedder::MiniLmL6);
        }
        let inner = description.strip_prefix("onnx(")?;
        match inner.split([',', ')']).next()?.trim() {
            "bge-small-en" => Some(KnownEmbedder::BgeSmallEn),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KnownEmbedder as K;

    #[test]
    fn descriptions_name_their_model_and_nothing_else() {
        assert_eq!(K::of("onnx(bge-small-en, cls)"), Some(K::BgeSmallEn));
        assert_eq!(K::of("onnx(bge-small-en)"), Some(K::BgeSmallEn));
        assert_eq!(K::of("minilm(all-MiniLM-L6-v2)"), Some(K::MiniLmL6));
        // A longer name is another model, not bge-small-en.
        assert_eq!(K::of("onnx(bge-small-en-v1.5, cls)"), None);
        assert_eq!(K::of("tfidf(dims=128)"), None);
        assert_eq!(K::of("openai(model=bge-small-en, url=x)"), None);
    }
}
