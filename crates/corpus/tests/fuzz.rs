//! Property tests of every corpus loader on hostile bytes: random bytes and
//! valid files with one part mutated. Whatever the input, a load returns a
//! corpus that keeps the invariants or an error that names the file; it
//! never panics. Bounded to a few seconds here; `PROPTEST_CASES=20000 cargo
//! test -p treenav-corpus --test fuzz --release` runs longer.

use proptest::prelude::*;
use std::collections::HashSet;
use treenav_corpus::{load_bytes, Corpus, Format, LoadOptions};

/// `PROPTEST_CASES` when set (longer runs), else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const FORMATS: [(Format, &str); 5] = [
    (Format::Beir, "corpus.jsonl"),
    (Format::Squad, "squad.json"),
    (Format::PassagesJsonl, "psgs.jsonl"),
    (Format::PassagesTsv, "psgs.tsv"),
    (Format::Files, "notes.md"),
];

/// A valid file of each format, the seed the mutations start from.
fn seed(format: Format) -> &'static [u8] {
    match format {
        Format::Beir => b"{\"_id\":\"d1\",\"title\":\"Rust\",\"text\":\"Rust is fast. It is safe.\"}\n{\"_id\":\"d2\",\"title\":\"\",\"text\":\"Tea is a drink.\",\"metadata\":{\"a\":1}}\n",
        Format::Squad => br#"{"version":"1.1","data":[{"title":"Rust","paragraphs":[{"context":"Rust is fast.","qas":[{"id":"q1","question":"Is Rust fast?","answers":[{"text":"fast","answer_start":8}]}]},{"context":"It is safe."}]}]}"#,
        Format::PassagesJsonl => b"{\"id\":\"p1\",\"text\":\"one\",\"title\":\"A\"}\n{\"id\":\"p2\",\"text\":\"two\",\"title\":\"A\",\"doc_id\":\"d\"}\n",
        Format::PassagesTsv => b"id\ttext\ttitle\n1\t\"quoted\ttab\"\tA\n2\tplain\tA\n3\t\"x \"\"y\"\"\"\tB\n",
        _ => b"# Title\n\nFirst paragraph.\n\n## Part\n\nSecond one.\n",
    }
}

fn check(result: Result<Corpus, treenav_corpus::Error>, name: &str) -> Result<(), TestCaseError> {
    match result {
        Ok(corpus) => {
            let mut ids = HashSet::new();
            for d in &corpus.documents {
                prop_assert!(!d.passages.is_empty(), "document {} has no passage", d.id);
                for p in &d.passages {
                    prop_assert!(ids.insert(p.id.clone()), "passage id {} twice", p.id);
                }
            }
        }
        Err(e) => prop_assert!(e.to_string().contains(name), "error without the file: {e}"),
    }
    Ok(())
}

/// One edit of a seed file: flip, insert or delete bytes, or truncate.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let special = prop_oneof![
        any::<u8>(),
        Just(b'"'),
        Just(b'\t'),
        Just(b'\n'),
        Just(b'\\'),
        Just(b'{'),
        Just(b'}'),
        Just(0xff),
        Just(0x1c),
    ];
    prop_oneof![
        (any::<usize>(), special.clone()).prop_map(|(at, b)| Edit::Set(at, b)),
        (any::<usize>(), proptest::collection::vec(special, 1..8))
            .prop_map(|(at, b)| Edit::Insert(at, b)),
        (any::<usize>(), 1usize..16).prop_map(|(at, n)| Edit::Delete(at, n)),
        any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let len = bytes.len().max(1);
    match edit {
        Edit::Set(at, b) => {
            if let Some(x) = bytes.get_mut(at % len) {
                *x = *b;
            }
        }
        Edit::Insert(at, b) => {
            let at = at % (bytes.len() + 1);
            bytes.splice(at..at, b.iter().copied());
        }
        Edit::Delete(at, n) => {
            let at = at % len;
            let end = (at + n).min(bytes.len());
            if at < end {
                bytes.drain(at..end);
            }
        }
        Edit::Truncate(at) => bytes.truncate(at % len),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(400), .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_load_or_fail_with_the_file(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        skip_bad in any::<bool>(),
    ) {
        let options = LoadOptions { skip_bad, ..LoadOptions::default() };
        for (format, name) in FORMATS {
            check(load_bytes(&bytes, name, format, &options), name)?;
        }
    }

    #[test]
    fn mutated_files_load_or_fail_with_the_file(
        which in 0usize..5,
        edits in proptest::collection::vec(edit(), 1..6),
        skip_bad in any::<bool>(),
        passage_words in 1usize..50,
    ) {
        let (format, name) = FORMATS[which];
        let mut bytes = seed(format).to_vec();
        for e in &edits {
            apply(&mut bytes, e);
        }
        let options = LoadOptions { skip_bad, passage_words };
        check(load_bytes(&bytes, name, format, &options), name)?;
    }
}

#[test]
fn seeds_are_valid() {
    for (format, name) in FORMATS {
        let corpus = load_bytes(seed(format), name, format, &LoadOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(corpus.passage_count() >= 2, "{name}");
    }
}
