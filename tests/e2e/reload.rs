//! SIGHUP reloads MQTT and CSV sources: a source whose settings changed is stopped and
//! started again with the new ones, an added source starts, a removed one stops (and its
//! gauges go), and an unchanged one keeps running untouched. The `_v4` twin runs with
//! `storage.format_version = 4`.

use std::path::Path;
use std::time::Duration;

use tsfile::Value;

use crate::harness::*;
use crate::mqtt::{publish, Broker};

struct Layout<'a> {
    data: &'a Path,
    port: u16,
    fmt: Fmt,
}

/// `csv`: (source name, watched dir); `mqtt`: (source name, client id, filter).
fn config(l: &Layout, csv: &[(&str, &Path)], mqtt: &[(&str, &str, &str)]) -> String {
    let mut s = format!(
        r#"
data_dir = "{}"
shutdown_timeout = "20s"

[http]
listen = "127.0.0.1:0"

[[pipeline]]
name = "main"

[pipeline.storage]
storage_group_level = 1
{}"#,
        l.data.display(),
        l.fmt.storage_lines()
    );
    for (name, dir) in csv {
        s.push_str(&format!(
            r#"
[[pipeline.source]]
type = "csv"
name = "{name}"
directories = ["{}"]
settle = "100ms"
rescan_interval = "1s"
"#,
            dir.display()
        ));
    }
    for (name, client, filter) in mqtt {
        s.push_str(&format!(
            r#"
[[pipeline.source]]
type = "mqtt"
name = "{name}"
url = "mqtt://127.0.0.1:{}"
client_id = "{client}"

[[pipeline.source.topic]]
filter = "{filter}"
qos = 1
payload = "iotdb-json"
"#,
            l.port
        ));
    }
    s
}

fn connected(d: &DaemonProc, source: &str) -> Option<f64> {
    metric(
        &get(d.addr, "/metrics").body,
        &format!("tsfiled_mqtt_connected{{pipeline=\"main\",source=\"{source}\"}}"),
    )
}

fn received(d: &DaemonProc, source: &str) -> f64 {
    metric(
        &get(d.addr, "/metrics").body,
        &format!("tsfiled_points_received_total{{pipeline=\"main\",source=\"{source}\"}}"),
    )
    .unwrap_or(0.0)
}

