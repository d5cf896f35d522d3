//! Every command in README.md's shell and Python blocks, run as written
//! (#67 row 1), so the README cannot drift from the CLI again.
//!
//! The blocks are read from README.md itself: a command this file has no
//! recipe for fails the test, so a new README line needs one here. Commands
//! run in a temporary folder (the README's relative names land there) with
//! the paths and sizes a test can afford put in place of the README's, each
//! substitution listed in [`Scene::rewrite`]: `cargo run … --` is this
//! build's `treenav`, `../shared/data/scifact` is the notes fixture (a BEIR
//! folder, whose one split stands for `--split train`), `./my-notes` that
//! fixture's notes written as Markdown files, `--limit` at most 8, and port
//! 8080 the port `serve` was given. Two
//! commands are checked but not run, each saying why (printed as one
//! summary line): the test command (it is the one running this test; its
//! line must be `.ci/run`'s) and the local-LLM query (needs an LLM server:
//! its flags are parsed and the endpoint refused, `tests/llama_server.rs`
//! runs those flags against llama.cpp).
//!
//! Needs the model cache (`bash scripts/fetch-models.sh`, the README's own
//! first command, offline once fetched), curl and the Python client with
//! LangChain, LlamaIndex and ir_measures: without them it skips with one
//! line, in CI it fails.

#[path = "support/pytest.rs"]
#[allow(dead_code)] // `run` is for the pytest suites
mod pytest;
#[path = "support/serving.rs"]
mod serving;

use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fenced block of README.md: its language and its text.
struct Block {
    lang: String,
    text: String,
}

fn blocks(readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for line in readme.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => {
                open = Some(Block {
                    lang: lang.trim().to_string(),
                    text: String::new(),
                })
            }
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some(b), None) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// A shell block's commands as words: continuation lines joined, comments
/// dropped, `;` and `&&` separating commands.
fn commands(sh: &str) -> Vec<Vec<String>> {
    let joined = sh.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let words =
            shlex::split(line).unwrap_or_else(|| panic!("README line does not parse: {line}"));
        let mut current = Vec::new();
        for word in words {
            if word == "&&" {
                out.push(std::mem::take(&mut current));
            } else if let Some(w) = word.strip_suffix(';') {
                current.push(w.to_string());
                out.push(std::mem::take(&mut current));
            } else {
                current.push(word);
            }
        }
        out.push(current);
    }
    out.retain(|c| !c.is_empty());
    out
}

