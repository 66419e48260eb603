//! Every subcommand that writes to standard output ends quietly when that output is a pipe
//! whose reader has gone (`tsfiled dump FILE | head`): exit status 0 or death by SIGPIPE, as
//! any Unix filter, never an error message or a panic.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `tsfiled-e2e <args>` with standard output a pipe whose read end is already closed,
/// so the first write meets a closed pipe whatever the timing; returns (status, stderr).
fn run_into_closed_pipe(args: &[&std::ffi::OsStr]) -> (std::process::ExitStatus, String) {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .args(args)
        .env("TSFILED_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("spawn tsfiled");
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn assert_quiet(what: &str, args: &[&std::ffi::OsStr]) {
    let (status, stderr) = run_into_closed_pipe(args);
    assert!(
        status.success() || status.signal() == Some(libc::SIGPIPE),
        "{what}: exit {status:?}, stderr: {stderr}"
    );
    assert_eq!(stderr, "", "{what} printed on a closed pipe");
}

#[test]
fn tools_exit_quietly_when_stdout_is_a_closed_pipe() {
    let fixtures = tsfiled_tests::workspace_root().join("format/tests/fixtures");
    let golden = fixtures.join("index_150dev_150meas_deg10.tsfile");
    let tmp = tempfile::tempdir().unwrap();
    // A data directory with a sealed file and its .resource, made by `import` (whose summary
    // line on standard output meets the closed pipe after the files are written).
    let csv = tmp.path().join("a.csv");
    std::fs::write(&csv, "Time,root.sg.d1.s1\n1000,1\n2000,2\n").unwrap();
    let data = tmp.path().join("data");
    let os = |s: &str| std::ffi::OsStr::new(s).to_owned();
    assert_quiet(
        "import",
        &[
            &os("import"),
            csv.as_os_str(),
            &os("--to"),
            data.as_os_str(),
        ],
    );
    let sealed: Vec<_> = walk(&data)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tsfile"))
        .collect();
    assert_eq!(sealed.len(), 1, "import wrote {sealed:?}");
    let config = tmp.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "data_dir = {:?}\n[http]\nlisten = \"127.0.0.1:0\"\n[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"http\"\n",
            data.to_str().unwrap()
        ),
    )
    .unwrap();
    let cases: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        ("dump", vec!["dump".as_ref(), golden.as_os_str()]),
        ("sketch", vec!["sketch".as_ref(), golden.as_os_str()]),
        ("resource", vec!["resource".as_ref(), data.as_os_str()]),
        ("overview", vec!["overview".as_ref(), data.as_os_str()]),
        (
            "check-config",
            vec!["check-config".as_ref(), config.as_os_str()],
        ),
        ("version", vec!["version".as_ref()]),
        ("--help", vec!["--help".as_ref()]),
    ];
    for (what, args) in cases {
        assert_quiet(what, &args);
    }
    // And the common case as a shell runs it: `dump FILE | head -n 1` prints one line.
    let out = Command::new("sh")
        .arg("-c")
        .arg("\"$0\" dump \"$1\" | head -n 1")
        .arg(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .arg(&golden)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
