//! BEIR `corpus.jsonl`: `{"_id", "title", "text", "metadata"?}` per line,
//! documents chunked into passages.

use super::*;

pub(super) fn beir(
    bytes: &[u8],
    path: &Path,
    options: &LoadOptions,
    sink: &mut Sink,
) -> Result<Vec<Document>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut docs = Vec::new();
    for (line_no, line) in lines(bytes) {
        let record = line.and_then(|line| {
            let mut obj = parse_object(line)?;
            let id = id_field(&mut obj, "_id")?.ok_or(Problem::MissingField("_id"))?;
            let text = text_field(&mut obj, "text")?.ok_or(Problem::MissingField("text"))?;
            let title = text_field(&mut obj, "title")?.unwrap_or_default();
            if let Some(&first_line) = seen.get(&id) {
                return Err(Problem::DuplicateId { id, first_line });
            }
            if title.trim().is_empty() && text.trim().is_empty() {
                return Err(Problem::EmptyDocument(id));
            }
            let metadata = lift_metadata(obj);
            let metadata = (!metadata.is_empty()).then(|| Value::Object(metadata).to_string());
            Ok((id, title, text, metadata))
        });
        match record {
            Ok((id, title, text, metadata)) => {
                seen.insert(id.clone(), line_no);
                let passages = chunked_passages(&id, &title, &text, options.passage_words);
                docs.push(Document {
                    id,
                    title: title.trim().to_string(),
                    passages,
                    metadata,
                });
            }
            Err(problem) => sink.bad(path, line_no, problem)?,
        }
    }
    Ok(docs)
}
