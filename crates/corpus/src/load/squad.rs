//! SQuAD v1.1 JSON, the one schema of it (the benchmark reads its
//! questions from the same parse): an article is a document, a paragraph
//! a passage, its questions are `qas`.

use super::*;

/// A SQuAD v1.1 file.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SquadFile {
    /// The articles.
    pub data: Vec<SquadArticle>,
}

/// One article: a titled list of paragraphs.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SquadArticle {
    /// The title (the document id).
    pub title: String,
    /// The paragraphs, in order.
    pub paragraphs: Vec<SquadParagraph>,
}

/// One paragraph and the questions it answers.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SquadParagraph {
    /// The paragraph text.
    pub context: String,
    /// Its questions (none in a corpus-only file).
    #[serde(default)]
    pub qas: Vec<SquadQa>,
}

/// One question. Fields are optional here: a corpus load ignores them; the
/// benchmark checks them.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct SquadQa {
    /// The question id.
    #[serde(default)]
    pub id: Option<String>,
    /// The question.
    #[serde(default)]
    pub question: Option<String>,
}

/// Parses SQuAD v1.1 JSON; `path` names the file in errors.
pub fn parse(bytes: &[u8], path: &Path) -> Result<SquadFile> {
    serde_json::from_slice(bytes).map_err(|e| Error::File {
        path: path.to_path_buf(),
        problem: format!("not SQuAD v1.1 JSON: {e}"),
    })
}

/// Loads a SQuAD file once: the corpus and the parsed file (for its
/// questions).
pub fn load_with_questions(path: &Path) -> Result<(Corpus, SquadFile)> {
    let file = parse(&read_regular(path)?, path)?;
    let documents = documents(&file, path)?;
    let corpus = finish(path, documents, Sink::new(false))?;
    Ok((corpus, file))
}

pub(super) fn squad(bytes: &[u8], path: &Path) -> Result<Vec<Document>> {
    documents(&parse(bytes, path)?, path)
}

/// The documents of a parsed file: article titles unique and non-empty,
/// each with at least one non-empty paragraph.
pub fn documents(file: &SquadFile, path: &Path) -> Result<Vec<Document>> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut docs = Vec::new();
    for (i, article) in file.data.iter().enumerate() {
        let id = article.title.trim().to_string();
        if id.is_empty() {
            return Err(Error::File {
                path: path.to_path_buf(),
                problem: format!("data[{i}].title is empty"),
            });
        }
        if let Some(first) = seen.insert(id.clone(), i) {
            return Err(Error::File {
                path: path.to_path_buf(),
                problem: format!("data[{i}].title `{id}` duplicates data[{first}].title"),
            });
        }
        let passages: Vec<Passage> = article
            .paragraphs
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.context.trim().is_empty())
            .map(|(j, p)| Passage {
                id: squad_passage_id(&id, j),
                text: p.context.clone(),
            })
            .collect();
        if passages.is_empty() {
            return Err(Error::File {
                path: path.to_path_buf(),
                problem: format!("data[{i}] (`{id}`) has no non-empty paragraph"),
            });
        }
        docs.push(Document {
            title: id.replace('_', " "),
            id,
            passages,
            metadata: None,
        });
    }
    Ok(docs)
}

/// The passage id of paragraph `index` of the SQuAD article titled `title`
/// (what a question's gold paragraph maps to).
pub fn squad_passage_id(title: &str, index: usize) -> String {
    format!("{}#{index}", title.trim())
}
