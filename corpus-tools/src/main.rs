//! `treenav`: build a corpus tree, look inside it, query it, check a judge.

/// Appends a line to a String buffer (writing to a String cannot fail).
macro_rules! out {
    ($o:expr) => {{ $o.push('\n'); }};
    ($o:expr, $($t:tt)*) => {{ use std::fmt::Write as _; let _ = writeln!($o, $($t)*); }};
}

/// jemalloc: loading a large tree allocates millions of small strings from
/// several threads at once, where it is faster than the system allocator,
/// and under `serve` its memory stays flat where mimalloc's grew with each
/// index writer's threads (docs/serve.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod batch;
mod bench;
mod bench_args;
mod build;
mod doctor;
mod inspect;
mod judge_args;
mod nav_args;
mod outputs;
mod plot;
mod progress;
mod prune;
mod prune_bench;
mod query;
mod serve;
mod texts;
mod trace;
mod update;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// `treenav --version`: the version, the commit built from and the features.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit:   ",
    env!("TREENAV_COMMIT"),
    "\nfeatures: ",
    env!("TREENAV_FEATURES")
);

/// treenav: retrieval for RAG without a vector index at query time.
#[derive(Parser, Debug)]
#[command(name = "treenav", version, long_version = LONG_VERSION, about)]
struct Cli {
    /// Print the full error chain and debug logs.
    #[arg(short, long, global = true)]
    verbose: bool,
    /// Log lines as `text` or `json` (one object per line, for a log
    /// collector). Which lines: `RUST_LOG` (or `TREENAV_LOG`), e.g.
    /// `RUST_LOG=treenav_navigator=debug`.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Build a corpus tree (clusters → documents → passages) and save it.
    Build(Box<build::BuildArgs>),
    /// Write the texts a build embeds (documents, passages) in row order,
    /// to embed elsewhere and build with --embeddings/--passage-embeddings.
    Texts(texts::TextsArgs),
    /// Join the shards of a split build (`treenav build --plan`, `--shard`) into one tree.
    Merge(build::MergeArgs),
    /// Show a tree file's levels, counts and sample nodes.
    Inspect(InspectArgs),
    /// Retrieve the passages that answer a question by navigating a tree.
    Query(Box<query::QueryArgs>),
    /// Send a tiny known decision to a judge and check its answers.
    Doctor(DoctorArgs),
    /// Measure the tree against BM25, dense, hybrid, rerank and flat on a
    /// benchmark (or, with --prune, the pruner's retention against compression).
    Bench(Box<bench::BenchArgs>),
    /// Keep only the retrieved chunks the answer needs, within a token budget.
    Prune(Box<prune::PruneArgs>),
    /// Serve trees over HTTP: retrieve, prune, metrics, reload (see README).
    Serve(Box<serve::ServeArgs>),
    /// Add documents to a saved tree (ids it has are replaced), without a rebuild.
    Add(Box<update::AddArgs>),
    /// Remove documents from a saved tree by id, without a rebuild.
    Remove(Box<update::RemoveArgs>),
    /// Fold a tree's updates into a new tree file (ids renumbered, side files anew).
    Compact(update::CompactArgs),
}

#[derive(clap::Args, Debug)]
struct DoctorArgs {
    #[command(flatten)]
    judge: judge_args::JudgeArgs,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args, Debug)]
struct InspectArgs {
    /// The tree file.
    tree: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Sample nodes to show per kind.
    #[arg(long, default_value_t = 3)]
    samples: usize,
    /// Also check every file of the lexical index (tantivy) against its
    /// checksum, reading it whole: a damaged file is an error naming it.
    #[arg(long)]
    verify: bool,
}

