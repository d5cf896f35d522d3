//! The form of a query: a question, or a statement (a claim, a title, a
//! phrase), which the cascade's fitted model reads.
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
}
