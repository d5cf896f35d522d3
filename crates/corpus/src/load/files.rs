//! Folders of `.md` and `.txt` files: a file is a document, split at
//! Markdown headings and paragraphs.

use super::*;

pub(super) fn collect_text_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut entries: Vec<(PathBuf, std::fs::FileType)> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.and_then(|e| Ok((e.path(), e.file_type()?))))
        .collect::<std::io::Result<_>>()
        .map_err(io)?;
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (p, kind) in entries {
        let hidden = p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        // Symbolic links are not followed: a link to a folder above would
        // be read again and again (two such links never end), and a link to
        // a device (/dev/zero) never ends either. They are named, not lost.
        if kind.is_symlink() {
            tracing::warn!(path = %p.display(), "skipped a symbolic link (links are not followed)");
            continue;
        }
        if kind.is_dir() {
            collect_text_files(&p, out)?;
        } else if !kind.is_file() {
            tracing::warn!(path = %p.display(), "skipped: not a regular file");
        } else if matches!(
            p.extension()
                .and_then(|e| e.to_str())
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("md" | "markdown" | "txt")
        ) {
            out.push(p);
        }
    }
    Ok(())
}

fn heading(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let hashes = t.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && t[hashes..].starts_with([' ', '\t']) {
        Some(t[hashes..].trim().trim_end_matches('#').trim())
    } else {
        None
    }
}

/// One document from a text file: sections at headings, passages at paragraphs.
fn text_document(id: String, stem: &str, text: &str, options: &LoadOptions) -> Option<Document> {
    let mut title = None;
    let mut sections: Vec<String> = vec![String::new()];
    for line in text.lines() {
        let mut line = line;
        if let Some(h) = heading(line) {
            sections.push(String::new());
            if title.is_none() && !h.is_empty() {
                // The first heading is the title, not passage text (it
                // would otherwise be the document's lead twice over).
                title = Some(h.to_string());
                continue;
            }
            // A section heading stays as its words, without the markup.
            line = h;
        }
        let current = sections.last_mut()?;
        current.push_str(line);
        current.push('\n');
    }
    let mut passages = Vec::new();
    for section in &sections {
        for chunk in chunk::chunk_text(section, options.passage_words) {
            passages.push(Passage {
                id: format!("{id}#{}", passages.len()),
                text: chunk,
            });
        }
    }
    if passages.is_empty() {
        return None;
    }
    Some(Document {
        id,
        title: title.unwrap_or_else(|| stem.replace(['_', '-'], " ")),
        passages,
        metadata: None,
    })
}

pub(super) fn files(path: &Path, options: &LoadOptions, sink: &mut Sink) -> Result<Vec<Document>> {
    let (root, list) = if path.is_dir() {
        let mut list = Vec::new();
        collect_text_files(path, &mut list)?;
        (path.to_path_buf(), list)
    } else {
        let root = path.parent().map(Path::to_path_buf).unwrap_or_default();
        (root, vec![path.to_path_buf()])
    };
    let mut docs = Vec::new();
    for file in list {
        let bytes = read_regular(&file)?;
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let line = e.as_bytes()[..at].iter().filter(|b| **b == b'\n').count() + 1;
                sink.bad(&file, line, Problem::InvalidUtf8(at))?;
                continue;
            }
        };
        let id = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .to_string_lossy()
            .replace('\\', "/");
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("untitled")
            .to_string();
        docs.extend(file_document(id, &stem, &text, options, &file, sink)?);
    }
    Ok(docs)
}

/// The document of one text file: its front matter, then its text; a
/// problem with either is reported to `sink` (naming `path` and the line).
pub(super) fn file_document(
    id: String,
    stem: &str,
    text: &str,
    options: &LoadOptions,
    path: &Path,
    sink: &mut Sink,
) -> Result<Option<Document>> {
    let (front, body) = match front_matter(text) {
        Ok(split) => split,
        Err((line, problem)) => {
            sink.bad(path, line, problem)?;
            return Ok(None);
        }
    };
    match text_document(id.clone(), stem, body, options) {
        Some(doc) => Ok(Some(with_front_matter(doc, front))),
        None => {
            sink.bad(path, 1, Problem::EmptyDocument(id))?;
            Ok(None)
        }
    }
}

