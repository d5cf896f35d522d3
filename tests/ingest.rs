//! Every ingest format from small fixtures, through format detection.

use std::path::{Path, PathBuf};
use treenav::corpus::{load, Error, Format, LoadOptions, Problem};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}

fn detect_and_load(rel: &str) -> Result<(Format, treenav::corpus::Corpus), Error> {
    let path = fixture(rel);
    let format = Format::detect(&path)?;
    Ok((format, load(&path, format, &LoadOptions::default())?))
}

#[test]
fn beir_folder_and_file() -> Result<(), Error> {
    let (format, corpus) = detect_and_load("beir")?;
    assert_eq!(format, Format::Beir);
    assert_eq!(corpus.documents.len(), 3);
    assert_eq!(
        corpus.documents[0].metadata.as_deref(),
        Some(r#"{"year":2001}"#)
    );
    assert_eq!(
        corpus.documents[2].passages.len(),
        1,
        "two short paragraphs fit one passage"
    );
    let (format, _) = detect_and_load("beir/corpus.jsonl")?;
    assert_eq!(format, Format::Beir);
    Ok(())
}

#[test]
fn squad_json() -> Result<(), Error> {
    let (format, corpus) = detect_and_load("squad.json")?;
    assert_eq!(format, Format::Squad);
    let shape: Vec<(String, usize)> = corpus
        .documents
        .iter()
        .map(|d| (d.id.clone(), d.passages.len()))
        .collect();
    assert_eq!(shape, vec![("Oxygen".into(), 2), ("Rhine".into(), 1)]);
    assert_eq!(
        corpus.documents[0].passages[1].id,
        treenav::corpus::squad_passage_id("Oxygen", 1)
    );
    Ok(())
}

#[test]
fn passages_jsonl_and_dpr_tsv() -> Result<(), Error> {
    let (format, corpus) = detect_and_load("passages.jsonl")?;
    assert_eq!(format, Format::PassagesJsonl);
    let ids: Vec<&str> = corpus.documents.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, vec!["Aaron", "Abba", "abba-doc"]);
    let (format, corpus) = detect_and_load("psgs.tsv")?;
    assert_eq!(format, Format::PassagesTsv);
    assert_eq!(corpus.documents.len(), 2);
    assert_eq!(
        corpus.documents[0].passages[0].text,
        "Aaron is a prophet, high priest, and the brother of Moses."
    );
    Ok(())
}

#[test]
fn folder_of_markdown_and_text() -> Result<(), Error> {
    let (format, corpus) = detect_and_load("docs")?;
    assert_eq!(format, Format::Files);
    let titles: Vec<(&str, &str)> = corpus
        .documents
        .iter()
        .map(|d| (d.id.as_str(), d.title.as_str()))
        .collect();
    assert_eq!(
        titles,
        vec![("README.md", "Getting started"), ("guide/faq.txt", "faq")]
    );
    assert_eq!(
        corpus.documents[0].passages.len(),
        2,
        "split at the second heading"
    );
    Ok(())
}

#[test]
fn bad_file_names_file_line_and_problem() {
    let path = fixture("bad/corpus.jsonl");
    let err = load(&path, Format::Beir, &LoadOptions::default()).err();
    match err {
        Some(Error::Record {
            path: p,
            line,
            problem: Problem::Json(_),
        }) => {
            assert_eq!((p, line), (path.clone(), 3));
        }
        other => panic!("expected a JSON error on line 3, got {other:?}"),
    }
    let msg = load(&path, Format::Beir, &LoadOptions::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(msg.contains("bad/corpus.jsonl:3: malformed JSON"), "{msg}");
}

#[test]
fn skip_bad_reports_each_skipped_record() -> Result<(), Error> {
    let path = fixture("bad/corpus.jsonl");
    let options = LoadOptions {
        skip_bad: true,
        ..LoadOptions::default()
    };
    let corpus = load(&path, Format::Beir, &options)?;
    assert_eq!(corpus.documents.len(), 2);
    let skipped: Vec<String> = corpus.skipped.iter().map(|s| s.to_string()).collect();
    assert_eq!(skipped.len(), 3, "{skipped:?}");
    assert!(
        skipped[1].ends_with(":4: duplicate id `a` (first seen on line 1)"),
        "{skipped:?}"
    );
    assert!(
        skipped[2].ends_with(":5: missing field `text`"),
        "{skipped:?}"
    );
    Ok(())
}

#[test]
fn unknown_format_is_explained() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("data.xml");
    std::fs::write(&p, "<x/>").expect("write");
    let msg = Format::detect(&p)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(msg.contains("--format"), "{msg}");
}

/// Symbolic links are not followed: two links to folders above used to make
/// the build read forever, and a link to /dev/zero never ends either.
#[cfg(unix)]
#[test]
fn folder_symlinks_are_skipped_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::write(docs.join("a.md"), "# Alpha\n\nAlpha text about insulin.\n").expect("write");
    std::os::unix::fs::symlink(&docs, docs.join("loop")).expect("link");
    std::os::unix::fs::symlink(dir.path(), docs.join("up")).expect("link");
    if std::path::Path::new("/dev/zero").exists() {
        std::os::unix::fs::symlink("/dev/zero", docs.join("zero.txt")).expect("link");
    }
    let corpus = treenav::corpus::load(
        &docs,
        treenav::corpus::Format::Files,
        &treenav::corpus::LoadOptions::default(),
    )
    .expect("load");
    assert_eq!(corpus.documents.len(), 1, "only a.md, read once");
    assert_eq!(corpus.documents[0].title, "Alpha");
}

/// A device is refused before any read, in detection and in every format.
#[cfg(unix)]
#[test]
fn devices_are_refused_not_read() {
    let zero = std::path::Path::new("/dev/zero");
    if !zero.exists() {
        return;
    }
    assert!(Format::detect(zero).is_err());
    for format in [
        Format::Beir,
        Format::Squad,
        Format::PassagesJsonl,
        Format::PassagesTsv,
        Format::Files,
    ] {
        let err = load(zero, format, &LoadOptions::default()).expect_err("a device");
        assert!(
            err.to_string().contains("not a regular file"),
            "{format:?}: {err}"
        );
    }
}
