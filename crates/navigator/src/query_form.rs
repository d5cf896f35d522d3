//! The form of a query: a question, or a statement (a claim, a title, a
//! phrase), and the size of the passages it is asked over — the two things
//! besides the scores that the cascade's fitted model reads.
//!
//! The cross-encoder we ship (ms-marco MiniLM) learned from questions
//! people typed into a search engine. Where it gives its best passage a
//! logit of 4 or more, that passage is right at least as often as the
//! exploration's best on every collection of questions we measured (SQuAD,
//! Natural Questions over paragraphs, both split into sentences), and less
//! often on SciFact's claims ("0-dimensional biomaterials show inductive
//! properties") at every logit it gives; no score it returns told the two
//! apart, the query's form did (docs/calibration.md, "The judge's say
//! follows the query's form"). So the judge's say in the cascade grows
//! when the query is a question ([`is_question`]).
//!
//! English only, as the shipped cross-encoder is: a query is a question
//! when it ends with `?` or opens with an interrogative or an auxiliary
//! verb ("who", "how", "is", "does", …). Natural Questions' queries
//! mostly lack the mark ("who got the first nobel prize in physics") and
//! open with the word.
//!
//! Sentence-sized passages ([`sentence_sized`]): a corpus imported
//! pre-chunked (each sentence a document under its article's title). On
//! three such collections the cross-encoder's own order of the passages it
//! read was right at the top 3–10 points more often than the exploration's
//! (SQuAD's, XQuAD's and Natural Questions' sentences), on paragraphs 2–3
//! points (docs/calibration.md): a single vector of a sentence carries
//! little of its context, a reader of the pair sees it whole. So the
//! judge's say grows again where the passages it read are that short.

use serde::Serialize;

/// The median length in words at or below which the passages a judge read
/// are sentence-sized: the sentence collections measure 24–25 words a
/// passage, paragraphs (SQuAD, Natural Questions, SciFact's abstracts
/// chunked at 128 words) 84–97, the notes fixture 50.
pub const SENTENCE_WORDS: usize = 40;

/// Whether passages of these lengths in words are sentence-sized: their
/// median is at most [`SENTENCE_WORDS`] (false for none).
pub fn sentence_sized(words: impl IntoIterator<Item = usize>) -> bool {
    let mut words: Vec<usize> = words.into_iter().collect();
    if words.is_empty() {
        return false;
    }
    words.sort_unstable();
    words[(words.len() - 1) / 2] <= SENTENCE_WORDS
}

/// What the cascade's fitted order reads of a query besides the scores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Form {
    /// Whether it is a question ([`is_question`]).
    pub question: bool,
    /// Whether the passages the judge read for it are sentence-sized
    /// ([`sentence_sized`]).
    pub short: bool,
}

/// The words that open a question without its mark, lower-case.
const OPENERS: [&str; 29] = [
    "what", "who", "whom", "whose", "when", "where", "why", "which", "how", "is", "are", "was",
    "were", "do", "does", "did", "can", "could", "should", "would", "will", "has", "have", "had",
    "may", "might", "shall", "am", "whats",
];

/// Whether `query` is a question (see the module docs).
pub fn is_question(query: &str) -> bool {
    let query = query.trim();
    if query.ends_with('?') {
        return true;
    }
    let first: String = query
        .chars()
        .skip_while(|c| !c.is_alphabetic())
        .take_while(|c| c.is_alphabetic() || *c == '\'')
        .flat_map(char::to_lowercase)
        .collect();
    let word = first.split('\'').next().unwrap_or_default();
    OPENERS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_with_and_without_their_mark_are_questions() {
        for q in [
            "who got the first nobel prize in physics",
            "How much holiday allowance do I get annually?",
            "  What's the capital of France",
            "who's opening for justin timberlake in chicago",
            "is tomato a fruit or vegetable us supreme court",
            "Does the treaty still hold",
            "the structure that holds dna is called?",
            "\"when\" did it start",
        ] {
            assert!(is_question(q), "{q}");
        }
    }

    #[test]
    fn claims_titles_and_phrases_are_not() {
        for q in [
            "0-dimensional biomaterials show inductive properties.",
            "teams that beat the patriots in super bowls",
            "actor who plays george in grey's anatomy",
            "Whatever happened next",
            "Howard Hughes",
            "",
            "?!",
            "42",
        ] {
            assert!(!is_question(q), "{q}");
        }
    }

    #[test]
    fn sentences_are_sentence_sized_and_paragraphs_are_not() {
        assert!(sentence_sized([24, 31, 12]));
        // The median decides: one paragraph among sentences does not.
        assert!(sentence_sized([24, 300, 12, 40]));
        assert!(!sentence_sized([24, 300, 120, 41]));
        assert!(!sentence_sized([90, 128, 64]));
        assert!(sentence_sized([SENTENCE_WORDS]));
        assert!(!sentence_sized([SENTENCE_WORDS + 1]));
        assert!(!sentence_sized([]));
    }
}
