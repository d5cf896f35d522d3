//! Both navigation strategies over the bundled sample, side by side:
//! `levels` (the paper's walk: every level judged in full) and `best-first`
//! (one frontier under a hard judgment budget, with the tree's neighbour
//! lists and cluster evidence).
//!
//! ```sh
//! cargo run --release --example strategies -- "Where did Tesla work after leaving Edison's company?" 40
//! ```

use std::sync::Arc;
use treenav::build::{build_tree, TreeParams};
use treenav::build::{Summarizer, SummarizerOptions};
use treenav::corpus::{load_str, Format, LoadOptions};
use treenav::judge::{Judge, JudgeOptions};
use treenav::navigator::{BestFirstConfig, Navigator, NavigatorConfig, Strategy};
use treenav::tree::{Embedder, NoProgress};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let query = args
        .next()
        .unwrap_or_else(|| "Where did Tesla work after leaving Edison's company?".into());
    let budget: usize = args.next().map(|b| b.parse()).transpose()?.unwrap_or(40);

    let corpus = load_str(
        treenav::SAMPLE_CORPUS,
        "xquad-sample.json",
        Format::Squad,
        &LoadOptions::default(),
    )?;
    // Neighbour lists (16 per document by default) are computed here, at
    // build time; nothing is embedded at query time.
    let params = TreeParams::default().branching(8).check()?;
    let embedder = Embedder::new(&Default::default(), params.seed())?;
    let summarizer = Summarizer::new(&SummarizerOptions::Extractive)?;
    let tree = Arc::new(
        build_tree(
            corpus,
            "sample",
            &params,
            &embedder,
            &summarizer,
            &NoProgress,
        )
        .await?,
    );

    let strategies = [
        (
            "levels",
            NavigatorConfig::default().strategy(Strategy::Levels),
        ),
        (
            "best-first",
            NavigatorConfig::default()
                .strategy(Strategy::BestFirst)
                .best_first(BestFirstConfig {
                    judge_budget: budget,
                    ..BestFirstConfig::default()
                }),
        ),
    ];
    for (name, config) in strategies {
        let judge = Judge::new(&JudgeOptions::default())?;
        let navigator = Navigator::new(tree.clone(), judge, config.check()?)?;
        let found = navigator.retrieve(&query).await?;
        let t = &found.trace;
        println!(
            "{name}: {} candidates judged in {} calls, {} sequential rounds",
            t.candidates_judged,
            t.usage.calls,
            t.levels.len() + t.rounds.len() + usize::from(t.rerank.is_some())
        );
        for p in found.passages.iter().take(3) {
            println!("  {:.3} {} — {}", p.probability, p.title, p.id);
        }
        for round in &t.rounds {
            let routes: Vec<String> = round
                .candidates
                .iter()
                .map(|c| format!("{:?}", c.route))
                .collect();
            println!("  round {}: {}", round.round, routes.join(" "));
        }
    }
    Ok(())
}
