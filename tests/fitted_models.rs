//! The fitted models' one home (`crates/judge/src/fitted.json`) is what the
//! fitting script writes: `scripts/fit-fusion.py --write` puts the weights
//! it prints into the table, leaves the other models as they were, and the
//! Rust reader reads them back.

mod support;

use treenav::judge::fitted::{self, Embedder, JudgeKind, Models};

/// Evidence lines as `treenav bench --evidence` writes them, made up: 60
/// queries of 12 passages, the first relevant, its judge logit and lexical
/// parts higher on average (a fixed pseudo-random sequence, so the fit is
/// the same every run).
fn evidence() -> String {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut noise = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % 10_000) as f64 / 10_000.0
    };
    let mut out = String::new();
    for q in 0..60 {
        for p in 0..12 {
            let relevant = p == 0;
            let lift = if relevant { 1.0 } else { 0.0 };
            let line = serde_json::json!({
                "query": format!("q{q}"),
                "passage": q * 100 + p,
                "relevant": relevant,
                "judge": -2.0 + 2.0 * lift + 2.5 * noise(),
                "lexical_document": (0.3 * lift + 0.7 * noise()).min(1.0),
                "graph": 0.5 * noise(),
                "lexical_passage": (0.2 * lift + 0.8 * noise()).min(1.0),
                "bm25_share": (0.4 * lift + 0.6 * noise()).min(1.0),
                "lexical_peak": 0.6,
                "lexical_coverage": 1.0,
                "lexical_agreement": 1.0,
            });
            out.push_str(&line.to_string());
            out.push('\n');
        }
    }
    out
}

