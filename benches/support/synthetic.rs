//! Synthetic corpora for the benchmarks: topical structure, Zipf-like
//! general words, seeded.

use rand::{Rng, SeedableRng};
use std::io::Write;
use std::path::Path;

/// A synthetic BEIR corpus with topical structure: 1 topic per 100 documents.
pub fn generate(n: usize, path: &Path) -> anyhow::Result<()> {
    let mut rng = rand_xoshiro_like(n as u64);
    let syllables = [
        "ka", "lo", "mi", "ne", "ru", "ta", "vo", "si", "pe", "da", "gu", "ri", "zo", "fa", "be",
        "hu",
    ];
    let word = |rng: &mut rand::rngs::StdRng| -> String {
        let len = rng.gen_range(2..5);
        (0..len)
            .map(|_| syllables[rng.gen_range(0..syllables.len())])
            .collect()
    };
    let vocab: Vec<String> = (0..40_000).map(|_| word(&mut rng)).collect();
    let topics = (n / 100).max(1);
    let topic_words: Vec<Vec<usize>> = (0..topics)
        .map(|_| (0..40).map(|_| rng.gen_range(0..vocab.len())).collect())
        .collect();
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    for i in 0..n {
        let t = &topic_words[rng.gen_range(0..topics)];
        let pick = |rng: &mut rand::rngs::StdRng| -> &str {
            if rng.gen_bool(0.5) {
                &vocab[t[rng.gen_range(0..t.len())]]
            } else {
                // Zipf-like general words: small indices far more often.
                let r: f64 = rng.gen();
                &vocab[((r * r * r) * vocab.len() as f64) as usize % vocab.len()]
            }
        };
        let title: Vec<&str> = (0..6).map(|_| pick(&mut rng)).collect();
        let mut text = String::new();
        for _ in 0..rng.gen_range(3..8) {
            let words: Vec<&str> = (0..rng.gen_range(8..20)).map(|_| pick(&mut rng)).collect();
            // Sentences start with a capital, as real ones do (the chunker
            // and the document lead find sentence ends by it).
            let sentence = words.join(" ");
            let mut chars = sentence.chars();
            if let Some(first) = chars.next() {
                text.extend(first.to_uppercase());
                text.push_str(chars.as_str());
            }
            text.push_str(". ");
        }
        writeln!(
            f,
            "{}",
            serde_json::json!({"_id": format!("g{i}"), "title": title.join(" "), "text": text.trim_end()})
        )?;
    }
    f.flush()?;
    Ok(())
}

pub fn rand_xoshiro_like(seed: u64) -> rand::rngs::StdRng {
    rand::rngs::StdRng::seed_from_u64(seed)
}
