//! Sentence-aware chunking with a word budget.
//!
//! Text is split into paragraphs (blank lines), paragraphs into sentences
//! (Unicode sentence boundaries, UAX #29), and sentences are packed greedily
//! into passages of at most `max_words` words. A paragraph boundary is
//! preferred over a sentence boundary; a sentence is cut only when it alone
//! is longer than the budget, and then at word boundaries. No word is lost,
//! duplicated or reordered.

use unicode_segmentation::UnicodeSegmentation;

/// Default passage budget in words (about 128, as the issue asked).
pub const DEFAULT_PASSAGE_WORDS: usize = 128;

/// Splits text into trimmed, non-empty sentences.
pub fn sentences(text: &str) -> Vec<&str> {
    text.split_sentence_bounds()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The first `n` sentences of `text`, joined by one space.
pub fn first_sentences(text: &str, n: usize) -> String {
    let mut out = String::new();
    for s in sentences(text).into_iter().take(n) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(s);
    }
    out
}

/// Splits text into paragraphs at blank lines; each paragraph trimmed, empty ones dropped.
pub fn paragraphs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let blank = line.trim().is_empty();
        if blank {
            if let Some(s) = start.take() {
                out.push(text[s..end].trim());
            }
        } else {
            if start.is_none() {
                start = Some(offset);
            }
            end = offset + line.len();
        }
        offset += line.len();
    }
    if let Some(s) = start {
        out.push(text[s..end].trim());
    }
    out.retain(|p| !p.is_empty());
    out
}

fn word_count(s: &str) -> usize {
    s.split_whitespace().count()
}

struct Packer {
    max_words: usize,
    chunks: Vec<String>,
    current: String,
    current_words: usize,
}

impl Packer {
    fn flush(&mut self) {
        if !self.current.is_empty() {
            self.chunks.push(std::mem::take(&mut self.current));
            self.current_words = 0;
        }
    }

    fn push(&mut self, piece: &str, words: usize, separator: &str) {
        if self.current_words > 0 && self.current_words + words > self.max_words {
            self.flush();
        }
        if !self.current.is_empty() {
            self.current.push_str(separator);
        }
        self.current.push_str(piece);
        self.current_words += words;
    }

    fn push_sentence(&mut self, sentence: &str) {
        let words = word_count(sentence);
        if words <= self.max_words {
            self.push(sentence, words, " ");
            return;
        }
        // A sentence over budget alone: cut at word boundaries.
        self.flush();
        let all: Vec<&str> = sentence.split_whitespace().collect();
        for piece in all.chunks(self.max_words) {
            self.push(&piece.join(" "), piece.len(), " ");
            self.flush();
        }
    }
}

/// Chunks paragraphs into passages of at most `max_words` words (`max_words` ≥ 1).
///
/// Whole paragraphs are packed together while they fit; a paragraph over the
/// budget is split at sentence boundaries.
pub fn chunk_paragraphs(paras: &[&str], max_words: usize) -> Vec<String> {
    let mut packer = Packer {
        max_words: max_words.max(1),
        chunks: Vec::new(),
        current: String::new(),
        current_words: 0,
    };
    for para in paras {
        let words = word_count(para);
        if words == 0 {
            continue;
        }
        if words <= packer.max_words {
            packer.push(para.trim(), words, "\n\n");
            continue;
        }
        packer.flush();
        for sentence in sentences(para) {
            packer.push_sentence(sentence);
        }
        packer.flush();
    }
    packer.flush();
    packer.chunks
}

/// Chunks free text (paragraphs at blank lines) into passages of at most `max_words` words.
pub fn chunk_text(text: &str, max_words: usize) -> Vec<String> {
    chunk_paragraphs(&paragraphs(text), max_words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keeps_short_text_whole() {
        let chunks = chunk_text("One sentence. Two sentences.", 128);
        assert_eq!(chunks, vec!["One sentence. Two sentences."]);
    }

    #[test]
    fn splits_at_sentences_not_inside() {
        let text = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota.";
        let chunks = chunk_text(text, 6);
        assert_eq!(
            chunks,
            vec!["Alpha beta gamma. Delta epsilon zeta.", "Eta theta iota."]
        );
    }

    #[test]
    fn cuts_a_sentence_only_when_it_alone_is_over_budget() {
        let text = "a b c d e f g h. Short one.";
        let chunks = chunk_text(text, 3);
        assert_eq!(chunks, vec!["a b c", "d e f", "g h.", "Short one."]);
    }

    #[test]
    fn prefers_paragraph_boundaries() {
        let text = "First para here.\n\nSecond para here.\n\nThird para is here now.";
        let chunks = chunk_text(text, 6);
        assert_eq!(
            chunks,
            vec![
                "First para here.\n\nSecond para here.",
                "Third para is here now."
            ]
        );
    }

    #[test]
    fn first_sentences_takes_n() {
        assert_eq!(first_sentences("A b. C d. E f.", 2), "A b. C d.");
        assert_eq!(first_sentences("", 2), "");
    }

    proptest! {
        #[test]
        fn chunks_preserve_words_and_respect_budget(
            words in proptest::collection::vec("[a-z]{1,8}[.!?]?", 0..300),
            breaks in proptest::collection::vec(0usize..300, 0..10),
            budget in 1usize..60,
        ) {
            let mut text = String::new();
            for (i, w) in words.iter().enumerate() {
                if i > 0 {
                    text.push_str(if breaks.contains(&i) { "\n\n" } else { " " });
                }
                text.push_str(w);
            }
            let chunks = chunk_text(&text, budget);
            for c in &chunks {
                prop_assert!(word_count(c) <= budget, "chunk over budget: {c:?}");
                prop_assert!(word_count(c) > 0);
            }
            let rejoined: Vec<&str> = chunks.iter().flat_map(|c| c.split_whitespace()).collect();
            let original: Vec<&str> = text.split_whitespace().collect();
            prop_assert_eq!(rejoined, original);
        }
    }
}
