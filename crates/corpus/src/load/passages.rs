//! Pre-chunked passages: JSONL and DPR-style TSV, grouped into documents.

use super::*;

/// Groups passages into documents by key, in order of first appearance.
/// A document's metadata is the union of its passages' extra fields; two
/// passages of one document giving a field different values is an error.
#[derive(Default)]
struct Grouper {
    seen_ids: HashMap<String, usize>,
    doc_index: HashMap<String, usize>,
    docs: Vec<Document>,
    /// Each document's metadata so far: field → (value, the line that gave
    /// it), in field order (so the same input gives the same bytes).
    metadata: Vec<std::collections::BTreeMap<String, (Value, usize)>>,
}

impl Grouper {
    fn add(
        &mut self,
        line: usize,
        id: String,
        text: String,
        title: String,
        doc_id: Option<String>,
        metadata: Map<String, Value>,
    ) -> std::result::Result<(), Problem> {
        if let Some(&first_line) = self.seen_ids.get(&id) {
            return Err(Problem::DuplicateId { id, first_line });
        }
        if text.trim().is_empty() {
            return Err(Problem::EmptyDocument(id));
        }
        let key = doc_id
            .or_else(|| (!title.trim().is_empty()).then(|| title.trim().to_string()))
            .unwrap_or_else(|| id.clone());
        let index = *self.doc_index.entry(key.clone()).or_insert_with(|| {
            self.docs.push(Document {
                id: key,
                title: title.trim().to_string(),
                passages: Vec::new(),
                metadata: None,
            });
            self.metadata.push(Default::default());
            self.docs.len() - 1
        });
        self.merge_metadata(index, line, metadata)?;
        self.seen_ids.insert(id.clone(), line);
        self.docs[index].passages.push(Passage { id, text });
        Ok(())
    }

    /// Adds a passage's extra fields to its document's metadata.
    fn merge_metadata(
        &mut self,
        index: usize,
        line: usize,
        metadata: Map<String, Value>,
    ) -> std::result::Result<(), Problem> {
        let Some(have) = self.metadata.get_mut(index) else {
            return Ok(());
        };
        for (field, value) in &metadata {
            if let Some((old, first_line)) = have.get(field) {
                if old != value {
                    return Err(Problem::MetadataConflict {
                        field: field.clone(),
                        first_line: *first_line,
                    });
                }
            }
        }
        for (field, value) in metadata {
            have.entry(field).or_insert((value, line));
        }
        Ok(())
    }

    /// The documents, each with its metadata as JSON text.
    fn finish(self) -> Vec<Document> {
        self.docs
            .into_iter()
            .zip(self.metadata)
            .map(|(mut doc, fields)| {
                let m: Map<String, Value> = fields.into_iter().map(|(k, (v, _))| (k, v)).collect();
                doc.metadata = (!m.is_empty()).then(|| Value::Object(m).to_string());
                doc
            })
            .collect()
    }
}

pub(super) fn passages_jsonl(bytes: &[u8], path: &Path, sink: &mut Sink) -> Result<Vec<Document>> {
    let mut grouper = Grouper::default();
    for (line_no, line) in lines(bytes) {
        let result = line.and_then(|line| {
            let mut obj = parse_object(line)?;
            let id = match id_field(&mut obj, "id")? {
                Some(id) => id,
                None => id_field(&mut obj, "_id")?.ok_or(Problem::MissingField("id"))?,
            };
            let text = text_field(&mut obj, "text")?.ok_or(Problem::MissingField("text"))?;
            let title = text_field(&mut obj, "title")?.unwrap_or_default();
            let doc_id = id_field(&mut obj, "doc_id")?;
            grouper.add(line_no, id, text, title, doc_id, lift_metadata(obj))
        });
        if let Err(problem) = result {
            sink.bad(path, line_no, problem)?;
        }
    }
    Ok(grouper.finish())
}

/// Where each field of a TSV record is: from the header, or the DPR order
/// `id, text[, title]` when the file has none.
struct TsvColumns {
    id: usize,
    text: usize,
    title: Option<usize>,
    doc_id: Option<usize>,
    /// Other named columns: metadata fields (text).
    extra: Vec<(usize, String)>,
    /// Columns every record must have (`None`: 2 or 3, headerless).
    count: Option<usize>,
}

impl TsvColumns {
    const HEADERLESS: TsvColumns = TsvColumns {
        id: 0,
        text: 1,
        title: Some(2),
        doc_id: None,
        extra: Vec::new(),
        count: None,
    };

