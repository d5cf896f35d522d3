//! The runtime, sessions and padded batches (feature `runtime`).

use crate::{Error, Result};
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use ort::session::Session;
use ort::value::Tensor;
use tokenizers::{Encoding, Tokenizer};

static ENVIRONMENT: OnceLock<std::result::Result<ort::environment::Environment, String>> =
    OnceLock::new();

/// The process's runtime, loaded from `library` on first use (later calls
/// share it, whatever library they name).
fn runtime(library: &Path) -> Result<&'static ort::environment::Environment> {
    let env = ENVIRONMENT.get_or_init(|| {
        if !library.exists() {
            return Err(format!(
                "ONNX Runtime library {} not found: run scripts/fetch-models.sh or set ORT_DYLIB_PATH",
                library.display()
            ));
        }
        // A regular file: a FIFO or a device is refused, never waited on.
        treenav_files::check(library, &treenav_files::Kind::new("--ort-library", 4 << 30))
            .map_err(|e| e.to_string())?;
        let env = ort::init_from(library)
            .map_err(|e| format!("cannot load ONNX Runtime from {}: {e}", library.display()))?
            .with_name("treenav")
            .build()
            .map_err(|e| format!("cannot start ONNX Runtime: {e}"))?;
        tracing::info!(library = %library.display(), build = ort::info(), "ONNX Runtime loaded");
        Ok(env)
    });
    env.as_ref().map_err(|e| Error::Setup(e.clone()))
}

/// The loaded runtime's build string, once one is loaded.
pub fn runtime_build() -> Option<&'static str> {
    match ENVIRONMENT.get() {
        Some(Ok(_)) => Some(ort::info()),
        _ => None,
    }
}

/// One batch's output: the rows it holds (indices into the encodings run),
/// its padded width, and the first output tensor's shape and values.
#[derive(Debug)]
pub struct BatchOutput<'a> {
    /// Indices of the encodings in this batch, in row order.
    pub rows: &'a [usize],
    /// Padded sequence length of the batch.
    pub width: usize,
    /// Shape of the first output.
    pub shape: Vec<usize>,
    /// Values of the first output, row-major.
    pub data: &'a [f32],
}

/// An ONNX BERT-style model (`model.onnx`) with its `tokenizer.json`.
#[derive(Debug)]
pub struct Encoder {
    session: Mutex<Session>,
    tokenizer: Tokenizer,
    needs_type_ids: bool,
}

