//! BEIR `corpus.jsonl`: `{"_id", "title", "text", "metadata"?}` per line,
//! documents chunked into passages. Read whole ([`beir`]) or a line at a
//! time ([`each_beir`]: one document held at once, for corpora larger than
//! memory).

use super::*;
use std::io::BufRead;

pub(super) fn beir(
    bytes: &[u8],
    path: &Path,
    options: &LoadOptions,
    sink: &mut Sink,
) -> Result<Vec<Document>> {
    let mut reader = Reader::default();
    let mut docs = Vec::new();
    for (line_no, line) in lines(bytes) {
        if let Some(doc) = reader.read(path, line_no, line, options, sink)? {
            docs.push(doc);
        }
    }
    Ok(docs)
}

/// Reads the BEIR file at `path` a line at a time, giving each document to
/// `each` in file order; the same documents, checks and errors as [`beir`].
pub(super) fn each_beir(
    path: &Path,
    options: &LoadOptions,
    sink: &mut Sink,
    each: &mut dyn FnMut(Document) -> Result<()>,
) -> Result<usize> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let input = treenav_files::open(path, &corpus_kind()).map_err(|e| io(e.into_io()))?;
    let mut file = std::io::BufReader::with_capacity(1 << 20, input.file);
    let (mut reader, mut raw, mut line_no, mut documents) = (Reader::default(), Vec::new(), 0, 0);
    loop {
        raw.clear();
        if file.read_until(b'\n', &mut raw).map_err(io)? == 0 {
            return Ok(documents);
        }
        line_no += 1;
        let Some(line) = line_text(raw.strip_suffix(b"\n").unwrap_or(&raw)) else {
            continue;
        };
        if let Some(doc) = reader.read(path, line_no, line, options, sink)? {
            documents += 1;
            each(doc)?;
        }
    }
}

/// What reading a BEIR file remembers across lines: the line of every id.
#[derive(Default)]
struct Reader {
    seen: HashMap<String, usize>,
}

impl Reader {
    /// The document of one line, `None` when it was bad and skipped.
    fn read(
        &mut self,
        path: &Path,
        line_no: usize,
        line: std::result::Result<&str, Problem>,
        options: &LoadOptions,
        sink: &mut Sink,
    ) -> Result<Option<Document>> {
        match line.and_then(|line| self.record(line)) {
            Ok((id, title, text, metadata)) => {
                self.seen.insert(id.clone(), line_no);
                let passages = chunked_passages(&id, &title, &text, options.passage_words);
                Ok(Some(Document {
                    id,
                    title: title.trim().to_string(),
                    passages,
                    metadata,
                }))
            }
            Err(problem) => sink.bad(path, line_no, problem).map(|()| None),
        }
    }

    /// One line's id, title, text and metadata, checked.
    fn record(
        &self,
        line: &str,
    ) -> std::result::Result<(String, String, String, Option<String>), Problem> {
        let mut obj = parse_object(line)?;
        let id = id_field(&mut obj, "_id")?.ok_or(Problem::MissingField("_id"))?;
        let text = text_field(&mut obj, "text")?.ok_or(Problem::MissingField("text"))?;
        let title = text_field(&mut obj, "title")?.unwrap_or_default();
        if let Some(&first_line) = self.seen.get(&id) {
            return Err(Problem::DuplicateId { id, first_line });
        }
        if title.trim().is_empty() && text.trim().is_empty() {
            return Err(Problem::EmptyDocument(id));
        }
        let metadata = lift_metadata(obj);
        let metadata = (!metadata.is_empty()).then(|| Value::Object(metadata).to_string());
        Ok((id, title, text, metadata))
    }
}