/// A file's front matter fields and the text after it.
type FrontMatter<'a> = (Map<String, Value>, &'a str);

/// Splits YAML front matter (between a first line `---` and the next line
/// `---` or `...`) from the text: its fields, and the rest. A text without
/// it is all body; front matter that is not a YAML mapping is an error with
/// its line.
fn front_matter(text: &str) -> std::result::Result<FrontMatter<'_>, (usize, Problem)> {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok((Map::new(), text));
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare == "..." {
            let yaml = &rest[..at];
            let body = &rest[at + line.len()..];
            if let Some((line, depth)) = too_deep(yaml) {
                return Err((
                    line + 1,
                    Problem::FrontMatter(format!(
                        "nested {depth} deep; front matter may nest at most {MAX_FRONT_MATTER_DEPTH} levels"
                    )),
                ));
            }
            let value: Value = match serde_yaml_ng::from_str(yaml) {
                Ok(v) => v,
                Err(e) => {
                    let line = e.location().map_or(1, |l| l.line() + 1);
                    return Err((line, Problem::FrontMatter(e.to_string())));
                }
            };
            return match value {
                Value::Object(fields) => Ok((fields, body)),
                Value::Null => Ok((Map::new(), body)),
                _ => Err((
                    2,
                    Problem::FrontMatter("not a mapping of field names to values".into()),
                )),
            };
        }
        at += line.len();
    }
    // No closing line: a rule at the top, unless fields follow it (then
    // the closing line was forgotten, and the fields would become text).
    if rest
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(looks_like_a_field)
    {
        return Err((
            1,
            Problem::FrontMatter(
                "opened by `---` but never closed: add a line `---` after its fields".into(),
            ),
        ));
    }
    Ok((Map::new(), text))
}

/// `key: value` or `key:` — a YAML mapping's line.
fn looks_like_a_field(line: &str) -> bool {
    let Some((key, rest)) = line.split_once(':') else {
        return false;
    };
    let key_ok = key
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-');
    key_ok && (rest.is_empty() || rest.starts_with(' '))
}

/// The deepest front matter read: the YAML parser's own limit is reached
/// only after quadratic work (100,000 levels took 47 s).
const MAX_FRONT_MATTER_DEPTH: usize = 64;

/// Where YAML nests past [`MAX_FRONT_MATTER_DEPTH`], found in one pass
/// before parsing: the line (from 1, in the YAML) and a depth at least that
/// deep. Nesting counts open flow brackets (`[`, `{`) and, per line, the
/// block levels its indentation (two columns a level) and leading `- `
/// items open. An over-count (a bracket inside a quoted string) can only
/// refuse deeply bracketed text, never let deep nesting through.
fn too_deep(yaml: &str) -> Option<(usize, usize)> {
    let mut flow = 0usize;
    for (n, line) in yaml.lines().enumerate() {
        let body = line.trim_start();
        let mut block = (line.len() - body.len()) / 2;
        let mut rest = body;
        while let Some(after) = rest
            .strip_prefix('-')
            .filter(|r| r.is_empty() || r.starts_with([' ', '\t']))
        {
            block += 1;
            rest = after.trim_start();
        }
        for c in line.chars() {
            match c {
                '[' | '{' => flow += 1,
                ']' | '}' => flow = flow.saturating_sub(1),
                _ => {}
            }
            if flow + block > MAX_FRONT_MATTER_DEPTH {
                return Some((n + 1, flow + block));
            }
        }
        if block > MAX_FRONT_MATTER_DEPTH {
            return Some((n + 1, block));
        }
    }
    None
}

/// A document with its front matter: `title` names it, the other fields
/// are its metadata.
fn with_front_matter(mut doc: Document, mut front: Map<String, Value>) -> Document {
    if let Some(Value::String(title)) = front.remove("title") {
        if !title.trim().is_empty() {
            doc.title = title.trim().to_string();
        }
    }
    if !front.is_empty() {
        doc.metadata = Some(Value::Object(front).to_string());
    }
    doc
}
