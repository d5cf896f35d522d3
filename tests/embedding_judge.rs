//! The embedding judge end to end on the real bge-small-en model: a tree
//! built, saved with its passage vectors and loaded again; the query
//! embedded once by the tree's own embedder. Needs the `onnx` feature and
//! `scripts/fetch-models.sh`; skipped with a message when the files are
//! absent, except in CI, where they must be present.
#![cfg(feature = "onnx")]

mod support;

use std::sync::Arc;
use treenav::corpus::{load_str, Format, LoadOptions};
use treenav::judge::{BackendOptions, Judge, JudgeOptions};
use treenav::navigator::{BestFirstConfig, Navigator, NavigatorConfig, Strategy};
use treenav::tree::EmbedderOptions;

/// Team notes: none of them says "holiday" or "allowance".
const NOTES: [(&str, &str); 6] = [
    ("vacation", "Vacation policy: every employee gets 25 days of paid leave per year; unused days carry over until March."),
    ("keys", "Rotating the API keys: generate a new key in the console, deploy it, then revoke the old one."),
    ("oncall", "On-call rota: the engineer on duty answers pages within fifteen minutes, day and night."),
    ("expenses", "Expense reports are filed monthly with receipts attached; travel needs prior approval."),
    ("laptops", "New laptops are ordered through the IT desk and arrive within a week, encrypted."),
    ("standup", "The daily standup starts at ten; each person says what they did and what blocks them."),
];

/// bge-small in-process, as `treenav build` runs it on two cores.
fn bge_small() -> EmbedderOptions {
    EmbedderOptions::BgeSmall {
        model_dir: None,
        ort_library: None,
        batch_size: 8,
        max_tokens: 256,
        threads: 2,
    }
}

/// The notes built into a bge-small tree, saved and loaded again.
async fn notes_tree(folder: &std::path::Path) -> treenav::tree::Tree {
    let jsonl: Vec<String> = NOTES
        .iter()
        .map(|(id, text)| format!(r#"{{"_id":"{id}","title":"","text":"{text}"}}"#))
        .collect();
    let corpus = load_str(
        &jsonl.join("\n"),
        "notes.jsonl",
        Format::Beir,
        &LoadOptions::default(),
    )
    .expect("corpus");
    let built = support::tree_with(corpus, Some(3), &bge_small()).await;
    saved_and_loaded(&built, &folder.join("notes.tree"))
}

/// `tree` saved to `path` with its side files and loaded again, as a
/// query reads it.
fn saved_and_loaded(tree: &treenav::tree::Tree, path: &std::path::Path) -> treenav::tree::Tree {
    treenav::tree::file::save(tree, path).expect("save");
    treenav::tree::file::load(path).expect("load")
}

/// The embedding judge over `tree`, best-first, returning `top`.
fn navigator(tree: treenav::tree::Tree, top: usize, best_first: BestFirstConfig) -> Navigator {
    let judge = Judge::new(&JudgeOptions {
        backend: BackendOptions::Embedding(treenav::judge::EmbeddingOptions {}),
        ..JudgeOptions::default()
    })
    .expect("judge");
    let config = NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .returned_passages(top)
        .shortlist(0)
        .best_first(best_first)
        .check()
        .expect("config");
    Navigator::new(Arc::new(tree), judge, config).expect("navigator")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_sharing_no_word_with_the_corpus_finds_its_passage_by_meaning() {
    if !support::bge_small_here() {
        return;
    }
    let folder = tempfile::tempdir().expect("tempdir");
    let tree = notes_tree(folder.path()).await;
    assert_eq!(
        tree.passage_vectors().map(|v| v.len()),
        Some(NOTES.len()),
        "every passage's vector saved and read back"
    );
    let best_first = BestFirstConfig {
        explore_budget: 300,
        ..BestFirstConfig::default()
    };
    let nav = navigator(tree, 3, best_first);
    assert!(nav.embeds_queries());
    let found = nav.retrieve("holiday allowance").await.expect("retrieve");
    assert_eq!(found.passages.len(), 3, "k passages, not nothing");
    assert_eq!(
        found.passages[0].document_id, "vacation",
        "{:?}",
        found.passages
    );
    assert!(found.trace.usage.vectors_scored > 0);
}

/// The bundled sample, built with bge-small: questions with no word (nor
/// stem) in common with its 48 articles reach the article they mean, k
/// passages each, through the embedding judge and the descent of the
/// clusters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_questions_sharing_no_word_with_it_find_their_article() {
    if !support::bge_small_here() {
        return;
    }
    let words: std::collections::HashSet<String> = treenav::SAMPLE_CORPUS
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_string)
        .collect();
    let folder = tempfile::tempdir().expect("tempdir");
    let built = support::tree_with(support::sample_corpus(), None, &bge_small()).await;
    let tree = saved_and_loaded(&built, &folder.path().join("sample.tree"));
    let nav = navigator(tree, 3, BestFirstConfig::default());
    for (query, article) in [
        ("gridiron showdown", "Super_Bowl_50"),
        ("khagan horde", "Genghis_Khan"),
        ("boiler pistons", "Steam_engine"),
    ] {
        // Not a word, nor a stem: no word of the sample starts with the
        // first five letters of a query word.
        let shared: Vec<&str> = query
            .split(' ')
            .filter(|w| words.iter().any(|x| x.starts_with(&w[..5])))
            .collect();
        assert!(
            shared.is_empty(),
            "{query:?} shares {shared:?} with the sample"
        );
        let found = nav.retrieve(query).await.expect("retrieve");
        assert_eq!(
            found.passages.len(),
            3,
            "{query:?}: k passages, not nothing"
        );
        assert!(
            found.passages[0].document_id.starts_with(article),
            "{query:?}: {:?}",
            found.passages[0]
        );
    }
}

/// On a bge-small tree the score is the fitted fusion's probability of
/// the passage's evidence (docs/calibration.md), not the centred fusion's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bge_small_tree_scores_by_the_fitted_fusion() {
    if !support::bge_small_here() {
        return;
    }
    let folder = tempfile::tempdir().expect("tempdir");
    let tree = notes_tree(folder.path()).await;
    let model = treenav::navigator::fusion::fitted_for(&tree.meta().embedder)
        .expect("a fusion fitted for bge-small");
    let query = "how many days of paid leave do employees get";
    let keep = BestFirstConfig {
        keep_evidence: true,
        ..BestFirstConfig::default()
    };
    let found = navigator(tree.clone(), NOTES.len(), keep.clone())
        .retrieve(query)
        .await
        .expect("retrieve");
    assert_eq!(
        found.evidence.len(),
        NOTES.len(),
        "every judged passage kept"
    );
    assert_eq!(found.passages[0].document_id, "vacation");
    for p in &found.passages {
        let (_, e) = found
            .evidence
            .iter()
            .find(|(node, _)| *node == p.node)
            .expect("its evidence");
        assert!(
            (p.score - model.probability(e)).abs() < 1e-12,
            "{p:?} {e:?}"
        );
    }
    let centred = navigator(
        tree,
        NOTES.len(),
        BestFirstConfig {
            fitted_fusion: false,
            ..keep
        },
    )
    .retrieve(query)
    .await
    .expect("retrieve");
    assert_ne!(centred.passages[0].score, found.passages[0].score);
}