/// The temporary folder the commands run in, and what they started.
struct Scene {
    dir: tempfile::TempDir,
    addr: Option<String>,
    serving: Option<serving::Serving>,
    ran: usize,
    checked_only: Vec<String>,
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let notes = repo().join("tests/fixtures/notes-reworded");
        write_notes_folder(&notes.join("corpus.jsonl"), &dir.path().join("my-notes"));
        let new = dir.path().join("new-notes");
        fs::create_dir(&new).expect("mkdir");
        fs::write(
            new.join("key-rotation.md"),
            "---\ntitle: Key rotation\n---\n\nRotate the signing keys every 90 days with `vault rotate`.\n",
        )
        .expect("write");
        fs::copy(
            notes.join("queries.jsonl"),
            dir.path().join("queries.jsonl"),
        )
        .expect("copy queries");
        let chunks = r#"["ALDH1 marks breast cancer stem cells.", "Cats sleep most of the day.", "Rotate the keys every 90 days."]"#;
        fs::write(dir.path().join("chunks.json"), chunks).expect("write chunks");
        Scene {
            dir,
            addr: None,
            serving: None,
            ran: 0,
            checked_only: Vec::new(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The README's words with what a test can run in their place.
    fn rewrite(&self, words: &[String]) -> Vec<String> {
        let fixture = repo().join("tests/fixtures/notes-reworded");
        let port = self
            .addr
            .as_deref()
            .and_then(|a| a.rsplit(':').next())
            .unwrap_or("8080");
        let mut out: Vec<String> = Vec::new();
        let on_fixture = words.iter().any(|w| w == "../shared/data/scifact");
        for w in words {
            let w = match w.as_str() {
                "../shared/data/scifact" => fixture.display().to_string(),
                // The fixture has one split.
                "train" if on_fixture => "test".to_string(),
                _ if out.last().is_some_and(|p| p == "--limit") => {
                    let n: usize = w.parse().expect("--limit N");
                    n.min(8).to_string()
                }
                _ => w.replace(":8080", &format!(":{port}")),
            };
            out.push(w);
        }
        out
    }

    fn run(&mut self, words: &[String]) {
        let words = self.rewrite(words);
        let (program, args) = words.split_first().expect("a command");
        match program.as_str() {
            "bash" => self.bash(args),
            "cargo" => self.cargo(args),
            "treenav" => self.treenav(args),
            "curl" => self.curl(args),
            "python" | "python3" => {
                let out = self.output(Command::new(pytest::python()).args(args));
                let said = text(&out.stdout);
                assert!(said.contains("nDCG@10"), "ir_measures printed {said:?}");
            }
            other => panic!(
                "README runs `{other}`, which corpus-tools/tests/readme.rs has no recipe for: {words:?}"
            ),
        }
        self.ran += 1;
    }

    fn bash(&mut self, args: &[String]) {
        assert_eq!(args, ["scripts/fetch-models.sh"], "README's bash line");
        let out = Command::new("bash")
            .arg(repo().join("scripts/fetch-models.sh"))
            .output()
            .expect("run bash");
        assert!(out.status.success(), "fetch-models: {}", text(&out.stderr));
    }

    fn cargo(&mut self, args: &[String]) {
        let run = ["run", "--release", "-p", "corpus-tools", "--"];
        if args.len() > run.len() && args[..run.len()] == run {
            return self.treenav(&args[run.len()..]);
        }
        assert_eq!(args.first().map(String::as_str), Some("test"), "{args:?}");
        let line = format!("cargo {}", args.join(" "));
        let ci = fs::read_to_string(repo().join(".ci/run")).expect(".ci/run");
        assert!(
            ci.lines().any(|l| l.trim() == line),
            "README's test command `{line}` is not the one .ci/run runs"
        );
        self.checked_only
            .push("the test command (it runs this test; .ci/run runs it)".into());
    }

    fn treenav(&mut self, args: &[String]) {
        match args.first().map(String::as_str) {
            Some("serve") => return self.serve(&args[1..]),
            Some("query") if args.iter().any(|a| a == "openai-logprobs") => {
                return self.llm_query(args)
            }
            _ => {}
        }
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_treenav"));
        let (args, into) = match args.iter().position(|a| a == ">") {
            Some(i) => (&args[..i], Some(self.path(&args[i + 1]))),
            None => (args, None),
        };
        let out = self.output(cmd.args(args));
        if let Some(file) = into {
            fs::write(&file, &out.stdout).expect("write stdout");
            let lines = text(&out.stdout).lines().count();
            assert_eq!(lines, 64, "one answer line a question in {file:?}");
        }
        check_treenav(args, &out, self.dir.path());
    }

    /// `query --judge openai-logprobs --endpoint …`: no LLM server here, so
    /// the flags are parsed and the refused connection is the error.
    fn llm_query(&mut self, args: &[String]) {
        let mut args = args.to_vec();
        for w in &mut args {
            if w.starts_with("http://127.0.0.1:") {
                *w = "http://127.0.0.1:9".into(); // discard port: nothing listens
            }
        }
        let out = Command::new(env!("CARGO_BIN_EXE_treenav"))
            .args(&args)
            .current_dir(self.dir.path())
            .output()
            .expect("run treenav");
        let said = text(&out.stderr);
        assert!(!out.status.success(), "{said}");
        assert!(
            !said.contains("unexpected argument") && said.contains("127.0.0.1:9"),
            "the flags parse and the endpoint is what failed: {said}"
        );
        self.checked_only
            .push("the local-LLM query (needs an LLM server; tests/llama_server.rs)".into());
    }

    fn serve(&mut self, args: &[String]) {
        let at = args.iter().position(|a| a == "--addr").expect("--addr");
        let mut args = args.to_vec();
        args.drain(at..=at + 1); // serving::serve picks a free port
        let serving = serving::serve(&args, self.dir.path());
        self.addr = Some(serving.base.clone());
        self.serving = Some(serving);
    }

    fn curl(&mut self, args: &[String]) {
        let out = self.output(Command::new("curl").arg("--fail-with-body").args(args));
        let v: Value = serde_json::from_slice(&out.stdout).expect("curl printed JSON");
        assert!(
            v["passages"].as_array().is_some_and(|p| !p.is_empty()),
            "{v}"
        );
    }

    /// The README's Python block against the `serve` it started.
    fn python_block(&mut self, code: &str) {
        let port = self
            .addr
            .as_deref()
            .and_then(|a| a.rsplit(':').next())
            .expect("the README starts serve before its Python block");
        let code = code.replace(":8080", &format!(":{port}"));
        let out = self.output(
            Command::new(pytest::python())
                .args(["-c", &code])
                .env_remove("TREENAV_TOKEN"),
        );
        assert!(
            !text(&out.stdout).trim().is_empty(),
            "the block prints scores"
        );
        self.ran += 1;
    }

    /// Runs `cmd` in the scene's folder; fails with its output unless it
    /// succeeds.
    fn output(&self, cmd: &mut Command) -> Output {
        let out = cmd
            .current_dir(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed:\n{}\n{}",
            text(&out.stdout),
            text(&out.stderr)
        );
        out
    }
}

/// What each `treenav` subcommand the README runs must leave behind.
fn check_treenav(args: &[String], out: &Output, dir: &Path) {
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let after = |flag: &str| {
        let i = args.iter().position(|a| a == flag)?;
        args.get(i + 1).map(|f| dir.join(f))
    };
    match args.first().map(String::as_str) {
        Some("build") => {
            let tree = after("-o").expect("build -o");
            assert!(tree.is_file(), "{said}");
            assert!(said.contains("embedder onnx(bge-small-en"), "{said}");
        }
        Some("bench") => match after("--save-config") {
            Some(config) => {
                let text = fs::read_to_string(&config).expect("the saved config");
                assert!(text.contains("\"fitted\""), "{text}");
            }
            None => {
                assert!(after("--json").is_some_and(|j| j.is_file()), "{said}");
                let run = after("--run-dir").expect("--run-dir");
                assert!(run.join("tree@50.documents.run").is_file(), "{said}");
            }
        },
        Some("prune") => {
            let v: Value = serde_json::from_slice(&out.stdout).expect("prune --json");
            assert!(v["kept"].as_array().is_some_and(|k| !k.is_empty()), "{v}");
        }
        Some("inspect") => assert!(said.contains("embedder"), "{said}"),
        Some("add") => assert!(said.contains("1 added"), "{said}"),
        Some("query" | "remove" | "compact") => assert!(!said.is_empty()),
        other => panic!("README runs `treenav {other:?}`, which has no check here"),
    }
}

/// The notes fixture's BEIR corpus as a folder of Markdown notes, the
/// title and the metadata the README filters on (`tenant`, `year`) in
/// front matter.
fn write_notes_folder(corpus: &Path, folder: &Path) {
    fs::create_dir(folder).expect("mkdir");
    let lines = fs::read_to_string(corpus).expect("read corpus");
    for (i, line) in lines.lines().enumerate() {
        let v: Value = serde_json::from_str(line).expect("corpus line");
        let (id, title, body) = (&v["_id"], &v["title"], &v["text"]);
        let tenant = ["acme", "globex"][i % 2];
        let note = format!(
            "---\ntitle: {}\ntenant: {tenant}\nyear: {}\n---\n\n{}\n",
            title.as_str().expect("title"),
            2021 + i % 4,
            body.as_str().expect("text")
        );
        fs::write(
            folder.join(format!("{}.md", id.as_str().expect("id"))),
            note,
        )
        .expect("write note");
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Why this machine cannot run the README's commands, if it cannot.
fn missing_peers() -> Option<String> {
    let cache = std::env::var_os("TREENAV_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/treenav")))?;
    if !cache.join("models/bge-small-en/model.onnx").is_file() {
        return Some("no bge-small in the model cache".into());
    }
    if Command::new("curl").arg("--version").output().is_err() {
        return Some("no curl".into());
    }
    pytest::missing(
        &pytest::python(),
        "import ir_measures, treenav_client, langchain_core, llama_index.core",
    )
}

#[test]
fn every_readme_command_runs_as_written() {
    let hint = "bash scripts/fetch-models.sh; curl; pip install './clients/python[test]' langchain-core llama-index-core ir-measures";
    if pytest::skip("README commands test", hint, missing_peers()) {
        return;
    }
    let readme = fs::read_to_string(repo().join("README.md")).expect("README.md");
    let mut scene = Scene::new();
    let mut python_blocks = 0;
    for block in blocks(&readme) {
        match block.lang.as_str() {
            "sh" => commands(&block.text).iter().for_each(|c| scene.run(c)),
            "python" => {
                scene.python_block(&block.text);
                python_blocks += 1;
            }
            other => panic!("README has a ```{other} block this test cannot run"),
        }
    }
    assert_eq!(python_blocks, 1, "the README's Python block ran");
    assert!(scene.ran >= 15, "only {} README commands ran", scene.ran);
    eprintln!(
        "README: {} commands run; checked, not run: {}",
        scene.ran,
        scene.checked_only.join("; ")
    );
}

#[test]
fn readme_blocks_split_into_commands() {
    let sh = "a x; b \"y z\" && c # note\nd \\\n  --e 1   # more\n";
    assert_eq!(
        commands(sh),
        [
            vec!["a", "x"],
            vec!["b", "y z"],
            vec!["c"],
            vec!["d", "--e", "1"]
        ]
    );
    let md = "text\n```sh\nls\n```\n```python\nprint(1)\n```\n";
    let b = blocks(md);
    assert_eq!(
        (b[0].lang.as_str(), b[1].text.as_str()),
        ("sh", "print(1)\n")
    );
}
