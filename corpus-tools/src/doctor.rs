//! `treenav doctor`: what this install can run (the default embedder, the
//! cross-encoder, the ONNX runtime, the model cache), then one tiny known
//! decision through a judge, to check it works.

use crate::judge_args::JudgeArgs;
use anyhow::Result;
use treenav::judge::{checkup, CHECKUP_QUERY};

/// Runs the check; an unreachable backend or malformed answers are errors (non-zero exit).
pub async fn run(args: &JudgeArgs, json: bool) -> Result<()> {
    let install = install();
    let judge = args.for_lists("doctor")?.judge()?;
    let report = checkup(&judge).await?;
    let mut o = String::new();
    if json {
        let mut value = serde_json::to_value(&report)?;
        if let serde_json::Value::Object(fields) = &mut value {
            fields.insert("install".into(), serde_json::to_value(&install)?);
        }
        o.push_str(&crate::json_text(&value)?);
    } else {
        for part in &install {
            let state = if part.ok { "ok" } else { "missing" };
            out!(o, "install   {:<14} {state:<8} {}", part.part, part.detail);
        }
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

/// One part of the install and whether it is there.
#[derive(serde::Serialize)]
struct Part {
    part: &'static str,
    ok: bool,
    detail: String,
}

/// The parts the defaults use: the model cache, bge-small (the default
/// embedder and first judge), the ONNX runtime, the cross-encoder.
fn install() -> Vec<Part> {
    use treenav::tree::embed;
    let cache = embed::default_bge_dir()
        .parent()
        .and_then(|models| models.parent())
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let bge = embed::bge_small_available();
    let cross_encoder = match cfg!(feature = "cross-encoder") {
        true => file(
            "cross-encoder",
            treenav::judge::default_model_dir().join("model.onnx"),
        ),
        false => Part {
            part: "cross-encoder",
            ok: false,
            detail: "this build has none (rebuild with --features cross-encoder)".into(),
        },
    };
    vec![
        Part {
            part: "model cache",
            ok: cache.is_dir(),
            detail: cache.display().to_string(),
        },
        Part {
            part: "bge-small",
            ok: bge.is_ok(),
            detail: match bge {
                Ok(()) => format!(
                    "{} (the default embedder)",
                    embed::default_bge_dir().display()
                ),
                Err(e) => format!("{e}; builds fall back to tfidf"),
            },
        },
        file("onnx runtime", treenav::judge::default_ort_library()),
        cross_encoder,
    ]
}

/// A part that is one file: there, or what fetches it.
fn file(part: &'static str, path: std::path::PathBuf) -> Part {
    let ok = path.is_file();
    let detail = match ok {
        true => path.display().to_string(),
        false => format!(
            "{} is absent (bash scripts/fetch-models.sh fetches it)",
            path.display()
        ),
    };
    Part { part, ok, detail }
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
