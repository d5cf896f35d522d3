//! `treenav texts`: the texts a build embeds, in the order `--embeddings`
//! and `--passage-embeddings` read their rows, for embedding on another
//! engine (the Ray driver in `clients/ray/`, a TEI or vLLM cluster).

use crate::build::load_corpus;
use crate::emit;
use anyhow::{Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};
use treenav::corpus::{self, Format, LoadOptions};

/// The documents' texts in the output folder.
const DOCUMENTS: &str = "documents.jsonl";
/// The passages' texts in the output folder.
const PASSAGES: &str = "passages.jsonl";

#[derive(clap::Args, Debug)]
pub struct TextsArgs {
    /// The corpus, as `treenav build` reads it (the bundled sample without one).
    input: Option<PathBuf>,
    /// The folder to write `documents.jsonl` and `passages.jsonl` in
    /// (created): one `{"row": i, "text": …}` line per document node and
    /// per passage, in row order.
    #[arg(short, long)]
    output: PathBuf,
    /// Force the input format instead of detecting it.
    #[arg(long, value_parser = ["beir", "squad", "passages-jsonl", "passages-tsv", "files"])]
    format: Option<String>,
    /// As `treenav build --passage-words`.
    #[arg(long, default_value_t = corpus::chunk::DEFAULT_PASSAGE_WORDS)]
    passage_words: usize,
    /// As `treenav build --branching` (a document with more passages is
    /// split into parts, each a document node with its own text).
    #[arg(long, default_value_t = 100)]
    branching: usize,
    /// As `treenav build --embed-sentences`.
    #[arg(long, default_value_t = 1)]
    embed_sentences: usize,
    /// Skip bad records instead of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &TextsArgs) -> Result<()> {
    // The folder, and each file written in it: `-o` may be the input's own
    // folder (`treenav texts x/documents.jsonl -o x`).
    if let Some(input) = &args.input {
        crate::outputs::refuse_over("-o", &args.output, "the input", input)?;
        for name in [DOCUMENTS, PASSAGES] {
            crate::outputs::refuse_over("-o", &args.output.join(name), "the input", input)?;
        }
    }
    // The same checks as the build's, so the rows line up with its.
    let params = treenav::build::TreeParams::default()
        .branching(args.branching)
        .embed_sentences(args.embed_sentences)
        .check()?;
    let forced: Option<Format> = args.format.as_deref().map(str::parse).transpose()?;
    let options = LoadOptions {
        skip_bad: args.skip_bad,
        passage_words: args.passage_words,
    };
    let loaded = load_corpus(args.input.as_deref(), forced, &options, args.json)?;
    let texts = treenav::build::embedding_texts(
        &loaded.corpus,
        params.branching(),
        params.embed_sentences(),
    );
    std::fs::create_dir_all(&args.output)
        .with_context(|| format!("cannot create {}", args.output.display()))?;
    let documents = args.output.join(DOCUMENTS);
    let passages = args.output.join(PASSAGES);
    write_lines(&documents, &texts.documents)?;
    write_lines(&passages, &texts.passages)?;
    let (d, p) = (texts.documents.len(), texts.passages.len());
    if args.json {
        let report = serde_json::json!({
            "documents": documents, "document_rows": d,
            "passages": passages, "passage_rows": p,
        });
        return emit(&crate::json_text(&report)?);
    }
    emit(&format!(
        "wrote {d} document texts to {} and {p} passage texts to {}; embed them, save float32 .npy files (row i = line i), then `treenav build CORPUS --embedder MODEL --embeddings DOCS.npy --passage-embeddings PASSAGES.npy`\n",
        documents.display(),
        passages.display()
    ))
}

/// One `{"row": i, "text": …}` line per text, written atomically.
fn write_lines(path: &Path, texts: &[String]) -> Result<()> {
    treenav::files::atomic::write_atomically(
        path,
        treenav::files::atomic::no_step,
        |e| anyhow::Error::new(e).context(format!("cannot write {}", path.display())),
        |file| {
            let mut out = std::io::BufWriter::new(file);
            for (row, text) in texts.iter().enumerate() {
                serde_json::to_writer(&mut out, &serde_json::json!({ "row": row, "text": text }))?;
                out.write_all(b"\n")?;
            }
            out.flush()?;
            Ok(())
        },
    )
}
