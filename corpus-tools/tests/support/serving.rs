//! A `treenav serve` process for the tests that run the binary: started on
//! a free port, its address read from its first line, killed when dropped.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `treenav serve`; `base` is its `http://127.0.0.1:PORT`.
pub struct Serving {
    child: Child,
    pub base: String,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `treenav serve args… --addr 127.0.0.1:0` in `dir`.
pub fn serve(args: &[String], dir: &Path) -> Serving {
    let mut child = Command::new(env!("CARGO_BIN_EXE_treenav"))
        .arg("serve")
        .args(args)
        .args(["--addr", "127.0.0.1:0"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn treenav serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read serve's first line");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .map(str::to_string);
    let base = base.unwrap_or_else(|| panic!("serve said {line:?}"));
    Serving { child, base }
}