/// The cascade with the cross-encoder on a bge-small tree keeps what both
/// stages said of every passage either judged (the fitted cascade's
/// evidence, `bench --evidence`): the judge's logit on the few it read,
/// the exploration's on all it ranked.
/// The notes' tree navigated by the cascade: the exploration, then the
/// cross-encoder at 128 tokens, two passages returned, no shortlist.
#[cfg(feature = "cross-encoder")]
fn cascade(tree: treenav::tree::Tree, best_first: BestFirstConfig) -> Navigator {
    let judge = Judge::new(&JudgeOptions {
        backend: BackendOptions::CrossEncoder(treenav::judge::CrossEncoderOptions {
            model_dir: None,
            ort_library: None,
            threads: 2,
            batch_size: 8,
            max_tokens: 128,
        }),
        ..JudgeOptions::default()
    })
    .expect("cross-encoder judge");
    let config = NavigatorConfig::default()
        .strategy(Strategy::BestFirst)
        .returned_passages(2)
        .shortlist(0)
        .best_first(best_first)
        .check()
        .expect("config");
    Navigator::new(Arc::new(tree), judge, config).expect("navigator")
}

/// Where the exploration is sure (its best passage leads by at least
/// `skip_judge_gap` logits, times the judge's say over sentences) the
/// cascade does not call its judge: the
/// exploration's answer, the lead in the trace, no judge call; at an
/// infinite gap the judge always runs.
#[cfg(feature = "cross-encoder")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sure_exploration_skips_the_cascades_judge() {
    if !support::bge_small_here() || !support::cross_encoder_here() {
        return;
    }
    let folder = tempfile::tempdir().expect("tempdir");
    let tree = notes_tree(folder.path()).await;
    let query = "how many days of paid leave do employees get";
    let at = |gap: f64| BestFirstConfig {
        judge_budget: 4,
        skip_judge_gap: gap,
        ..BestFirstConfig::default()
    };
    let alone = navigator(tree.clone(), 2, BestFirstConfig::default())
        .retrieve(query)
        .await
        .expect("the exploration alone");
    let sure = cascade(tree.clone(), at(0.0))
        .retrieve(query)
        .await
        .expect("retrieve");
    let lead = sure.trace.judge_skipped.expect("skipped at a gap of 0");
    assert!(lead >= 0.0, "{lead}");
    assert_eq!(sure.trace.judge_budget, None, "{:?}", sure.trace);
    assert_eq!(sure.trace.usage.calls, alone.trace.usage.calls);
    assert_eq!(sure.passages, alone.passages);
    // Just above the lead the judge runs: the cut is the setting's.
    let unsure = cascade(tree.clone(), at(lead + 0.01))
        .retrieve(query)
        .await
        .expect("retrieve");
    assert_eq!(unsure.trace.judge_skipped, None);
    assert_eq!(unsure.trace.judge_budget, Some(4));
    assert!(unsure.trace.usage.calls > alone.trace.usage.calls);
    // Over these one-sentence notes the fitted cascade gives a question's
    // judge more say than the exploration (a logit of its own outweighs
    // one of the exploration's): the lead must reach the gap times that say.
    let model = treenav::navigator::fusion::fitted_cascade_for(
        &tree.meta().embedder,
        treenav::judge::BackendKind::CrossEncoder,
    );
    let form = treenav::navigator::query_form::Form {
        question: true,
        short: true,
    };
    if let Some(say) = model.map(|m| m.judge_say(form)).filter(|s| *s > 1.0) {
        let below = cascade(tree.clone(), at(lead / say + 0.01))
            .retrieve(query)
            .await
            .expect("retrieve");
        assert_eq!(below.trace.judge_skipped, None, "scaled by {say}");
        let past = cascade(tree.clone(), at((lead / say - 0.01).max(0.0)))
            .retrieve(query)
            .await
            .expect("retrieve");
        assert_eq!(past.trace.judge_skipped, Some(lead), "scaled by {say}");
    }
    let always = cascade(tree, at(f64::INFINITY)).retrieve(query).await;
    assert_eq!(always.expect("retrieve").trace.judge_skipped, None);
}

