//! Word analysis shared by the tree builder (TF-IDF embedder, extractive
//! summaries, term statistics) and the lexical judge, so that statistics
//! computed at build time match the words scored at query time.
#![warn(missing_docs)]

/// The stopwords: a short English list (the one the shared reference BM25
/// figures use, plus a few).
pub const STOPWORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", "we", "were", "which", "from", "has", "have",
    "had", "its", "than", "also", "been", "our", "can", "after", "between", "during", "who",
    "when", "what", "how",
];

/// Whether a lower-cased word is a stopword ([`STOPWORDS`]).
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

pub mod analyzer;
pub mod index;
pub mod score;
pub mod stats;

/// Lower-cased alphanumeric words (`\w+`), stopwords removed.
pub fn terms(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !is_stopword(w))
}

/// Common words that say nothing about a topic: kept out of summaries.
const FUNCTION_WORDS: &[&str] = &[
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "only",
    "own",
    "same",
    "so",
    "too",
    "very",
    "just",
    "over",
    "under",
    "about",
    "above",
    "below",
    "again",
    "further",
    "once",
    "here",
    "why",
    "where",
    "whom",
    "whose",
    "his",
    "her",
    "hers",
    "him",
    "she",
    "he",
    "you",
    "your",
    "i",
    "me",
    "my",
    "us",
    "them",
    "those",
    "would",
    "could",
    "should",
    "may",
    "might",
    "must",
    "shall",
    "did",
    "does",
    "do",
    "being",
    "one",
    "two",
    "three",
    "first",
    "second",
    "new",
    "many",
    "much",
    "well",
    "however",
    "although",
    "though",
    "while",
    "because",
    "since",
    "until",
    "within",
    "without",
    "through",
    "across",
    "among",
    "against",
    "per",
    "via",
    "including",
    "known",
    "used",
    "use",
    "using",
    "made",
    "make",
    "called",
    "became",
    "become",
    "early",
    "late",
    "later",
    "several",
    "often",
    "also",
    "still",
    "yet",
    "even",
    "out",
    "up",
    "down",
    "off",
    "now",
    "what",
    "pro",
    "de",
    "et",
    "al",
];

/// Whether a term is worth showing to a reader: not a function word, not a
/// bare number, longer than two characters.
pub fn is_displayable(term: &str) -> bool {
    term.chars().count() > 2
        && term.chars().any(char::is_alphabetic)
        && !FUNCTION_WORDS.contains(&term)
}

/// 64-bit FNV-1a: a stable hash (unlike `std`'s), for seeds and cache keys.
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Text as one line of at most `max` characters (longer: cut, with `…`): every run of whitespace, line or paragraph separator
/// (U+2028/9, U+0085, the file/group/record separators U+001C–U+001E that
/// Python's `splitlines()` breaks on) and control character becomes one
/// space; bidirectional and zero-width format characters are dropped. So no
/// text shown to a model can start a line of its own, and a server that splits the
/// context into lines sees exactly one line per item.
pub fn one_line(text: &str, max: usize) -> String {
    if text.len() <= max && is_plain_line(text.as_bytes()) {
        // Already one line of printable ASCII, single-spaced: as is.
        return text.to_owned();
    }
    flatten(text, max)
}

/// [`one_line`] without its fast path.
fn flatten(text: &str, max: usize) -> String {
    let mut flat = String::with_capacity(text.len().min(max.saturating_mul(4)));
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            space = !flat.is_empty();
            continue;
        }
        if is_invisible_format(c) {
            continue;
        }
        if space {
            flat.push(' ');
            space = false;
        }
        flat.push(c);
    }
    truncate(&flat, max)
}

/// Printable ASCII with single spaces between words, none at the ends.
fn is_plain_line(bytes: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) else {
        return true;
    };
    first != b' '
        && last != b' '
        && bytes.iter().all(|b| (b' '..=b'~').contains(b))
        && !bytes.windows(2).any(|w| w == b"  ")
}

/// The first `max` characters of `text`; when it is longer, cut there (and
/// trailing whitespace dropped) with `…` appended. The one truncation
/// helper: trace labels, model prompts and terminal snippets all use it.
pub fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", text[..i].trim_end()),
        None => text.to_string(),
    }
}

/// Bidirectional embeddings, overrides and isolates, zero-width characters
/// and the byte-order mark: invisible, and able to reorder what a reader sees.
fn is_invisible_format(c: char) -> bool {
    matches!(c,
        '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{FEFF}')
}

/// A 128-bit fingerprint of bytes (XXH3-128), for in-memory cache keys:
/// fast enough to compute once per text, wide enough that distinct texts
/// do not collide in practice. Not stable across versions: never store it.
pub fn fingerprint(bytes: &[u8]) -> u128 {
    twox_hash::XxHash3_128::oneshot(bytes)
}

/// A 64-bit hash of a word (XXH3-64), for term lookups within a process.
pub fn term_hash(term: &str) -> u64 {
    twox_hash::XxHash3_64::oneshot(term.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_lowercase_and_drop_stopwords() {
        let t: Vec<String> = terms("The Rust-lang compiler, and THE borrow_checker!").collect();
        assert_eq!(t, vec!["rust", "lang", "compiler", "borrow_checker"]);
    }

    #[test]
    fn stable_hash_is_stable() {
        assert_eq!(stable_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(stable_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    proptest::proptest! {
        /// The fast path of `one_line` changes nothing but the speed.
        #[test]
        fn one_line_fast_path_agrees(text in "[ a-c~\t\n\u{200B}é]{0,12}", max in 0usize..14) {
            proptest::prop_assert_eq!(one_line(&text, max), flatten(&text, max));
        }
    }
}
