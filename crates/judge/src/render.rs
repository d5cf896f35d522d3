//! The shared context and the questions, as every backend shows them.

use crate::{Candidate, Scale};

/// Characters of one candidate's text shown at most (longer texts are cut
/// with an ellipsis), so one long passage cannot crowd out the others.
pub const MAX_CANDIDATE_CHARS: usize = 2_000;

fn flatten(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// The shared context: the query, then `[i] ID: … | Info: …` per candidate
/// (1-based), as in DecisionRAG.
pub fn render_state(query: &str, candidates: &[Candidate]) -> String {
    let mut s = format!(
        "Query: {}\n\nCandidates:\n",
        flatten(query, MAX_CANDIDATE_CHARS)
    );
    for (i, c) in candidates.iter().enumerate() {
        s.push_str(&format!(
            "[{}] ID: {} | Info: {}\n",
            i + 1,
            flatten(&c.id, 200),
            flatten(&c.text, MAX_CANDIDATE_CHARS)
        ));
    }
    s
}

/// The yes/no question about candidate `i` (0-based).
pub fn judge_question(i: usize, c: &Candidate) -> String {
    format!(
        "Is candidate [{}] (ID: {}) relevant to the query, that is, does it help answer it?",
        i + 1,
        flatten(&c.id, 200)
    )
}

/// The multiple-choice question over all candidates.
pub fn choose_question() -> &'static str {
    "Which candidate best answers the query?"
}

/// The option label of candidate `i` (0-based): its 1-based number.
pub fn choice_label(i: usize) -> String {
    (i + 1).to_string()
}

/// The description of candidate `i`'s option.
pub fn choice_description(i: usize, c: &Candidate) -> String {
    format!("candidate [{}] (ID: {})", i + 1, flatten(&c.id, 200))
}

/// The grading question about candidate `i` on a scale.
pub fn grade_question(i: usize, c: &Candidate, scale: &Scale) -> String {
    format!(
        "How much does candidate [{}] (ID: {}) help answer the query? Place it on the scale from \"{}\" (lowest) to \"{}\" (highest).",
        i + 1,
        flatten(&c.id, 200),
        scale.levels.first().map(String::as_str).unwrap_or(""),
        scale.levels.last().map(String::as_str).unwrap_or("")
    )
}

/// A rough token count (characters / 4) for limits and for servers that report none.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_lists_numbered_candidates() {
        let s = render_state(
            "q?",
            &[Candidate::new("a", "x\n y"), Candidate::new("b", "z")],
        );
        assert_eq!(
            s,
            "Query: q?\n\nCandidates:\n[1] ID: a | Info: x y\n[2] ID: b | Info: z\n"
        );
    }

    #[test]
    fn long_text_is_cut() {
        let long = "w ".repeat(5000);
        let s = render_state("q", &[Candidate::new("a", long)]);
        assert!(s.chars().count() < MAX_CANDIDATE_CHARS + 100);
        assert!(s.contains('…'));
    }
}