/// `python3 scripts/fit-fusion.py ARGS`' standard output, which must
/// succeed; `None` (said once) where there is no python3 outside CI.
fn fit(args: &[&std::ffi::OsStr]) -> Option<String> {
    let out = match std::process::Command::new("python3")
        .arg("scripts/fit-fusion.py")
        .args(args)
        .output()
    {
        Ok(out) => out,
        Err(e) if !support::in_ci() => {
            eprintln!("SKIPPED: no python3 to run scripts/fit-fusion.py ({e})");
            return None;
        }
        Err(e) => panic!("python3: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    Some(stdout)
}

/// The weights the script printed on its line starting with `prefix`
/// ("fitted: bias 0.1234, judge 1.2345, ...").
fn printed(stdout: &str, prefix: &str) -> Vec<f64> {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .expect("the fitted line")
        .split(", ")
        .map(|part| {
            let value = part.rsplit(' ').next().expect("a value");
            value.parse().expect("a number")
        })
        .collect()
}

#[test]
fn the_fusion_script_writes_the_weights_it_prints_and_nothing_else() {
    let folder = tempfile::tempdir().expect("tempdir");
    let table = folder.path().join("fitted.json");
    std::fs::write(&table, include_str!("../crates/judge/src/fitted.json")).expect("copy");
    let ev = folder.path().join("ev.jsonl");
    std::fs::write(&ev, evidence()).expect("evidence");
    let Some(stdout) = fit(&[ev.as_os_str(), "--write".as_ref(), table.as_os_str()]) else {
        return;
    };
    let printed = printed(&stdout, "fitted: ");
    let text = std::fs::read_to_string(&table).expect("the written table");
    let written = Models::read(&text).expect("the written table reads");
    let f = written.fusion(Embedder::BgeSmallEn).expect("the fusion");
    let read = [
        f.bias,
        f.judge,
        f.lexical_document,
        f.graph,
        f.lexical_passage,
        f.bm25_share,
        f.lexical_peak,
    ];
    assert_eq!(printed.len(), read.len(), "{stdout}");
    for (p, r) in printed.iter().zip(read) {
        assert!(
            (p - r).abs() < 1e-9,
            "printed {printed:?}, written {read:?}"
        );
    }
    assert_ne!(Some(f), fitted::fusion(Embedder::BgeSmallEn), "refitted");
    // The judge weighs most and relevant evidence lifts P: a real fit.
    assert!(f.judge > 0.5, "{f:?}");
    // The other models are the shipped ones, and the entry says how it
    // was made.
    let bge = "onnx(bge-small-en, cls)";
    assert_eq!(written.calibration(bge), fitted::calibration(bge));
    let cascade = |m: &Models| m.cascade(Embedder::BgeSmallEn, JudgeKind::CrossEncoder);
    assert_eq!(cascade(&written), cascade(fitted::shipped()));
    let refits = written.refits();
    let (_, refit) = refits
        .iter()
        .find(|(section, _)| *section == "fusion")
        .expect("the fusion's refit");
    assert!(
        refit.starts_with("python3 scripts/fit-fusion.py ")
            && refit.ends_with("--write crates/judge/src/fitted.json"),
        "{refit}"
    );
    // Written to a temporary file and renamed: nothing else left beside it.
    let names: Vec<_> = std::fs::read_dir(folder.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// Cascade evidence lines, made up: `queries` queries of 10 judged
/// passages, the first relevant. Each stage puts one of the first two
/// passages first — the judge by 16 logits, the exploration by 1 — and the
/// rest below: in a question, or over sentence-sized passages (`short`),
/// the judge's first is the relevant one, in a claim over paragraphs the
/// exploration's. The gaps are the same in all: only the query's form and
/// its passages' size tell them apart.
fn cascade_evidence(question: bool, short: bool, queries: usize) -> String {
    let mut out = String::new();
    for q in 0..queries {
        for p in 0..10 {
            let (first, second) = if question || short { (0, 1) } else { (1, 0) };
            let judged = match p {
                _ if p == first => 12.0,
                _ if p == second => -4.0,
                _ => -4.0 - p as f64,
            };
            let explored = match p {
                _ if p == second => 1.0,
                _ if p == first => 0.0,
                _ => -(p as f64),
            };
            let line = serde_json::json!({
                "query": format!("{}{}{q}", if question { "q" } else { "c" }, if short { "s" } else { "p" }),
                "passage": q * 100 + p,
                "relevant": p == 0,
                "explored": explored,
                "reached": true,
                "judged": judged,
                "question": question,
                "short": short,
            });
            out.push_str(&line.to_string());
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_cascade_script_writes_the_weights_it_prints_and_trusts_the_judge_on_questions_and_sentences()
{
    let folder = tempfile::tempdir().expect("tempdir");
    let table = folder.path().join("fitted.json");
    std::fs::write(&table, include_str!("../crates/judge/src/fitted.json")).expect("copy");
    let (asked, claimed) = (folder.path().join("q.jsonl"), folder.path().join("c.jsonl"));
    let sentences = folder.path().join("s.jsonl");
    std::fs::write(&asked, cascade_evidence(true, false, 20)).expect("evidence");
    std::fs::write(&claimed, cascade_evidence(false, false, 20)).expect("evidence");
    std::fs::write(&sentences, cascade_evidence(false, true, 20)).expect("evidence");
    let args = [
        "--cascade".as_ref(),
        asked.as_os_str(),
        claimed.as_os_str(),
        sentences.as_os_str(),
        "--write".as_ref(),
        table.as_os_str(),
    ];
    let Some(stdout) = fit(&args) else {
        return;
    };
    assert!(stdout.contains("| held out |"), "the LOCO table: {stdout}");
    let printed = printed(&stdout, "fitted cascade: ");
    let text = std::fs::read_to_string(&table).expect("the written table");
    let written = Models::read(&text).expect("the written table reads");
    let c = written
        .cascade(Embedder::BgeSmallEn, JudgeKind::CrossEncoder)
        .expect("the cascade");
    let read = [
        c.bias,
        c.explored,
        c.judged,
        c.judged_gap,
        c.judged_question,
        c.judged_short,
        c.gap,
    ];
    assert_eq!(printed, read, "{stdout}");
    // Where the judge is right (questions, sentences) it gets the say,
    // where it is wrong (claims over paragraphs) it does not.
    assert!(
        c.judged_question > 0.0 && c.judged + c.judged_gap < c.judged_question,
        "{c:?}"
    );
    assert!(
        c.judged_short > 0.0 && c.judged + c.judged_gap < c.judged_short,
        "{c:?}"
    );
    assert_eq!(
        written.fusion(Embedder::BgeSmallEn),
        fitted::fusion(Embedder::BgeSmallEn),
        "the fusion untouched"
    );
}
