//! The README's Quick start, run as written: its commands are read from `README.md` (the
//! `sh` blocks of the "## Quick start" section, `\`-continued lines joined) and run against
//! the built daemon; the daemon must start, each `curl` must get a 2xx answer, and after
//! Ctrl-C (SIGINT) the pushed points must be in sealed files where the README says.
//!
//! What is not literal, and why:
//! - `cargo run --release -p tsfiled -- ARGS` is run as the program it runs, with the same
//!   ARGS: this package's `tsfiled-e2e`, which is `tsfiled::cli::main` as the `tsfiled` binary
//!   is. Building the release profile in CI only for this test would cost several minutes of
//!   a 2-core machine for a binary the debug build already exercises; what `cargo run` adds —
//!   choosing the binary — is checked instead with `cargo metadata`: the `tsfiled` package
//!   must name its `tsfiled` binary as `default-run` (without it, `cargo run -p tsfiled`
//!   stops with "could not determine which binary to run").
//! - The daemon listens on a free port (`--http-listen 127.0.0.1:0`) instead of 8080, so the
//!   test cannot collide with anything else on the machine. The `curl` commands still run
//!   verbatim through `sh`: a `.curlrc` in `CURL_HOME` connects `localhost:8080` to that
//!   port (curl's `connect-to`) and prints each answer's status on stderr (`write-out`),
//!   which the test checks is 2xx.
//! - The working directory is a temporary directory (the default `data_dir` is `./data`).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tsfile::Value;

use crate::harness::read_all;

/// The commands of the `sh` code blocks of the README's "## Quick start" section, one entry
/// per block, continuation lines joined.
fn quick_start_blocks(readme: &str) -> Vec<Vec<String>> {
    let start = readme
        .find("\n## Quick start\n")
        .expect("README.md has a \"## Quick start\" section");
    let section = &readme[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut blocks = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```sh" {
            continue;
        }
        let mut commands = Vec::new();
        let mut current = String::new();
        for line in lines.by_ref() {
            if line.trim() == "```" {
                break;
            }
            match line.strip_suffix('\\') {
                Some(head) => current.push_str(head),
                None => {
                    current.push_str(line);
                    if !current.trim().is_empty() {
                        commands.push(current.trim().to_string());
                    }
                    current.clear();
                }
            }
        }
        blocks.push(commands);
    }
    blocks
}

/// `cargo run -p tsfiled` runs the `tsfiled` binary: the package names it `default-run`.
fn assert_cargo_run_picks_tsfiled(root: &Path) {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pkg = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "tsfiled")
        .expect("package tsfiled");
    let bins: Vec<&str> = pkg["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["kind"].as_array().unwrap().iter().any(|k| k == "bin"))
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(bins.contains(&"tsfiled"), "{bins:?}");
    if bins.len() > 1 {
        assert_eq!(
            pkg["default_run"], "tsfiled",
            "package tsfiled has binaries {bins:?}: `cargo run -p tsfiled` needs default-run"
        );
    }
}

/// Starts the daemon in `dir` and returns it with its bound port.
fn start_daemon(dir: &Path, args: &[&str]) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .args(args)
        .args(["--http-listen", "127.0.0.1:0"])
        .current_dir(dir)
        .env("TSFILED_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the daemon");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Some(i) = line.find("HTTP listening on http://127.0.0.1:") {
                let port: String = line[i + 35..]
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                if let Some(tx) = tx.take() {
                    let _ = tx.send(port);
                }
            }
        }
    });
    let port = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the daemon did not start")
        .parse()
        .expect("port");
    (child, port)
}

#[test]
fn readme_quick_start_runs_as_written() {
    let root = tsfiled_tests::workspace_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = quick_start_blocks(&readme);
    assert_eq!(blocks.len(), 2, "{blocks:#?}");
    // Block 1: start the daemon.
    assert_eq!(blocks[0].len(), 1, "{blocks:#?}");
    let args = blocks[0][0]
        .strip_prefix("cargo run --release -p tsfiled -- ")
        .unwrap_or_else(|| panic!("unexpected first command {:?}", blocks[0][0]));
    let args: Vec<&str> = args.split_whitespace().collect();
    assert_cargo_run_picks_tsfiled(&root);
    let tmp = tempfile::tempdir().unwrap();
    let (mut daemon, port) = start_daemon(tmp.path(), &args);
    std::fs::write(
        tmp.path().join(".curlrc"),
        format!(
            "connect-to = \"localhost:8080:127.0.0.1:{port}\"\nwrite-out = \"%{{stderr}}quick-start-status %{{http_code}}\\n\"\n"
        ),
    )
    .unwrap();

    // Block 2: the pushes and the metrics query, verbatim.
    assert!(!blocks[1].is_empty());
    let mut last_stdout = String::new();
    for cmd in &blocks[1] {
        assert!(cmd.starts_with("curl "), "not a curl command: {cmd}");
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(tmp.path())
            .env("CURL_HOME", tmp.path())
            .output()
            .expect("sh (and curl) must be installed");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{cmd}: {:?}\n{stderr}", out.status);
        let codes: Vec<&str> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("quick-start-status "))
            .collect();
        assert_eq!(codes.len(), 1, "{cmd}: {stderr}");
        assert!(codes[0].starts_with('2'), "{cmd}: HTTP {}", codes[0]);
        last_stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    // The metrics query shows the four points pushed above (two IoTDB JSON, two line
    // protocol fields).
    assert!(
        last_stdout
            .lines()
            .any(|l| l == r#"tsfiled_points_received_total{pipeline="default",source="http"} 4"#),
        "{last_stdout}"
    );

    // Ctrl-C seals the open files.
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(daemon.id() as i32, libc::SIGINT);
    }
    let start = Instant::now();
    let status = loop {
        if let Some(s) = daemon.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no exit after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    let data = tmp.path().join("data");
    let (points, files) = read_all(&data);
    let got: Vec<(String, String, i64, Vec<Value>)> = points
        .into_iter()
        .map(|((d, m, t), v)| (d, m, t, v))
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        got,
        vec![
            (
                s("root.demo.d1"),
                s("ok"),
                1700000000000,
                vec![Value::Boolean(true)]
            ),
            (
                s("root.demo.d1"),
                s("temp"),
                1700000000000,
                vec![Value::Double(21.5)]
            ),
            (
                s("root.lp.cpu.gw1"),
                s("procs"),
                1700000000001,
                vec![Value::Int64(7)]
            ),
            (
                s("root.lp.cpu.gw1"),
                s("usage"),
                1700000000001,
                vec![Value::Double(12.5)]
            ),
        ]
    );
    // `data/sequence/<storage group>/0/<createMillis>-<version>-0.tsfile`, with `.resource`.
    let mut groups = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(tmp.path()).unwrap().to_str().unwrap();
        let parts: Vec<&str> = rel.split('/').collect();
        assert_eq!(parts.len(), 5, "{rel}");
        assert_eq!(
            (parts[0], parts[1], parts[3]),
            ("data", "sequence", "0"),
            "{rel}"
        );
        let name = parts[4].strip_suffix("-0.tsfile").expect(rel);
        let (millis, version) = name.split_once('-').expect(rel);
        assert!(
            millis.parse::<u64>().is_ok() && version.parse::<u64>().is_ok(),
            "{rel}"
        );
        assert!(Path::new(&format!("{}.resource", f.display())).exists());
        groups.push(parts[2]);
    }
    groups.sort_unstable();
    assert_eq!(groups, ["root.demo", "root.lp"]);
}
