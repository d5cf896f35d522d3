//! Score files: the cross-encoder's scored (query, passage) pairs kept
//! between bench runs (`treenav bench --score-file F`), so a sweep that
//! changes one system re-runs the model only on the pairs it has not seen.
//! A pair's score then also stays the same from run to run (without the
//! file it moves with the int8 model's batch padding).
//!
//! Layout (little-endian): the magic `TNSCORES`, a format version (`u32`,
//! 1), the length of the judge's tag (`u32`) and the tag (UTF-8: the model
//! file and the token limit the scores were made with; a file written
//! under another is refused), the number of pairs (`u64`), then per pair
//! its fingerprint (`u128`), the logit (`f64`) and the tokens read (`u64`);
//! version 2 ends with the XXH3-128 of every byte before it, so a file
//! changed after it was written (an edited logit, a flipped bit) is
//! refused, not used (version-1 files, without it, still read). It finds
//! edits and damage, not a forger who recomputes it. Written to a temporary
//! file and renamed, so an interrupted save keeps the last whole file.

use crate::{Error, Result};
use std::path::Path;
use treenav_judge::{Judge, ScoredPair};

const MAGIC: &[u8] = treenav_files::magic::SCORES;
const VERSION: u32 = 2;
/// The bytes of version 2's trailing checksum.
const CHECKSUM: usize = 16;
const RECORD: usize = 16 + 8 + 8;
/// The largest score file read (32 bytes a pair: ~33M pairs).
const MAX_BYTES: u64 = 1 << 30;
const MAX_TAG: usize = 4096;
/// Bounds of a stored logit and token count (ms-marco logits lie within
/// ±20; a pair is cut at 512 tokens).
const MAX_LOGIT: f64 = 1e4;
const MAX_TOKENS: u64 = 1 << 20;

/// Reads the pairs in `path` into `judge`'s shared scores; the number
/// read. A missing file is an empty one (the first run writes it).
pub fn load(path: &Path, judge: &Judge) -> Result<usize> {
    if !path.exists() {
        return Ok(0);
    }
    let kind = treenav_files::Kind::new("--score-file", MAX_BYTES).with_magic(MAGIC);
    let bytes = treenav_files::read(path, &kind).map_err(|e| bad(path, e.to_string()))?;
    let (tag, pairs) = decode(&bytes).map_err(|problem| bad(path, problem))?;
    judge
        .add_scored_pairs(&tag, &pairs)
        .map_err(|e| bad(path, e.to_string()))?;
    Ok(pairs.len())
}

/// Writes `judge`'s shared scores to `path` (temporary file, rename); the
/// number written.
pub fn save(path: &Path, judge: &Judge) -> Result<usize> {
    let Some((tag, pairs)) = judge.scored_pairs() else {
        return Err(bad(
            path,
            "the judge shares no scores (the cross-encoder with --share-scores only)".into(),
        ));
    };
    crate::runs::write_atomically(path, encode(&tag, &pairs))?;
    Ok(pairs.len())
}

fn bad(path: &Path, problem: String) -> Error {
    Error::ScoreFile {
        path: path.to_path_buf(),
        problem,
    }
}

fn encode(tag: &str, pairs: &[ScoredPair]) -> Vec<u8> {
    let mut out = encode_version(tag, pairs, VERSION);
    let sum = twox_hash::XxHash3_128::oneshot(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// The header and pairs of a file of `version` (no checksum).
fn encode_version(tag: &str, pairs: &[ScoredPair], version: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAGIC.len() + 32 + tag.len() + pairs.len() * RECORD);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(tag.len() as u32).to_le_bytes());
    out.extend_from_slice(tag.as_bytes());
    out.extend_from_slice(&(pairs.len() as u64).to_le_bytes());
    for p in pairs {
        out.extend_from_slice(&p.key.to_le_bytes());
        out.extend_from_slice(&p.logit.to_le_bytes());
        out.extend_from_slice(&p.tokens.to_le_bytes());
    }
    out
}

/// A cursor over a score file's bytes; each read names the field.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &str) -> std::result::Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!("cut short in {field} at byte {}", self.at));
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, field: &str) -> std::result::Result<[u8; N], String> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, field)?);
        Ok(a)
    }
}

