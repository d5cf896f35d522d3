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
pub(super) fn text_document(
    id: String,
    stem: &str,
    text: &str,
    options: &LoadOptions,
) -> Option<Document> {
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
        match text_document(id.clone(), &stem, &text, options) {
            Some(doc) => docs.push(doc),
            None => sink.bad(&file, 1, Problem::EmptyDocument(id))?,
        }
    }
    Ok(docs)
}
