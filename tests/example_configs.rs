//! Every example configuration in `config/examples/` passes `tsfiled check-config` — the
//! real command, with its filesystem and port checks. The examples name gateway paths
//! (`/var/lib/tsfiled`, `/srv/drop`, `/etc/tsfiled`, systemd credentials); the test maps
//! them into a temporary directory, creates the files they reference, and moves listeners
//! to a free loopback port.

use std::path::Path;
use std::process::Command;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn localize(text: &str, root: &Path) -> String {
    let r = root.display().to_string();
    let mut s = text
        .replace("/var/lib/tsfiled", &format!("{r}/var/lib/tsfiled"))
        .replace("/srv/drop", &format!("{r}/srv/drop"))
        .replace("/etc/tsfiled", &format!("{r}/etc/tsfiled"))
        .replace("/run/credentials", &format!("{r}/run/credentials"));
    s = s.replace("0.0.0.0:8086", &format!("127.0.0.1:{}", free_port()));
    s
}

#[test]
fn every_example_passes_check_config() {
    let examples = tsfiled_tests::workspace_root().join("config/examples");
    let mut names: Vec<_> = std::fs::read_dir(&examples)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 3,
        "expected the gateway examples, found {names:?}"
    );
    for path in names {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        for d in [
            "var/lib/tsfiled",
            "srv/drop/iotdb",
            "srv/drop/plc",
            "srv/drop/plc2",
            "srv/drop/done",
            "etc/tsfiled",
            "run/credentials/tsfiled.service",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        for f in [
            "etc/tsfiled/ca.pem",
            "etc/tsfiled/client.pem",
            "etc/tsfiled/client.key",
            "etc/tsfiled/tokens",
            "run/credentials/tsfiled.service/mqtt-password",
        ] {
            std::fs::write(root.join(f), "placeholder\n").unwrap();
        }
        let text = localize(&std::fs::read_to_string(&path).unwrap(), root);
        let file = root.join(path.file_name().unwrap());
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
            .arg("check-config")
            .arg(&file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: check-config failed:\n{}{}",
            path.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("[[pipeline]]"));
    }
}

#[test]
fn check_config_fails_on_an_unwritable_data_dir() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("c.toml");
    let blocker = tmp.path().join("not-a-dir");
    std::fs::write(&blocker, "file").unwrap();
    std::fs::write(
        &file,
        format!(
            "data_dir = \"{}/sub\"\n\n[http]\nlisten = \"127.0.0.1:{}\"\n\n[[pipeline]]\nname = \"p\"\n\n[[pipeline.source]]\ntype = \"http\"\nname = \"http\"\n",
            blocker.display(),
            free_port()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tsfiled-e2e"))
        .arg("check-config")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a data dir under a regular file cannot be created"
    );
}
