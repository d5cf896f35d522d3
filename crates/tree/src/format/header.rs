//! The header every side file and build record starts with, written one
//! way: the kind's magic (8 bytes), its layout version (u32), four zero
//! bytes, the XXH3-128 hash of the body, then the file's own numbers as
//! little-endian u64 words. All little-endian; the body follows at
//! [`Header::len`]`(words)`.

/// A header to write.
#[derive(Debug, Clone, Copy)]
pub struct Header<'a> {
    /// The kind's magic ([`crate::format::magic`]).
    pub magic: &'a [u8; 8],
    /// The layout version of the body.
    pub version: u32,
    /// The content hash of everything after the header.
    pub hash: u128,
    /// The file's own numbers (counts, lengths, the base tree's id).
    pub words: &'a [u64],
}

/// Where the first word starts.
const WORDS_AT: usize = 8 + 4 + 4 + 16;

impl Header<'_> {
    /// The bytes of a header with `words` numbers.
    pub const fn len(words: usize) -> usize {
        WORDS_AT + 8 * words
    }

    /// The header's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(Header::len(self.words.len()));
        h.extend_from_slice(self.magic);
        h.extend_from_slice(&self.version.to_le_bytes());
        h.extend_from_slice(&0u32.to_le_bytes());
        h.extend_from_slice(&self.hash.to_le_bytes());
        for w in self.words {
            h.extend_from_slice(&w.to_le_bytes());
        }
        h
    }
}

/// The layout version of a header read whole (0 when too short).
pub fn version_of(head: &[u8]) -> u32 {
    head.get(8..12)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// The body hash of a header read whole (0 when too short).
pub fn hash_of(head: &[u8]) -> u128 {
    head.get(16..32)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u128::from_le_bytes)
}

/// Word `i` of a header read whole (0 when too short).
pub fn word(head: &[u8], i: usize) -> u64 {
    let at = WORDS_AT + 8 * i;
    head.get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_what_was_written_at_its_fixed_offsets() {
        let words = [7, u64::MAX, 0];
        let bytes = Header {
            magic: b"TRNVTEST",
            version: 3,
            hash: 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10,
            words: &words,
        }
        .to_bytes();
        assert_eq!(bytes.len(), Header::len(3));
        assert_eq!(bytes.len(), 8 + 4 + 4 + 16 + 8 + 8 + 8);
        assert_eq!(&bytes[..8], b"TRNVTEST");
        assert_eq!(&bytes[12..16], &[0, 0, 0, 0]);
        assert_eq!(version_of(&bytes), 3);
        assert_eq!(hash_of(&bytes), 0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10);
        assert_eq!((0..3).map(|i| word(&bytes, i)).collect::<Vec<_>>(), words);
        assert_eq!(word(&bytes, 3), 0, "past the end");
        assert_eq!(version_of(&bytes[..4]), 0);
    }
}