    /// The columns a header names, or `None` when the record is data.
    fn from_header(record: &csv::StringRecord) -> std::result::Result<Option<Self>, Problem> {
        if record.get(0).map(str::trim) != Some("id") {
            return Ok(None);
        }
        let (mut text, mut title, mut doc_id) = (None, None, None);
        let mut extra: Vec<(usize, String)> = Vec::new();
        for (i, name) in record.iter().enumerate().skip(1) {
            match name.trim() {
                "text" => text = Some(i),
                "title" => title = Some(i),
                "doc_id" => doc_id = Some(i),
                "" => return Err(Problem::UnknownColumn(String::new())),
                other if extra.iter().any(|(_, n)| n == other) || other == "id" => {
                    return Err(Problem::UnknownColumn(format!("{other}` (twice)")))
                }
                other => extra.push((i, other.to_string())),
            }
        }
        Ok(Some(TsvColumns {
            id: 0,
            text: text.ok_or(Problem::MissingField("text"))?,
            title,
            doc_id,
            extra,
            count: Some(record.len()),
        }))
    }

    fn check_count(&self, found: usize) -> std::result::Result<(), Problem> {
        let ok = match self.count {
            Some(n) => found == n,
            None => found == 2 || found == 3,
        };
        if ok {
            return Ok(());
        }
        let expected = match self.count {
            Some(n) => format!("{n} (as in the header)"),
            None => "2 or 3 (id, text, title)".to_string(),
        };
        Err(Problem::Columns { expected, found })
    }
}

/// DPR-style TSV read with a real CSV parser: quoted fields may hold tabs,
/// newlines and doubled quotes; every record must have the header's column
/// count (2 or 3 without a header), or it is an error naming its line.
pub(super) fn passages_tsv(bytes: &[u8], path: &Path, sink: &mut Sink) -> Result<Vec<Document>> {
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(b'\t')
        .has_headers(false)
        .flexible(true)
        .from_reader(bytes);
    let mut grouper = Grouper::default();
    let mut columns = None;
    let mut record = csv::StringRecord::new();
    loop {
        let line_no = reader.position().line() as usize;
        let result = match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => tsv_record(&record, line_no, &mut columns, &mut grouper),
            Err(e) => Err(tsv_problem(&e)),
        };
        if let Err(problem) = result {
            // The record's own line when the parser knows it.
            let line = record.position().map_or(line_no, |p| p.line() as usize);
            sink.bad(path, line.max(1), problem)?;
        }
    }
    Ok(grouper.finish())
}

/// One TSV record: the header (first record only), or a passage.
fn tsv_record(
    record: &csv::StringRecord,
    line_no: usize,
    columns: &mut Option<TsvColumns>,
    grouper: &mut Grouper,
) -> std::result::Result<(), Problem> {
    if record.iter().all(|f| f.trim().is_empty()) {
        return Ok(());
    }
    let line_no = record.position().map_or(line_no, |p| p.line() as usize);
    let cols = match columns {
        Some(cols) => cols,
        None => match TsvColumns::from_header(record)? {
            Some(header) => {
                *columns = Some(header);
                return Ok(());
            }
            None => columns.insert(TsvColumns::HEADERLESS),
        },
    };
    cols.check_count(record.len())?;
    let field = |i: Option<usize>| i.and_then(|i| record.get(i)).map(str::trim);
    let id = field(Some(cols.id)).unwrap_or_default().to_string();
    if id.is_empty() {
        return Err(Problem::MissingField("id"));
    }
    let text = field(Some(cols.text)).unwrap_or_default().to_string();
    let title = field(cols.title).unwrap_or_default().to_string();
    let doc_id = field(cols.doc_id)
        .filter(|d| !d.is_empty())
        .map(str::to_string);
    let metadata: Map<String, Value> = cols
        .extra
        .iter()
        .filter_map(|(i, name)| {
            let value = record.get(*i)?.trim();
            (!value.is_empty()).then(|| (name.clone(), Value::from(value)))
        })
        .collect();
    grouper.add(line_no, id, text, title, doc_id, metadata)
}

fn tsv_problem(e: &csv::Error) -> Problem {
    match e.kind() {
        csv::ErrorKind::Utf8 { err, .. } => Problem::Tsv(format!(
            "invalid UTF-8 in column {} at byte {}",
            err.field() + 1,
            err.valid_up_to()
        )),
        csv::ErrorKind::Io(io) => Problem::Tsv(io.to_string()),
        _ => Problem::Tsv(e.to_string()),
    }
}
