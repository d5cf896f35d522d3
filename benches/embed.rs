//! In-process sentence embedders against a plain Python ONNX Runtime
//! session on the same model file, texts and batch (`cargo bench --features
//! onnx --bench embed`): texts per second and the ratio, each the median of
//! three windows, treenav's and the reference's alternating (these machines
//! are noisy). Texts: SciFact's documents as the build embeds them (title +
//! first sentence) when `../shared/data/scifact` is there, else generated
//! sentences. The reference needs `bash scripts/fetch-models.sh --reference`.

#[cfg(feature = "onnx")]
mod run {
    use std::io::{BufRead, Write};
    use std::process::{Child, ChildStdout, Command, Stdio};
    use std::time::Instant;
    use treenav::tree::{default_bge_dir, Embedder, EmbedderOptions, NoProgress};

    const SECONDS: f64 = 4.0;
    const TEXTS: usize = 1500;

    /// SciFact titles + first sentences, or generated ones.
    fn texts() -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/data/scifact/corpus.jsonl");
        if let Ok(text) = std::fs::read_to_string(&path) {
            return text
                .lines()
                .take(TEXTS)
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .map(|v| {
                    let body = v["text"].as_str().unwrap_or("");
                    let first = body.split(". ").next().unwrap_or(body);
                    format!("{}. {first}.", v["title"].as_str().unwrap_or(""))
                })
                .collect();
        }
        (0..TEXTS)
            .map(|i| {
                format!(
                    "Generated sentence {i} about insulin, glucose and the liver {}.",
                    "cells ".repeat(i % 20)
                )
            })
            .collect()
    }

    struct Reference {
        child: Child,
        out: std::io::BufReader<ChildStdout>,
        version: String,
    }

    impl Reference {
        fn start() -> Result<Reference, String> {
            let cache = std::env::var_os("TREENAV_CACHE_DIR")
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME")
                        .map(|h| std::path::Path::new(&h).join(".cache/treenav"))
                })
                .ok_or("no HOME")?;
            let python = cache.join("pyref/bin/python");
            if !python.is_file() {
                return Err("run bash scripts/fetch-models.sh --reference".into());
            }
            let script =
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/embed_reference.py");
            let mut child = Command::new(&python)
                .arg(&script)
                .arg(default_bge_dir())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("{}: {e}", python.display()))?;
            let out = std::io::BufReader::new(child.stdout.take().ok_or("no stdout")?);
            Ok(Reference {
                child,
                out,
                version: String::new(),
            })
        }

        fn measure(&mut self, texts: &[String], batch: usize) -> Result<f64, String> {
            let spec = serde_json::json!({
                "max_tokens": 256, "batch": batch, "seconds": SECONDS, "texts": texts,
            });
            let stdin = self.child.stdin.as_mut().ok_or("no stdin")?;
            writeln!(stdin, "{spec}").map_err(|e| e.to_string())?;
            stdin.flush().map_err(|e| e.to_string())?;
            let mut line = String::new();
            self.out.read_line(&mut line).map_err(|e| e.to_string())?;
            let v: serde_json::Value =
                serde_json::from_str(&line).map_err(|e| format!("reference output: {e}"))?;
            self.version = v["ort_version"].as_str().unwrap_or("?").to_string();
            Ok(v["texts_per_s"].as_f64().unwrap_or(0.0))
        }
    }

    impl Drop for Reference {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    }

    async fn ours(embedder: &Embedder, texts: &[String]) -> f64 {
        let start = Instant::now();
        let mut done = 0usize;
        while start.elapsed().as_secs_f64() < SECONDS {
            embedder
                .embed(texts.to_vec(), &NoProgress)
                .await
                .expect("embed");
            done += texts.len();
        }
        done as f64 / start.elapsed().as_secs_f64()
    }

    pub async fn main() {
        if !default_bge_dir().join("model.onnx").is_file() {
            println!("bge-small: SKIPPED (run scripts/fetch-models.sh)");
            return;
        }
        let texts = texts();
        println!("## Sentence embedder texts per second (bge-small-en ONNX, 2 threads, sorted by length, batch padded to its longest), beside a Python ONNX Runtime session (scripts/embed_reference.py)\n");
        println!(
            "{} texts; median of three {SECONDS}-second windows each, alternating.\n",
            texts.len()
        );
        println!("| batch | treenav texts/s | Python texts/s | ratio |\n|---|---|---|---|");
        let mut reference = Reference::start();
        for batch in [16usize, 32, 64] {
            let options = EmbedderOptions::BgeSmall {
                model_dir: None,
                ort_library: None,
                batch_size: batch,
                max_tokens: 256,
                threads: 2,
            };
            let embedder = Embedder::new(&options, 1).expect("bge-small");
            embedder
                .embed(texts[..64].to_vec(), &NoProgress)
                .await
                .expect("warm-up");
            let (mut mine, mut theirs) = (Vec::new(), Vec::new());
            let mut failed = None;
            for _ in 0..3 {
                mine.push(ours(&embedder, &texts).await);
                if let Ok(r) = reference.as_mut() {
                    match r.measure(&texts, batch) {
                        Ok(v) => theirs.push(v),
                        Err(e) => failed = Some(e),
                    }
                }
            }
            let rate = median(mine);
            if theirs.is_empty() {
                let why = failed
                    .or_else(|| reference.as_ref().err().cloned())
                    .unwrap_or_default();
                println!("| {batch} | {rate:.1} | SKIPPED ({why}) | — |");
            } else {
                let py = median(theirs);
                println!(
                    "| {batch} | {rate:.1} | {py:.1} | {:.2}× |",
                    rate / py.max(1e-9)
                );
            }
        }
        if let Ok(r) = &reference {
            println!("\nPython onnxruntime: {}", r.version);
        }
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    #[cfg(feature = "onnx")]
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(run::main());
    #[cfg(not(feature = "onnx"))]
    println!("bge-small: SKIPPED (build with --features onnx)");
}
