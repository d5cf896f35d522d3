//! `treenav bench --prune`: the pruner's curve (recall retention against
//! compression, every strategy's knob swept), a threshold fitted for a
//! target recall and written as a config (`--target-recall`,
//! `--save-config`), and a saved config measured on other data
//! (`--prune-config`): fit on train, measure on test.

use crate::bench_args::BenchArgs;
use anyhow::{bail, Result};
use std::sync::Arc;
use treenav::eval::prune_curve::{Curve, CurvePoint};
use treenav::judge::JudgeOptions;
use treenav::prune::{Fitted, PruneConfig, STRATEGY_NAMES};

pub async fn run(
    args: &BenchArgs,
    mut data: treenav::eval::dataset::Dataset,
    tree: Option<Arc<treenav::tree::Tree>>,
    navigator: treenav::navigator::ValidConfig,
    judge: treenav::judge::JudgeOptions,
    bars: &crate::progress::Bars,
) -> Result<()> {
    use treenav::eval::prune_curve::{self, Retriever};
    if let Some(n) = args.limit {
        if n == 0 {
            bail!("--limit must be at least 1");
        }
        data.sample(n, args.seed);
    }
    let retriever = match tree {
        Some(tree) => Retriever::Tree {
            tree,
            config: navigator,
        },
        None => Retriever::Bm25,
    };
    let config = match &args.prune_config {
        Some(path) => Some(PruneConfig::read(path)?),
        None => None,
    };
    // A saved config's judge, unless --judge names one of its kind.
    let judge = match (&config, &args.prune_config) {
        (Some(c), Some(path)) => c.judge_or(args.judge.kind.is_some().then_some(judge), path)?,
        _ => judge,
    };
    let keep_top_k = config.as_ref().map_or(args.keep_top_k, |c| c.keep_top_k);
    let measured: Vec<_> = config.iter().map(|c| c.strategy).collect();
    let curve = prune_curve::run(
        &data,
        &retriever,
        &judge,
        args.prune_depth,
        keep_top_k,
        &measured,
        bars,
    )
    .await?;
    bars.finish();
    let title = format!(
        "{}: pruning top {} ({} judge, {} questions)",
        data.name,
        curve.depth,
        format!("{:?}", judge.backend.kind()).to_lowercase(),
        curve.questions
    );
    if let Some(path) = &args.curve_csv {
        crate::outputs::write_atomic(path, &curve.csv())?;
    }
    if let Some(path) = &args.curve_svg {
        crate::plot::curve_svg(&curve, &title, path)?;
    }
    if let Some(path) = &args.json {
        crate::outputs::write_atomic(path, &crate::json_text(&curve)?)?;
    }
    let mut text = prune_tables(&curve, &title);
    if let Some(config) = &config {
        text.push_str(&held_out(config, &curve, args));
    }
    if let Some(target) = args.target_recall {
        text.push_str(&fit(args, target, &curve, &judge, keep_top_k)?);
    }
    crate::emit(&text)
}

/// The pruning curve's two tables: every point, then each strategy's
/// compression at 95% and 99% retention with its cost.
fn prune_tables(curve: &treenav::eval::prune_curve::Curve, title: &str) -> String {
    let mut o = String::new();
    out!(o, "{title}");
    out!(
        o,
        "gold among the retrieved chunks for {} of {} questions\n",
        curve.gold_retrieved,
        curve.questions
    );
    out!(
        o,
        "| strategy | knob | value | recall retention | compression | token compression |"
    );
    out!(o, "|---|---|---|---|---|---|");
    for p in &curve.points {
        out!(
            o,
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} |",
            p.strategy,
            p.knob,
            p.value,
            p.recall_retention,
            p.compression,
            p.token_compression
        );
    }
    out!(
        o,
        "\n| strategy | compression at ≥95% retention | at ≥99% | judge calls/q | added ms/q |"
    );
    out!(o, "|---|---|---|---|---|");
    for ((name, ms), (_, calls)) in curve.latency_ms.iter().zip(&curve.judge_calls) {
        let at = |r| {
            curve
                .compression_at(name, r)
                .map_or("—".to_string(), |c| format!("{c:.3}"))
        };
        out!(
            o,
            "| {name} | {} | {} | {calls:.1} | {ms:.1} |",
            at(0.95),
            at(0.99)
        );
    }
    o
}