impl Encoder {
    /// Loads `model.onnx` and `tokenizer.json` from `dir` with the runtime
    /// in `library`, `threads` for one inference, inputs cut at
    /// `max_tokens`. A missing file says how to get it.
    pub fn load(dir: &Path, library: &Path, threads: usize, max_tokens: usize) -> Result<Encoder> {
        let model = dir.join("model.onnx");
        let tok = dir.join("tokenizer.json");
        for f in [&model, &tok] {
            if !f.exists() {
                return Err(Error::Setup(format!(
                    "{} not found: run scripts/fetch-models.sh or pass --model-dir",
                    f.display()
                )));
            }
        }
        let env = runtime(library)?;
        let setup = |e: treenav_files::Error| Error::Setup(e.to_string());
        let tok_bytes =
            treenav_files::read(&tok, &treenav_files::Kind::new("tokenizer.json", 256 << 20))
                .map_err(setup)?;
        treenav_files::check(&model, &treenav_files::Kind::new("model.onnx", 8 << 30))
            .map_err(setup)?;
        let mut tokenizer = Tokenizer::from_bytes(tok_bytes)
            .map_err(|e| Error::Setup(format!("{}: {e}", tok.display())))?;
        // The shipped tokenizers pad every input to 512: batches are padded
        // here, to their longest row.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: max_tokens,
                ..Default::default()
            }))
            .map_err(|e| Error::Setup(format!("tokenizer truncation: {e}")))?;
        let session = Session::builder(env)
            .and_then(|b| {
                b.with_optimization_level(ort::session::builder::GraphOptimizationLevel::Level3)
                    .map_err(Into::into)
            })
            .and_then(|b| b.with_intra_threads(threads.max(1)).map_err(Into::into))
            .and_then(|mut b| b.commit_from_file(&model))
            .map_err(|e| Error::Setup(format!("cannot load {}: {e}", model.display())))?;
        let needs_type_ids = session
            .inputs()
            .iter()
            .any(|i| i.name() == "token_type_ids");
        Ok(Encoder {
            session: Mutex::new(session),
            tokenizer,
            needs_type_ids,
        })
    }

    /// Tokenises single texts.
    pub fn encode(&self, texts: &[String]) -> Result<Vec<Encoding>> {
        let inputs: Vec<&str> = texts.iter().map(String::as_str).collect();
        self.tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| Error::Inference(format!("tokenization failed: {e}")))
    }

    /// Tokenises (first, second) pairs, e.g. (query, passage).
    pub fn encode_pairs(&self, first: &str, seconds: &[String]) -> Result<Vec<Encoding>> {
        let pairs: Vec<(String, String)> = seconds
            .iter()
            .map(|t| (first.to_string(), t.clone()))
            .collect();
        self.tokenizer
            .encode_batch(pairs, true)
            .map_err(|e| Error::Inference(format!("tokenization failed: {e}")))
    }

    /// Runs `encodings` in batches of at most `batch_size`, shortest first,
    /// each padded to its longest row; `each` receives every batch's first
    /// output. Batches run one after another on this thread.
    pub fn run(
        &self,
        encodings: &[Encoding],
        batch_size: usize,
        mut each: impl FnMut(BatchOutput<'_>) -> Result<()>,
    ) -> Result<()> {
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|i| (encodings[*i].len(), *i));
        let mut session = self
            .session
            .lock()
            .map_err(|_| Error::Inference("the model session is poisoned".into()))?;
        for chunk in order.chunks(batch_size.max(1)) {
            let longest = chunk.iter().map(|i| encodings[*i].len()).max().unwrap_or(0);
            let width = longest.div_ceil(8).max(1) * 8;
            let rows = chunk.len();
            tracing::debug!(rows, width, longest, "onnx batch (padded shape)");
            let (ids, mask, types) = padded(encodings, chunk, width);
            let tensor = |v: Vec<i64>| {
                Tensor::from_array(([rows, width], v))
                    .map_err(|e| Error::Inference(format!("tensor: {e}")))
            };
            let outputs = if self.needs_type_ids {
                session.run(ort::inputs![
                    "input_ids" => tensor(ids)?,
                    "attention_mask" => tensor(mask)?,
                    "token_type_ids" => tensor(types)?
                ])
            } else {
                session.run(
                    ort::inputs!["input_ids" => tensor(ids)?, "attention_mask" => tensor(mask)?],
                )
            }
            .map_err(|e| Error::Inference(format!("inference failed: {e}")))?;
            let (shape, data) = outputs[0]
                .try_extract_tensor::<f32>()
                .map_err(|e| Error::Inference(format!("unexpected model output: {e}")))?;
            let shape: Vec<usize> = shape
                .iter()
                .map(|d| usize::try_from(*d).unwrap_or(0))
                .collect();
            if shape.first() != Some(&rows) || data.len() != shape.iter().product::<usize>() {
                return Err(Error::Inference(format!(
                    "the model returned shape {shape:?} for {rows} rows"
                )));
            }
            each(BatchOutput {
                rows: chunk,
                width,
                shape,
                data,
            })?;
        }
        Ok(())
    }
}

/// Input ids, attention mask and token types of `chunk`, padded to `width`.
fn padded(encodings: &[Encoding], chunk: &[usize], width: usize) -> (Vec<i64>, Vec<i64>, Vec<i64>) {
    let rows = chunk.len();
    let mut ids = vec![0i64; rows * width];
    let mut mask = vec![0i64; rows * width];
    let mut types = vec![0i64; rows * width];
    for (r, i) in chunk.iter().enumerate() {
        let e = &encodings[*i];
        for (c, ((id, m), t)) in e
            .get_ids()
            .iter()
            .zip(e.get_attention_mask())
            .zip(e.get_type_ids())
            .enumerate()
            .take(width)
        {
            ids[r * width + c] = i64::from(*id);
            mask[r * width + c] = i64::from(*m);
            types[r * width + c] = i64::from(*t);
        }
    }
    (ids, mask, types)
}
