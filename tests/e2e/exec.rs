//! The `exec` source in the daemon: a shell script's line-protocol output ends in sealed files,
//! the status API shows the source running, its metrics carry pipeline and source labels, and
//! the program is stopped with the daemon. The `_v4` twin of the
//! first test runs with `storage.format_version = 4`.

use std::path::Path;

use tsfile::Value;

use crate::harness::*;

fn config(data: &Path, script: &Path, fmt: Fmt) -> String {
    format!(
        r#"
data_dir = "{}"
shutdown_timeout = "20s"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
{}
[[pipeline.source]]
type = "exec"
name = "probe"
command = ["sh", "{}"]
path_prefix = "root.exec"
precision = "ms"
"#,
        data.display(),
        fmt.storage_lines(),
        script.display()
    )
}

#[test]
fn exec_source_output_is_sealed_and_the_program_stopped_with_the_daemon() {
    exec_source_output_is_sealed_and_the_program_stopped_with_the_daemon_in(Fmt::V2);
}

#[test]
fn exec_source_output_is_sealed_and_the_program_stopped_with_the_daemon_v4() {
    exec_source_output_is_sealed_and_the_program_stopped_with_the_daemon_in(Fmt::V4);
}

fn exec_source_output_is_sealed_and_the_program_stopped_with_the_daemon_in(fmt: Fmt) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let pidfile = tmp.path().join("pid");
    let script = tmp.path().join("probe.sh");
    // 100 points, then stays up (as a long-running reader would) until it is stopped.
    std::fs::write(
        &script,
        format!(
            "echo $$ > '{}'\ni=0\nwhile [ $i -lt 100 ]; do echo \"temp,room=r1 value=$i 1700000000$(printf %03d $i)\"; i=$((i+1)); done\nexec sleep 600\n",
            pidfile.display()
        ),
    )
    .unwrap();
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(&file, config(&data, &script, fmt)).unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    let received = "tsfiled_points_received_total{pipeline=\"main\",source=\"probe\"}";
    until("100 points received", 60, || {
        metric(&get(d.addr, "/metrics").body, received) == Some(100.0)
    });
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(
            &m,
            "tsfiled_exec_running{pipeline=\"main\",source=\"probe\"}"
        ),
        Some(1.0),
        "{m}"
    );
    let status = get(d.addr, "/api/status").json();
    let sources = &status["pipelines"][0]["sources"];
    assert_eq!(
        sources,
        &serde_json::json!([{"name": "probe", "type": "exec", "state": "running"}])
    );
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    assert!(Path::new("/proc").join(pid.trim()).exists());
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    assert!(
        !Path::new("/proc").join(pid.trim()).exists(),
        "the program outlived the daemon"
    );
    let (points, _) = read_all_in(&data, fmt);
    for i in 0..100i64 {
        let t = 1_700_000_000_000 + i;
        let got = points.get(&("root.exec.temp.r1".to_string(), "value".to_string(), t));
        assert_eq!(got, Some(&vec![Value::Double(i as f64)]), "value at {t}");
    }
    assert_eq!(points.len(), 100);
}

/// A script that records its pid in `pidfile`, writes `value=<v>` once and stays up.
fn write_script(path: &Path, pidfile: &Path, v: i64) {
    std::fs::write(
        path,
        format!(
            "echo $$ > '{}'\necho \"temp,room=r1 value={v}i 1700000000{v:03}\"\nexec sleep 600\n",
            pidfile.display()
        ),
    )
    .unwrap();
}

#[test]
fn sighup_restarts_an_exec_source_whose_settings_changed_and_stops_a_removed_one() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (pid_a, pid_b) = (tmp.path().join("a.pid"), tmp.path().join("b.pid"));
    let (script_a, script_b) = (tmp.path().join("a.sh"), tmp.path().join("b.sh"));
    write_script(&script_a, &pid_a, 1);
    write_script(&script_b, &pid_b, 2);
    let source = |name: &str, script: &Path, extra: &str| {
        format!(
            "[[pipeline.source]]\ntype = \"exec\"\nname = \"{name}\"\ncommand = [\"sh\", \"{}\"]\nprecision = \"ms\"\n{extra}\n",
            script.display()
        )
    };
    let head = format!(
        "data_dir = \"{}\"\nshutdown_timeout = \"20s\"\n[http]\nlisten = \"127.0.0.1:0\"\n[[pipeline]]\nname = \"main\"\n",
        data.display()
    );
    let file = tmp.path().join("tsfiled.toml");
    std::fs::write(
        &file,
        format!(
            "{head}{}{}",
            source("a", &script_a, ""),
            source("b", &script_b, "")
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    let received = |name: &str| {
        metric(
            &get(d.addr, "/metrics").body,
            &format!("tsfiled_points_received_total{{pipeline=\"main\",source=\"{name}\"}}"),
        )
    };
    until("both programs' points", 60, || {
        received("a") == Some(1.0) && received("b") == Some(1.0)
    });
    let first_a = std::fs::read_to_string(&pid_a).unwrap();
    let first_b = std::fs::read_to_string(&pid_b).unwrap();
    // `a` gets a new setting (its stop timeout), `b` is removed.
    std::fs::write(
        &file,
        format!("{head}{}", source("a", &script_a, "stop_timeout = \"3s\"")),
    )
    .unwrap();
    d.signal(libc::SIGHUP);
    until("a restarted with a new program", 60, || {
        std::fs::read_to_string(&pid_a).is_ok_and(|p| p != first_a) && received("a") == Some(2.0)
    });
    let alive = |pid: &str| Path::new("/proc").join(pid.trim()).exists();
    until("the old programs stopped", 60, || {
        !alive(&first_a) && !alive(&first_b)
    });
    let m = get(d.addr, "/metrics").body;
    assert_eq!(
        metric(&m, "tsfiled_exec_running{pipeline=\"main\",source=\"b\"}"),
        None,
        "the removed source's gauge is gone:\n{m}"
    );
    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
}