fn json(device: &str, t: i64, v: i64) -> String {
    format!(r#"{{"device":"{device}","timestamp":{t},"measurements":["v"],"values":[{v}]}}"#)
}

fn drop_csv(dir: &Path, name: &str, device: &str, t: i64) {
    let part = dir.join(format!("{name}.part"));
    std::fs::write(&part, format!("Time,{device}.v\n{t},{t}\n")).unwrap();
    std::fs::rename(&part, dir.join(name)).unwrap();
}

fn log_count(d: &DaemonProc, needle: &str) -> usize {
    d.log.lock().unwrap().matches(needle).count()
}

#[test]
fn sighup_restarts_changed_sources_and_leaves_the_others_alone() {
    sighup_restarts_changed_sources_and_leaves_the_others_alone_in(Fmt::V2);
}

#[test]
fn sighup_restarts_changed_sources_and_leaves_the_others_alone_v4() {
    sighup_restarts_changed_sources_and_leaves_the_others_alone_in(Fmt::V4);
}

fn sighup_restarts_changed_sources_and_leaves_the_others_alone_in(fmt: Fmt) {
    let broker = Broker::start();
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (a, b, c) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    for d in [&a, &b, &c] {
        std::fs::create_dir_all(d).unwrap();
    }
    let l = Layout {
        data: &data,
        port: broker.port,
        fmt,
    };
    let file = tmp.path().join("tsfiled.toml");
    let steady = ("steady", "reload-steady", "steady/#");
    std::fs::write(
        &file,
        config(
            &l,
            &[("drop", &a)],
            &[steady, ("moving", "reload-moving", "old/#")],
        ),
    )
    .unwrap();
    let d = DaemonProc::start_with(&["run", "--config", file.to_str().unwrap()]);
    until("both MQTT sources connect", 30, || {
        connected(&d, "steady") == Some(1.0) && connected(&d, "moving") == Some(1.0)
    });
    publish(broker.port, "old/x", &[json("root.r.old", 1, 1)]);
    publish(broker.port, "steady/x", &[json("root.r.steady", 1, 1)]);
    drop_csv(&a, "a1.csv", "root.r.csv_a", 1);
    until("first points arrive", 30, || {
        received(&d, "moving") == 1.0
            && received(&d, "steady") == 1.0
            && a.join("done/a1.csv").exists()
    });

    // Reload: `drop` watches b instead of a, `moving` subscribes new/# instead of old/#,
    // `extra` (watching c) is added, `steady` is unchanged.
    std::fs::write(
        &file,
        config(
            &l,
            &[("drop", &b), ("extra", &c)],
            &[steady, ("moving", "reload-moving", "new/#")],
        ),
    )
    .unwrap();
    d.signal(libc::SIGHUP);
    until("the reload completes", 30, || {
        log_count(&d, "configuration reloaded") == 1
    });
    assert_eq!(
        log_count(&d, "source=main/steady url="),
        1,
        "steady restarted"
    );
    assert_eq!(log_count(&d, "source=main/moving url="), 2);
    assert_eq!(log_count(&d, "source=main/extra dirs="), 1);
    until("moving reconnects", 30, || {
        connected(&d, "moving") == Some(1.0)
    });
    drop_csv(&b, "b1.csv", "root.r.csv_b", 2);
    drop_csv(&c, "c1.csv", "root.r.csv_c", 3);
    drop_csv(&a, "a2.csv", "root.r.csv_a", 4);
    publish(broker.port, "new/x", &[json("root.r.new", 2, 2)]);
    publish(broker.port, "steady/x", &[json("root.r.steady", 2, 2)]);
    until("points of the new settings arrive", 30, || {
        received(&d, "moving") == 2.0
            && received(&d, "steady") == 2.0
            && b.join("done/b1.csv").exists()
            && c.join("done/c1.csv").exists()
    });
    // old/x was published before new/x: had it been delivered, it would have come first.
    let m = get(d.addr, "/metrics").body;
    let moving = "{pipeline=\"main\",source=\"moving\"}";
    assert_eq!(
        metric(&m, &format!("tsfiled_mqtt_messages_total{moving}")),
        Some(2.0),
        "{m}"
    );
    // a is no longer watched: its new file stays (rescans of b and c ran meanwhile).
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(a.join("a2.csv").exists() && !a.join("done/a2.csv").exists());

    // Reload: `extra` and `moving` removed; their gauges go.
    std::fs::write(&file, config(&l, &[("drop", &b)], &[steady])).unwrap();
    d.signal(libc::SIGHUP);
    until("the second reload completes", 30, || {
        log_count(&d, "configuration reloaded") == 2
    });
    assert_eq!(connected(&d, "moving"), None);
    assert_eq!(connected(&d, "steady"), Some(1.0));
    let status = get(d.addr, "/api/status").json();
    let names: Vec<String> = status["pipelines"][0]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names.contains(&"steady".to_string()) && names.contains(&"drop".to_string()),
        "{status}"
    );
    assert!(
        !names.contains(&"moving".to_string()) && !names.contains(&"extra".to_string()),
        "{status}"
    );

    let (code, log) = d.stop();
    assert_eq!(code, 0, "{log}");
    let (points, _) = read_all_in(&data, fmt);
    let got: Vec<(String, i64)> = points
        .iter()
        .map(|((dev, _, t), v)| {
            assert_eq!(v, &vec![Value::Int64(*t)]);
            (dev.clone(), *t)
        })
        .collect();
    assert_eq!(
        got,
        [
            ("root.r.csv_a".to_string(), 1),
            ("root.r.csv_b".to_string(), 2),
            ("root.r.csv_c".to_string(), 3),
            ("root.r.new".to_string(), 2),
            ("root.r.old".to_string(), 1),
            ("root.r.steady".to_string(), 1),
            ("root.r.steady".to_string(), 2),
        ]
    );
}
