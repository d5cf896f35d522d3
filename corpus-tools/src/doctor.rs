//! `treenav doctor`: one tiny known decision through a judge, to check it works.

use crate::judge_args::JudgeArgs;
use anyhow::Result;
use treenav::judge::{checkup, CHECKUP_QUERY};

/// Runs the check; an unreachable backend or malformed answers are errors (non-zero exit).
pub async fn run(args: &JudgeArgs, json: bool) -> Result<()> {
    let judge = args.judge()?;
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
        if report.warnings.is_empty() {
            out!(o, "ok        answers look right");
        }
        for w in &report.warnings {
            out!(o, "warning   {w}");
        }
    }
    crate::emit(&o)
}