fn decode(bytes: &[u8]) -> std::result::Result<(String, Vec<ScoredPair>), String> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(MAGIC.len(), "the magic bytes")? != MAGIC {
        return Err("not a score file (bad magic bytes)".into());
    }
    let version = u32::from_le_bytes(r.array("the version")?);
    let bytes = match version {
        1 => bytes,
        2 => {
            let Some(body_len) = bytes.len().checked_sub(CHECKSUM).filter(|n| *n >= r.at) else {
                return Err(format!("cut short in the checksum at byte {}", bytes.len()));
            };
            let (body, sum) = bytes.split_at(body_len);
            let mut stored = [0u8; CHECKSUM];
            stored.copy_from_slice(sum);
            if u128::from_le_bytes(stored) != twox_hash::XxHash3_128::oneshot(body) {
                return Err("its checksum does not match: the file was changed or damaged after it was written; delete it to score the pairs again".into());
            }
            body
        }
        _ => {
            return Err(format!(
                "format version {version}, this build reads 1 and {VERSION}"
            ))
        }
    };
    let mut r = Reader { bytes, at: r.at };
    let tag_len = u32::from_le_bytes(r.array("the tag length")?) as usize;
    if tag_len > MAX_TAG {
        return Err(format!("tag length {tag_len} is over {MAX_TAG}"));
    }
    let tag = std::str::from_utf8(r.take(tag_len, "the tag")?)
        .map_err(|_| "the tag is not UTF-8".to_string())?
        .to_string();
    let count = u64::from_le_bytes(r.array("the pair count")?);
    let left = (bytes.len() - r.at) as u64;
    if count.checked_mul(RECORD as u64) != Some(left) {
        return Err(format!(
            "{count} pairs announced, {left} bytes of pairs follow (32 a pair)"
        ));
    }
    let mut pairs = Vec::with_capacity(count as usize);
    for i in 0..count as usize {
        let key = u128::from_le_bytes(r.array("a pair's key")?);
        let logit = f64::from_le_bytes(r.array("a pair's logit")?);
        let tokens = u64::from_le_bytes(r.array("a pair's tokens")?);
        if !logit.is_finite() || logit.abs() > MAX_LOGIT {
            return Err(format!(
                "pair {}: logit {logit} is not within ±{MAX_LOGIT}",
                i + 1
            ));
        }
        if tokens > MAX_TOKENS {
            return Err(format!(
                "pair {}: {tokens} tokens is over {MAX_TOKENS}",
                i + 1
            ));
        }
        pairs.push(ScoredPair { key, logit, tokens });
    }
    Ok((tag, pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs() -> Vec<ScoredPair> {
        vec![
            ScoredPair {
                key: 1,
                logit: -3.5,
                tokens: 40,
            },
            ScoredPair {
                key: u128::MAX,
                logit: 7.25,
                tokens: 128,
            },
        ]
    }

    #[test]
    fn a_file_reads_back_as_written() {
        let bytes = encode("model; max_tokens 128", &pairs());
        let (tag, read) = decode(&bytes).expect("reads back");
        assert_eq!(tag, "model; max_tokens 128");
        assert_eq!(read, pairs());
    }

    #[test]
    fn a_file_changed_after_it_was_written_is_refused() {
        let good = encode("t", &pairs());
        assert_eq!(decode(&good).expect("reads").1, pairs());
        // A logit edited within the bounds, and one bit flipped anywhere.
        let mut edited = good.clone();
        let logit_at = good.len() - CHECKSUM - 16;
        edited[logit_at..logit_at + 8].copy_from_slice(&9.5f64.to_le_bytes());
        assert!(decode(&edited).expect_err("edited").contains("checksum"));
        for at in 12..good.len() {
            let mut flipped = good.clone();
            flipped[at] ^= 1;
            assert!(decode(&flipped).is_err(), "bit flip at {at} read");
        }
        // A version-1 file (no checksum) still reads.
        let old = encode_version("t", &pairs(), 1);
        assert_eq!(decode(&old).expect("v1").1, pairs());
    }

    #[test]
    fn damaged_files_are_refused_with_what_is_wrong() {
        let good = encode_version("t", &pairs(), 1);
        let cut = decode(&good[..good.len() - 1]).expect_err("refused");
        assert!(decode(&encode("t", &pairs())[..20]).is_err());
        assert!(cut.contains("2 pairs announced"), "{cut}");
        let mut version = good.clone();
        version[8] = 9;
        assert!(decode(&version).expect_err("refused").contains("version 9"));
        let mut nan = good.clone();
        let logit_at = good.len() - 16;
        nan[logit_at..logit_at + 8].copy_from_slice(&f64::NAN.to_le_bytes());
        assert!(decode(&nan)
            .expect_err("refused")
            .starts_with("pair 2: logit NaN"));
        let mut tokens = good.clone();
        let tokens_at = good.len() - 8;
        tokens[tokens_at..].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(decode(&tokens)
            .expect_err("refused")
            .contains("tokens is over"));
        assert!(decode(b"TNSCORE")
            .expect_err("refused")
            .contains("cut short"));
        assert!(decode(b"XXSCORES\x01\0\0\0")
            .expect_err("refused")
            .contains("bad magic"));
    }
}
