//! `treenav doctor`: one tiny known decision through a judge, to check it works.

use crate::judge_args::JudgeArgs;
use anyhow::Result;
use treenav::judge::{checkup, CHECKUP_QUERY};

/// Runs the check; an unreachable backend or malformed answers are errors (non-zero exit).
pub async fn run(args: &JudgeArgs, json: bool) -> Result<()> {
    let judge = args.for_lists("doctor")?.judge()?;
    let report = checkup(&judge).await?;
    let mut o = String::new();
    if json {
        o.push_str(&crate::json_text(&report)?);
    } else {
        out!(o, "backend   {} ({})", report.backend, report.model);
        out!(o, "query     {CHECKUP_QUERY}");
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
        if let Some(p) = &report.llm {
            llm_lines(&mut o, p);
        }
        if report.warnings.is_empty() {
            out!(o, "ok        answers look right");
        }
        for w in &report.warnings {
            out!(o, "warning   {w}");
        }
    }
    crate::emit(&o)
}

/// What the LLM probe found, a line each.
fn llm_lines(o: &mut String, p: &treenav::judge::LlmProbe) {
    let top: Vec<String> = p
        .top_tokens
        .iter()
        .take(6)
        .map(|(t, prob)| format!("{t:?} {prob:.3}"))
        .collect();
    out!(
        o,
        "llm       route {} · log-probabilities {}",
        p.api,
        if p.logprobs { "yes" } else { "no" }
    );
    out!(o, "  first token   {}", top.join(", "));
    out!(
        o,
        "  yes/no spelt  {} ({:.0}% of the first token)",
        if p.yes_no_tokens.is_empty() {
            "(none among the top tokens)".to_string()
        } else {
            format!("{:?}", p.yes_no_tokens)
        },
        100.0 * p.label_mass
    );
    out!(o, "  generated     {:?}", p.generated);
    out!(
        o,
        "  before answer {}",
        p.before_answer
            .as_deref()
            .map(|b| format!("{b:?}"))
            .unwrap_or_else(|| "nothing".into())
    );
    out!(
        o,
        "  prefix cache  {}",
        p.cached_prompt_tokens
            .map(|n| format!("{n} prompt tokens reused on a repeated context"))
            .unwrap_or_else(|| "not reported by the server".into())
    );
}