#[cfg(feature = "cross-encoder")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cascade_keeps_what_both_stages_said_of_each_passage() {
    if !support::bge_small_here() || !support::cross_encoder_here() {
        return;
    }
    let folder = tempfile::tempdir().expect("tempdir");
    let tree = notes_tree(folder.path()).await;
    let embedder = tree.meta().embedder.clone();
    // Both stages on every query, as when fitting the cascade.
    let both = BestFirstConfig {
        judge_budget: 2,
        keep_evidence: true,
        skip_judge_gap: f64::INFINITY,
        ..BestFirstConfig::default()
    };
    let found = cascade(tree.clone(), both.clone())
        .retrieve("how many days of paid leave do employees get")
        .await
        .expect("retrieve");
    assert_eq!(found.passages[0].document_id, "vacation");
    let stages: Vec<_> = found
        .evidence
        .iter()
        .filter_map(|(_, e)| e.stages)
        .collect();
    assert_eq!(
        stages.len(),
        NOTES.len(),
        "both stages' part of every passage"
    );
    assert!(stages.iter().all(|s| s.reached), "{stages:?}");
    // The query's form, which the fitted cascade weighs, is a question's,
    // and these one-sentence notes are sentence-sized.
    assert!(
        stages.iter().all(|s| s.form.question && s.form.short),
        "{stages:?}"
    );
    let judged: Vec<f64> = stages.iter().filter_map(|s| s.judged).collect();
    assert!(
        judged.len() >= 2 && judged.len() < NOTES.len(),
        "{stages:?}"
    );
    let top = &found.passages[0];
    let all: Vec<_> = found
        .evidence
        .iter()
        .filter_map(|(id, e)| Some((*id, e.stages?)))
        .collect();
    let model = treenav::navigator::fusion::fitted_cascade_for(
        &embedder,
        treenav::judge::BackendKind::CrossEncoder,
    );
    match model {
        // The fitted cascade: the score is the exploration's P of the place
        // the model put the passage in among the judged ones (`probability`
        // stays the judge's own).
        Some(model) => {
            // The trace says how much the judge counted in this query.
            assert_eq!(found.trace.judge_weight, Some(model.judge_weight(&all)));
            let (_, p) = model
                .order(&all)
                .into_iter()
                .find(|(id, _)| *id == top.node)
                .expect("the top passage's place");
            assert!((top.score - p).abs() < 1e-9, "{} against {p}", top.score);
            let slots: Vec<f64> = all
                .iter()
                .filter(|(_, s)| s.judged.is_some())
                .map(|(_, s)| treenav::judge::probability::sigmoid(s.explored))
                .collect();
            let judged_top = all
                .iter()
                .any(|(id, s)| *id == top.node && s.judged.is_some());
            assert!(
                !judged_top || slots.iter().any(|q| (q - p).abs() < 1e-12),
                "{slots:?}"
            );
        }
        // No model: the judge's own P of a passage it read.
        None => {
            assert_eq!(found.trace.judge_weight, None);
            assert!(judged
                .iter()
                .any(|z| (z - treenav::judge::probability::logit(top.probability)).abs() < 1e-9))
        }
    }
    // A statement is not a question: the judge gets less say there.
    let found = cascade(tree, both)
        .retrieve("employees get 25 days of paid leave.")
        .await
        .expect("retrieve");
    let said = found.evidence.iter().filter_map(|(_, e)| e.stages);
    assert!(said.clone().count() > 0 && said.clone().all(|s| !s.form.question));
}
