//! Helpers shared by the integration tests: real servers on 127.0.0.1.
#![allow(dead_code)]

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed when dropped.
pub struct Server {
    child: Child,
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

/// Whether this run is CI, where every peer must be present.
pub fn in_ci() -> bool {
    std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Starts `program args…` (with `{port}` replaced) and waits until the port
/// accepts connections. `None` (test skipped, with a message) when the program
/// is not installed outside CI; a panic in CI, where it must be installed.
pub fn start(program: &str, args: &[&str], install_hint: &str) -> Option<Server> {
    let port = free_port();
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("{port}", &port.to_string()))
        .collect();
    let child = match Command::new(program)
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            if in_ci() {
                panic!("{program} is required in CI but cannot start ({e}); {install_hint}");
            }
            eprintln!("SKIPPED: {program} is not installed ({e}); {install_hint}");
            return None;
        }
    };
    let server = Server {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(server);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{program} did not listen on port {port} within 60 s");
}

/// The shared benchmark data folder, when present (it is absent on a user's fresh clone).
pub fn shared_data(rel: &str) -> Option<std::path::PathBuf> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data")
        .join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!(
            "SKIPPED: {} is absent (the shared benchmark data is not on this machine)",
            p.display()
        );
        None
    }
}
