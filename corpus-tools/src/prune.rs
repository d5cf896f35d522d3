//! `treenav prune`: keep only the chunks the answer needs.

use crate::judge_args::JudgeArgs;
use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use std::io::Read as _;
use std::path::Path;
use std::path::PathBuf;
use treenav::prune::{
    input, Chunk, PruneConfig, PruneOptions, Pruned, Pruner, Strategy, TokenCounter,
};

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrategyKind {
    /// Grade all chunks 1–5 in one shared context; keep grade ≥ --threshold (default 4).
    Grade,
    /// Ask per chunk whether it is needed; keep P(yes) ≥ --threshold (default 0.5).
    Keep,
    /// Keep the first --keep-top-k; the model adds at most --extra more.
    BudgetSelect,
    /// Keep the first --n (positional truncation, the baseline).
    TopN,
}

#[derive(clap::Args, Debug)]
pub struct PruneArgs {
    /// The question (overrides the one read from stdin).
    #[arg(long)]
    pub question: Option<String>,
    /// A JSON file: an array of strings or of {"id", "text"} objects, best
    /// first. Without it, {"question": …, "chunks": […]} is read from stdin.
    #[arg(long)]
    pub chunks: Option<PathBuf>,
    /// A saved config (`treenav bench --prune --target-recall` writes one):
    /// its strategy, threshold, first-k, token budget and judge.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["strategy", "threshold", "extra", "n", "keep_top_k"])]
    pub config: Option<PathBuf>,
    /// How chunks are chosen.
    #[arg(long, value_enum, default_value_t = StrategyKind::Grade)]
    pub strategy: StrategyKind,
    /// grade: lowest expected grade kept (1–5, default 4); keep and
    /// budget-select: lowest P(yes) (0–1, default 0.5).
    #[arg(long)]
    pub threshold: Option<f64>,
    /// budget-select: chunks the model may add.
    #[arg(long, default_value_t = 3)]
    pub extra: usize,
    /// top-n: chunks kept.
    #[arg(long, default_value_t = 5)]
    pub n: usize,
    /// The first k chunks always pass.
    #[arg(long, default_value_t = 1)]
    pub keep_top_k: usize,
    /// Tokens the kept chunks may use at most.
    #[arg(long)]
    pub token_budget: Option<usize>,
    /// tokenizer.json counting the tokens (default: bge-small's when it is
    /// in the model cache, else characters / 4, said in the output).
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// Order kept chunks strongest at the start and the end of the context.
    #[arg(long)]
    pub edge_placement: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub judge: JudgeArgs,
}

impl PruneArgs {
    pub fn strategy(&self) -> Result<Strategy> {
        let name = self
            .strategy
            .to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        Ok(Strategy::named(
            &name,
            self.threshold,
            Some(self.extra),
            Some(self.n),
        )?)
    }
}

fn read_input(args: &PruneArgs) -> Result<(String, Vec<Chunk>)> {
    let (question, chunks) = match &args.chunks {
        Some(path) => {
            let bytes = crate::read_input_file(path, "--chunks", 256 << 20)?;
            (
                None,
                input::parse_chunks(&bytes, &path.display().to_string())?,
            )
        }
        None => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .context("cannot read stdin")?;
            if bytes.iter().all(u8::is_ascii_whitespace) {
                bail!("no --chunks file and nothing on stdin (expected {{\"question\": …, \"chunks\": […]}})");
            }
            let request = input::parse_any(&bytes, "stdin")?;
            (request.question, request.chunks)
        }
    };
    let question = args
        .question
        .clone()
        .or(question)
        .context("no question: give --question or a \"question\" field on stdin")?;
    Ok((question, chunks))
}

/// How tokens are counted: `tokenizer`'s, else bge-small's when its files
/// are in the cache, else characters / 4 (said on stderr unless `quiet`).
pub fn token_counter(tokenizer: Option<&Path>, say: bool) -> Result<TokenCounter> {
    if let Some(path) = tokenizer {
        return Ok(TokenCounter::from_file(path)?);
    }
    let default = treenav::tree::default_bge_dir().join("tokenizer.json");
    let (counter, why) = TokenCounter::preferred(&default);
    if let (Some(why), true) = (why, say) {
        eprintln!("counting tokens as characters / 4: {why} (or give --tokenizer tokenizer.json)");
    }
    Ok(counter)
}

/// The pruner's options and judge: a saved config's, or the flags'.
fn pruner(args: &PruneArgs) -> Result<Pruner> {
    let counter = token_counter(
        args.tokenizer.as_deref(),
        args.token_budget.is_some() && !args.json,
    )?;
    let config = match &args.config {
        Some(path) => Some(PruneConfig::read(path)?),
        None => None,
    };
    let (options, judge) = match &config {
        Some(c) => {
            let options = PruneOptions {
                token_budget: args.token_budget.or(c.token_budget),
                edge_placement: args.edge_placement,
                ..c.options(counter)
            };
            let named = match args.judge.kind {
                Some(_) => Some(args.judge.options()?),
                None => None,
            };
            let path = args.config.as_deref().unwrap_or(Path::new("--config"));
            (options, c.judge_or(named, path)?)
        }
        None => {
            let options = PruneOptions {
                strategy: args.strategy()?,
                keep_top_k: args.keep_top_k,
                token_budget: args.token_budget,
                counter,
                edge_placement: args.edge_placement,
            };
            (options, args.judge.for_pruning().options()?)
        }
    };
    Ok(Pruner::new(
        treenav::navigator::list_judge(&judge)?,
        options,
    )?)
}

pub async fn run(args: &PruneArgs) -> Result<()> {
    let pruner = pruner(args)?;
    let (question, chunks) = read_input(args)?;
    let pruned = pruner.prune(&question, &chunks).await?;
    if args.json {
        // The service's response type: `treenav serve` answers the same JSON.
        let response = treenav::serve::api::PruneResponse::new(pruned);
        return crate::emit(&crate::json_text(&response)?);
    }
    crate::emit(&print_text(&question, &pruned))
}

fn print_text(question: &str, p: &Pruned) -> String {
    let mut o = String::new();
    out!(o, "question: {question}");
    out!(o, "strategy: {}\n", p.strategy);
    for c in &p.kept {
        let score = match (c.grade, c.probability) {
            (Some(g), _) => format!("grade {g:.2}"),
            (None, Some(pr)) => format!("P(yes) {pr:.3}"),
            _ if c.forced => "top-k".to_string(),
            _ => "kept".to_string(),
        };
        let snippet = treenav::tree::text::one_line(&c.text, 200);
        out!(
            o,
            "#{} {} [{score}{}] {snippet}",
            c.rank + 1,
            c.id,
            if c.forced { ", forced" } else { "" }
        );
    }
    let s = &p.stats;
    out!(
        o,
        "\nkept {} of {} chunks, {} of {} tokens ({}): {:.1}% compression; {} judge calls, {} input tokens, ${:.6}, {:.1} ms",
        s.chunks_out,
        s.chunks_in,
        s.tokens_out,
        s.tokens_in,
        s.token_counter,
        s.compression * 100.0,
        s.judge_calls,
        s.input_tokens,
        s.cost_usd,
        s.latency_ms
    );
    o
}