/// Colour in logs only on a terminal, and never with `NO_COLOR` set
/// (<https://no-color.org>): a log file or a pipe gets plain text.
fn colour_on_stderr() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Logs to stderr: the filter from `TREENAV_LOG`, else `RUST_LOG`, else
/// `default` (tantivy at warn unless the filter names it); text (coloured
/// on a terminal) or JSON lines.
fn init_logs(default: &str, format: LogFormat) {
    let given = ["TREENAV_LOG", "RUST_LOG"]
        .into_iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.trim().is_empty()));
    let mut filter = given
        .as_deref()
        .and_then(|d| tracing_subscriber::EnvFilter::try_new(d).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    // tantivy logs every file it opens at debug: `RUST_LOG=debug` would be
    // that flood (with its source paths), so it stays at warn unless named.
    if !given.as_deref().is_some_and(|d| d.contains("tantivy")) {
        if let Ok(quiet) = "tantivy=warn".parse() {
            filter = filter.add_directive(quiet);
        }
    }
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => logs.json().with_current_span(false).init(),
        LogFormat::Text => logs.with_ansi(colour_on_stderr()).init(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::try_parse().unwrap_or_else(|e| with_suggestion(e).exit());
    if matches!(cli.command, Command::Serve(_)) {
        serve::return_freed_memory_at_once();
    }
    let filter = match (&cli.command, cli.verbose) {
        (_, true) => "debug",
        // The service logs its start, reloads and access lines.
        (Command::Serve(_), false) => "warn,treenav_serve=info",
        _ => "warn",
    };
    init_logs(filter, cli.log_format);
    let result = match cli.command {
        Command::Build(args) => build::run_build(*args),
        Command::Merge(args) => build::run_merge(&args),
        Command::Texts(args) => texts::run(&args),
        Command::Inspect(args) => inspect::run(&args.tree, args.json, args.samples, args.verify),
        Command::Query(args) => runtime().and_then(|rt| rt.block_on(query::run(&args))),
        Command::Bench(args) => runtime().and_then(|rt| rt.block_on(bench::run(&args))),
        Command::Prune(args) => runtime().and_then(|rt| rt.block_on(prune::run(&args))),
        Command::Serve(args) => runtime().and_then(|rt| rt.block_on(serve::run(&args))),
        Command::Add(args) => update::run_add(&args),
        Command::Remove(args) => update::run_remove(&args),
        Command::Compact(args) => update::run_compact(&args),
        Command::Doctor(args) => {
            runtime().and_then(|rt| rt.block_on(doctor::run(&args.judge, args.json)))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The cause chain by default (`navigation failed: judging level
            // 2 …: rate limited …`); with -v, anyhow's full report.
            if cli.verbose {
                eprintln!("error: {}", printable(&format!("{e:?}")));
            } else {
                eprintln!("error: {}", printable(&cause_chain(&e)));
            }
            ExitCode::FAILURE
        }
    }
}

/// The error and each cause not already quoted in the text before it (our
/// error types quote their source), joined by `: `.
fn cause_chain(e: &anyhow::Error) -> String {
    let mut out = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Reads a small input file the user named (`--judge-config`, `--chunks`):
/// a regular file only (a FIFO, a device such as /dev/zero or a folder is
/// refused before reading, never waited on), at most `cap` bytes.
pub fn read_input_file(path: &std::path::Path, flag: &'static str, cap: u64) -> Result<Vec<u8>> {
    Ok(treenav::files::read(
        path,
        &treenav::files::Kind::new(flag, cap),
    )?)
}

/// Reads a file of ids, one per line (blank lines skipped): `--ids-file`,
/// `--exclude-queries`. UTF-8, a regular file, at most 1 GiB.
pub fn read_id_file(path: &std::path::Path, flag: &'static str) -> Result<Vec<String>> {
    let bytes = read_input_file(path, flag, 1 << 30)?;
    let text =
        String::from_utf8(bytes).with_context(|| format!("{}: not UTF-8 text", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect())
}

/// An unknown flag's error with the nearest flag of its subcommand
/// suggested when clap found none: clap's measure misses transposed
/// letters (`--tpo` for `--top`).
fn with_suggestion(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument || e.get(ContextKind::SuggestedArg).is_some() {
        return e;
    }
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let Some(given) = given
        .strip_prefix("--")
        .map(|g| g.split('=').next().unwrap_or(g).to_string())
    else {
        return e;
    };
    let command = <Cli as clap::CommandFactory>::command();
    let sub = std::env::args()
        .skip(1)
        .find_map(|a| command.find_subcommand(&a).cloned());
    let Some(sub) = sub else { return e };
    let nearest = sub
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(|long| (strsim::osa_distance(&given, long), long))
        .filter(|(d, long)| *d <= 2 && *d < long.len() / 2 + 1)
        .min();
    if let Some((_, long)) = nearest {
        e.insert(
            ContextKind::SuggestedArg,
            ContextValue::String(format!("--{long}")),
        );
    }
    e
}

/// The JSON a subcommand prints (`--json`): pretty, one trailing newline,
/// with `treenav_version` first in every object output, so a saved report
/// says which tool made it.
pub fn json_text(value: &impl serde::Serialize) -> Result<String> {
    let text = serde_json::to_string_pretty(&versioned(value)?)?;
    Ok(escaped(&text))
}

/// [`json_text`] on one line (a JSON Lines record).
pub fn json_line(value: &impl serde::Serialize) -> Result<String> {
    let text = serde_json::to_string(&versioned(value)?)?;
    Ok(escaped(&text))
}

/// `value` with `treenav_version` first when it is an object.
fn versioned(value: &impl serde::Serialize) -> Result<serde_json::Value> {
    Ok(match serde_json::to_value(value)? {
        serde_json::Value::Object(fields) => {
            let mut out = serde_json::Map::new();
            out.insert("treenav_version".into(), env!("CARGO_PKG_VERSION").into());
            out.extend(fields);
            serde_json::Value::Object(out)
        }
        other => other,
    })
}

/// JSON text with a trailing newline. serde leaves DEL, the C1 controls
/// (`\x85`, common in mis-decoded cp1252), line separators and bidi
/// overrides raw (valid JSON, but a terminal acts on them, and `emit`
/// would escape them in a way JSON does not read): escaped here as JSON
/// does, `\u0085`, `\u202e`, so [`printable`] finds nothing left to touch.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        match c {
            c if is_hostile(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

/// What a terminal would act on: control characters but newline and tab,
/// line separators and bidi controls.
fn is_hostile(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_bidi_or_separator(c)
}

/// Unicode line separators and bidi embeddings, overrides and isolates.
fn is_bidi_or_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A field from the data (an id, a title, a query) on one line of text
/// output: a newline or carriage return in it is shown as `\n`/`\r`, so
/// it cannot forge an output line (other control characters: [`printable`]).
pub(crate) fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.replace('\n', "\\n").replace('\r', "\\r"))
}

/// Writes text to stdout; a closed pipe (`treenav … | head`) is not an error.
pub fn emit(text: &str) -> Result<()> {
    use std::io::Write;
    let text = printable(text);
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// Text safe to print: control characters from the data (ANSI escapes,
/// bells, carriage returns), Unicode line separators and bidi overrides are
/// shown escaped (`\x1b`, `\u{202e}`), never interpreted by a terminal;
/// newlines and tabs stay. JSON output has none (serde escapes them).
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(is_hostile) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !is_hostile(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    std::borrow::Cow::Owned(out)
}
