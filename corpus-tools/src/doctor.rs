//! `treenav doctor`: one tiny known decision through a judge, to check it works.

use crate::judge_args::JudgeArgs;
use anyhow::Result;
use serde::Serialize;
use treenav::judge::{Candidate, Judge, Scale, Usage};

const QUERY: &str = "What gas do plants release during photosynthesis?";

#[derive(Serialize)]
struct Report {
    backend: String,
    model: String,
    query: &'static str,
    candidates: Vec<Candidate>,
    judge: Vec<f64>,
    choose: Vec<f64>,
    grade_expected: Vec<f64>,
    usage: Usage,
    warnings: Vec<String>,
}

/// Runs the check; an unreachable backend or malformed answers are errors (non-zero exit).
pub async fn run(args: &JudgeArgs, json: bool) -> Result<()> {
    let judge = Judge::new(&args.options()?)?;
    let candidates = vec![
        Candidate::new(
            "relevant",
            "Plants release oxygen as a by-product of photosynthesis in their leaves.",
        ),
        Candidate::new(
            "irrelevant",
            "The Eiffel Tower was completed in Paris in 1889.",
        ),
    ];
    let j = judge.judge(QUERY, &candidates).await?;
    let c = judge.choose(QUERY, &candidates).await?;
    let g = judge.grade(QUERY, &candidates, &Scale::pruning()).await?;
    let mut usage = j.usage.clone();
    usage.add(&c.usage);
    usage.add(&g.usage);
    let mut warnings = Vec::new();
    if j.probabilities[0] <= j.probabilities[1] {
        warnings.push(format!(
            "judge: the relevant candidate got P(yes) {:.2}, not above the irrelevant one's {:.2}",
            j.probabilities[0], j.probabilities[1]
        ));
    }
    if c.best != 0 {
        warnings.push("choose: picked the irrelevant candidate".into());
    }
    if g.grades[0].expected <= g.grades[1].expected {
        warnings
            .push("grade: the relevant candidate is not graded above the irrelevant one".into());
    }
    if usage.low_confidence > 0 {
        warnings.push(format!(
            "{} answers had low label mass (unreliable)",
            usage.low_confidence
        ));
    }
    let report = Report {
        backend: judge.kind().to_string(),
        model: judge.model().to_string(),
        query: QUERY,
        candidates,
        judge: j.probabilities,
        choose: c.probabilities,
        grade_expected: g.grades.iter().map(|g| g.expected + 1.0).collect(),
        usage,
        warnings,
    };
    let mut o = String::new();
    if json {
        out!(o, "{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!(o, "backend   {} ({})", report.backend, report.model);
        out!(o, "query     {QUERY}");
        for (i, c) in report.candidates.iter().enumerate() {
            out!(
                o,
                "  {:<10} P(yes) {:.3}   choose {:.3}   grade {:.2} of 5   {}",
                c.id,
                report.judge[i],
                report.choose[i],
                report.grade_expected[i],
                c.text
            );
        }
        let u = &report.usage;
        out!(
            o,
            "usage     {} calls, {} input tokens, {:.1} ms, ${:.6}",
            u.calls,
            u.input_tokens,
            u.latency_ms,
            u.cost_usd
        );
        if report.warnings.is_empty() {
            out!(o, "ok        answers look right");
        }
        for w in &report.warnings {
            out!(o, "warning   {w}");
        }
    }
    crate::emit(&o)
}