/// The saved config here, beside what it kept where it was fitted.
fn held_out(config: &PruneConfig, curve: &Curve, args: &BenchArgs) -> String {
    let mut o = String::new();
    let Some(here) = curve.measured.first() else {
        return o;
    };
    out!(o, "\n{}", config.describe());
    out!(o, "| data | questions | recall retention | compression |");
    out!(o, "|---|---|---|---|");
    if let Some(f) = &config.fitted {
        out!(
            o,
            "| fitted: {} {} | {} | {:.3} | {:.3} |",
            f.dataset,
            f.split,
            f.questions,
            f.recall_retention,
            f.compression
        );
    }
    out!(
        o,
        "| here: {} {} | {} | {:.3} | {:.3} |",
        args.dataset.display(),
        split_of(args),
        curve.questions,
        here.recall_retention,
        here.compression
    );
    o
}

/// Each strategy's loosest knob keeping `target`; the one that drops the
/// most is written to `--save-config`.
fn fit(
    args: &BenchArgs,
    target: f64,
    curve: &Curve,
    judge: &JudgeOptions,
    keep_top_k: usize,
) -> Result<String> {
    if !(target > 0.0 && target <= 1.0) {
        bail!("--target-recall must be in (0, 1], got {target}");
    }
    let mut o = String::new();
    out!(
        o,
        "\nthe loosest knob keeping ≥ {target} of the needed chunks:"
    );
    out!(o, "| strategy | knob | recall retention | compression |");
    out!(o, "|---|---|---|---|");
    let mut best: Option<&CurvePoint> = None;
    for name in STRATEGY_NAMES {
        match curve.fit(name, target) {
            Some(p) => {
                out!(
                    o,
                    "| {name} | {} {} | {:.3} | {:.3} |",
                    p.knob,
                    p.value,
                    p.recall_retention,
                    p.compression
                );
                if best.is_none_or(|b| p.compression > b.compression) {
                    best = Some(p);
                }
            }
            None => out!(o, "| {name} | none keeps {target} | — | — |"),
        }
    }
    let Some(best) = best else {
        bail!("no strategy keeps {target} of the needed chunks here (deepen --prune-depth?)");
    };
    let config = fitted_config(args, target, curve, best, judge, keep_top_k)?;
    config.write(&args.save_config)?;
    out!(
        o,
        "wrote {}: {}",
        args.save_config.display(),
        config.describe()
    );
    Ok(o)
}

/// The config of the fitted point `best`, with how it was fitted.
fn fitted_config(
    args: &BenchArgs,
    target: f64,
    curve: &Curve,
    best: &CurvePoint,
    judge: &JudgeOptions,
    keep_top_k: usize,
) -> Result<PruneConfig> {
    let strategy = treenav::prune::Strategy::named(
        best.strategy,
        (best.knob == "threshold").then_some(best.value),
        (best.knob == "extra").then_some(best.value as usize),
        (best.knob == "n").then_some(best.value as usize),
    )?;
    let config = PruneConfig {
        strategy,
        keep_top_k,
        token_budget: None,
        judge: judge.clone(),
        fitted: Some(Fitted {
            dataset: args.dataset.display().to_string(),
            split: split_of(args),
            questions: curve.questions,
            gold_retrieved: curve.gold_retrieved,
            depth: curve.depth,
            target_recall: target,
            recall_retention: best.recall_retention,
            compression: best.compression,
            command: command_line(),
        }),
    };
    Ok(config)
}

/// The split run: a BEIR folder's `--split`; a SQuAD file has none (all
/// its questions).
fn split_of(args: &BenchArgs) -> String {
    match args.dataset.is_dir() {
        true => args.split.clone(),
        false => "all".to_string(),
    }
}

/// This process's command line, `treenav` first.
fn command_line() -> String {
    let words: Vec<String> = std::env::args().skip(1).collect();
    format!("treenav {}", words.join(" "))
}
