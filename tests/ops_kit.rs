//! Checks of the operations kit under `ops/`: every metric the Prometheus rules and the
//! Grafana dashboard name is one the daemon exports (read from the sources, so the kit cannot
//! drift), `promtool` accepts and unit-tests the rules, the dashboard is well formed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root.
fn root() -> PathBuf {
    tsfiled_tests::workspace_root()
}

fn read(rel: &str) -> String {
    let p = root().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

// ---------------------------------------------------------------------------------------
// Metric names exported by the sources.

/// Kind of an exported metric, as far as the kit cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Exported under its own name.
    Plain,
    /// A histogram: exported as `_bucket`, `_sum` and `_count`.
    Histogram,
}

/// Metric names in Rust source text: every string literal `"tsfiled_…"` that is a whole metric
/// name. A literal passed to a constructor whose path mentions "hist" (`hist(`,
/// `HistogramOpts::new(`, `register_histogram_vec!(`) is a histogram.
fn metric_names_in_source(text: &str) -> BTreeMap<String, Kind> {
    let b = text.as_bytes();
    let mut out = BTreeMap::new();
    let mut from = 0;
    while let Some(pos) = text[from..].find("\"tsfiled_") {
        let start = from + pos + 1;
        let mut end = start;
        while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] == b':')
        {
            end += 1;
        }
        from = end;
        if b.get(end) != Some(&b'"') || end == start + "tsfiled_".len() {
            continue; // not a whole name, e.g. "tsfiled_x{pipeline=…" in a test assertion
        }
        // The call this literal is the first argument of.
        let mut j = start - 1;
        while j > 0 && b[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        let mut kind = Kind::Plain;
        if j > 0 && b[j - 1] == b'(' {
            let mut k = j - 1;
            while k > 0 && (b[k - 1].is_ascii_alphanumeric() || b"_:!".contains(&b[k - 1])) {
                k -= 1;
            }
            if text[k..j - 1].to_ascii_lowercase().contains("hist") {
                kind = Kind::Histogram;
            }
        }
        out.insert(text[start..end].to_string(), kind);
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every metric the daemon and the connectors export, from their sources.
fn exported_metrics() -> BTreeMap<String, Kind> {
    let mut files = Vec::new();
    for dir in ["daemon/src", "connectors/src"] {
        rust_files(&root().join(dir), &mut files);
    }
    let mut out = BTreeMap::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("source file");
        out.extend(metric_names_in_source(&text));
    }
    out
}

/// Names the kit may use before the daemon exports them (`ops/pending-metrics.txt`): one per
/// line, `histogram NAME` for histograms, `#` comments.
fn pending_metrics() -> BTreeMap<String, Kind> {
    read("ops/pending-metrics.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.strip_prefix("histogram ") {
            Some(n) => (n.trim().to_string(), Kind::Histogram),
            None => (l.to_string(), Kind::Plain),
        })
        .collect()
}

/// Series Prometheus adds itself.
const BUILTIN: &[&str] = &["up"];

/// Whether `name` is a series of one of `known`.
fn is_known(name: &str, known: &BTreeMap<String, Kind>) -> bool {
    if BUILTIN.contains(&name) || known.get(name) == Some(&Kind::Plain) {
        return true;
    }
    ["_bucket", "_sum", "_count"].iter().any(|suffix| {
        name.strip_suffix(suffix)
            .is_some_and(|base| known.get(base) == Some(&Kind::Histogram))
    })
}

// ---------------------------------------------------------------------------------------
// PromQL and the kit's files.

/// Metric names in a PromQL expression: identifiers outside strings, label matchers,
/// ranges, grouping lists and Grafana variables that are neither functions nor keywords.
fn promql_metric_names(expr: &str) -> Result<Vec<String>, String> {
    const LISTS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    const KEYWORDS: &[&str] = &[
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "group_left",
        "group_right",
        "inf",
        "nan",
        "atan2",
        // Aggregation operators, which may be followed by `by (…)` before their argument.
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
    ];
    let b = expr.as_bytes();
    let mut names = Vec::new();
    let mut i = 0;
    // Skips from an opening delimiter at `i` past its closing one, over strings.
    let skip_group = |mut i: usize, open: u8, close: u8| -> Result<usize, String> {
        let start = i;
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'"' | b'\'' | b'`' => i = skip_string(b, i)?,
                c if c == open => {
                    depth += 1;
                    i += 1;
                }
                c if c == close => {
                    depth -= 1;
                    i += 1;
                    if depth == 0 {
                        return Ok(i);
                    }
                }
                _ => i += 1,
            }
        }
        Err(format!(
            "unclosed {:?} at offset {start} in {expr:?}",
            open as char
        ))
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' | b'`' => i = skip_string(b, i)?,
            b'{' => i = skip_group(i, b'{', b'}')?,
            b'[' => i = skip_group(i, b'[', b']')?,
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'$' => {
                i += 1;
                if b.get(i) == Some(&b'{') {
                    i = skip_group(i, b'{', b'}')?;
                } else {
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                }
            }
            b'0'..=b'9' | b'.' => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_')
                {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b':' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':')
                {
                    i += 1;
                }
                let ident = &expr[start..i];
                let mut j = i;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                let paren = b.get(j) == Some(&b'(');
                if paren && LISTS.contains(&ident) {
                    i = skip_group(j, b'(', b')')?;
                } else if paren || KEYWORDS.contains(&ident.to_ascii_lowercase().as_str()) {
                    // A function call or an operator keyword.
                } else {
                    names.push(ident.to_string());
                }
            }
            _ => i += 1,
        }
    }
    Ok(names)
}

fn skip_string(b: &[u8], start: usize) -> Result<usize, String> {
    let quote = b[start];
    let mut i = start + 1;
    while i < b.len() {
        if b[i] == b'\\' && quote != b'`' {
            i += 2;
            continue;
        }
        if b[i] == quote {
            return Ok(i + 1);
        }
        i += 1;
    }
    Err(format!("unterminated string at offset {start}"))
}

/// The values of `key:` entries of a YAML file with their 1-based line numbers, for plain,
/// quoted and block (`|`, `>`) scalars.
fn yaml_values(text: &str, key: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let prefix = format!("{key}:");
    for (n, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start().trim_start_matches("- ");
        let Some(rest) = trimmed.strip_prefix(&prefix) else {
            continue;
        };
        // The key's column: block lines are indented further.
        let indent = line.len() - trimmed.len();
        let value = rest.trim();
        let text = if value.starts_with('|') || value.starts_with('>') {
            lines[n + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join("\n")
        } else if let Some(v) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            v.replace("''", "'")
        } else if let Some(v) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            v.replace("\\\"", "\"")
        } else {
            value.to_string()
        };
        out.push((n + 1, text));
    }
    out
}

/// Every PromQL query of the dashboard with its JSON path: panel targets (rows' nested
/// panels too) and the templating variables (`label_values(SELECTOR, label)` yields
/// SELECTOR).
fn dashboard_queries(dash: &serde_json::Value) -> Vec<(String, String)> {
    fn panels(list: &serde_json::Value, path: &str, out: &mut Vec<(String, String)>) {
        for (i, p) in list.as_array().into_iter().flatten().enumerate() {
            let here = format!("{path}[{i}]");
            for (t, target) in p["targets"].as_array().into_iter().flatten().enumerate() {
                if let Some(e) = target["expr"].as_str() {
                    out.push((format!("{here}.targets[{t}].expr"), e.to_string()));
                }
            }
            panels(&p["panels"], &format!("{here}.panels"), out);
        }
    }
    let mut out = Vec::new();
    panels(&dash["panels"], "panels", &mut out);
    for (i, v) in dash["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if v["type"] != "query" {
            continue;
        }
        let q = v["query"]["query"]
            .as_str()
            .or(v["query"].as_str())
            .unwrap_or_default();
        let selector = q
            .strip_prefix("label_values(")
            .and_then(|r| r.rsplit_once(','))
            .map(|(sel, _)| sel.trim().to_string())
            .unwrap_or_else(|| q.to_string());
        out.push((format!("templating.list[{i}].query"), selector));
    }
    out
}

fn dashboard() -> serde_json::Value {
    serde_json::from_str(&read("ops/grafana/tsfiled-dashboard.json")).expect("dashboard JSON")
}

/// Every (where, PromQL) of the kit.
fn kit_queries() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (line, e) in yaml_values(&read("ops/prometheus/alerts.yml"), "expr") {
        out.push((format!("ops/prometheus/alerts.yml:{line}"), e));
    }
    for (line, s) in yaml_values(&read("ops/prometheus/alerts_test.yml"), "series") {
        out.push((format!("ops/prometheus/alerts_test.yml:{line}"), s));
    }
    for (path, e) in dashboard_queries(&dashboard()) {
        out.push((format!("ops/grafana/tsfiled-dashboard.json {path}"), e));
    }
    out
}

fn promtool(args: &[&str], dir: &Path) -> Output {
    Command::new("promtool")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run promtool ({e}); install it: apt-get install -y prometheus")
        })
}

fn assert_success(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------
// Tests.

#[test]
fn promql_scanner_finds_metric_names() {
    let cases: &[(&str, &[&str])] = &[
        (
            r#"sum by (le, pipeline) (rate(tsfiled_x_bucket{a="b{c}]", d!~'e\'f'}[5m]))"#,
            &["tsfiled_x_bucket"],
        ),
        (
            "a / on (x) group_left (y) b offset 5m > bool 0.5 unless c",
            &["a", "b", "c"],
        ),
        (
            "histogram_quantile(0.99, sum(rate(m[5m])) by (le)) and ignoring(q) n @ 1609746000",
            &["m", "n"],
        ),
        (r#"up{job="tsfiled"} == 0"#, &["up"]),
        ("sum without (a) (x) / max by (b) (y)", &["x", "y"]),
        (
            "sum(rate(w{instance=~\"$instance\"}[$__rate_interval])) * 1e3 + ${x}",
            &["w"],
        ),
        ("# a comment naming no_metric\nrate(z[1h:5m]) > Inf", &["z"]),
        ("vector(1) + time()", &[]),
    ];
    for (expr, want) in cases {
        assert_eq!(&promql_metric_names(expr).unwrap(), want, "{expr}");
    }
    assert!(promql_metric_names("rate(x{a=\"b\"[5m])").is_err());
    assert!(promql_metric_names("x{a=\"b}").is_err());
}

#[test]
fn source_scanner_reads_metrics_rs_style_registrations() {
    let src = r#"
        let a = counter("tsfiled_points_received_total", "help", &["pipeline"]);
        ack_seconds: hist(
            "tsfiled_ack_latency_seconds",
            "help",
        ),
        HistogramOpts::new("tsfiled_other_seconds", "h");
        register_int_gauge_vec!("tsfiled_g", "h", &["p"]);
        assert!(text.contains("tsfiled_points_received_total{pipeline=\"p\"} 5"));
        // "tsfiled_" alone is not a name
    "#;
    let got = metric_names_in_source(src);
    let want: BTreeMap<String, Kind> = [
        ("tsfiled_points_received_total", Kind::Plain),
        ("tsfiled_ack_latency_seconds", Kind::Histogram),
        ("tsfiled_other_seconds", Kind::Histogram),
        ("tsfiled_g", Kind::Plain),
    ]
    .into_iter()
    .map(|(n, k)| (n.to_string(), k))
    .collect();
    assert_eq!(got, want);
    assert!(is_known("tsfiled_ack_latency_seconds_bucket", &got));
    assert!(is_known("tsfiled_ack_latency_seconds_count", &got));
    assert!(!is_known("tsfiled_ack_latency_seconds", &got));
    assert!(!is_known("tsfiled_points_received_total_count", &got));
    assert!(!is_known("tsfiled_point_received_total", &got));
}

#[test]
fn yaml_scanner_reads_plain_quoted_and_block_values() {
    let y = "groups:\n  - rules:\n      - expr: up == 0\n        for: 1m\n      - expr: |\n          a\n            / b\n        labels: {}\n      - expr: 'x{a=''b''}'\n  - expr: \"y\"\n";
    let got = yaml_values(y, "expr");
    assert_eq!(
        got,
        vec![
            (3, "up == 0".to_string()),
            (5, "a\n/ b".to_string()),
            (9, "x{a='b'}".to_string()),
            (10, "y".to_string()),
        ]
    );
}

#[test]
fn every_metric_the_kit_names_is_exported_or_pending() {
    let exported = exported_metrics();
    let pending = pending_metrics();
    let mut known = exported.clone();
    known.extend(pending.clone());

    let queries = kit_queries();
    assert!(queries.len() > 40, "only {} queries found", queries.len());
    let mut unknown = Vec::new();
    let mut used = BTreeSet::new();
    for (at, q) in &queries {
        let names = promql_metric_names(q).unwrap_or_else(|e| panic!("{at}: {e}"));
        assert!(!names.is_empty(), "{at}: no metric in {q:?}");
        for n in names {
            if !is_known(&n, &known) {
                unknown.push(format!("{at}: {n}"));
            }
            used.insert(n);
        }
    }
    assert!(
        unknown.is_empty(),
        "metrics neither exported (daemon/src, connectors/src) nor in ops/pending-metrics.txt:\n{}",
        unknown.join("\n")
    );

    // The pending list only holds what is not exported yet, and what the kit uses.
    let now_exported: Vec<&String> = pending
        .keys()
        .filter(|n| exported.contains_key(*n))
        .collect();
    assert!(
        now_exported.is_empty(),
        "now exported by the sources: delete from ops/pending-metrics.txt: {now_exported:?}"
    );
    let single = |n: &String, k: Kind| BTreeMap::from([(n.clone(), k)]);
    let unused: Vec<&String> = pending
        .iter()
        .filter(|(n, k)| !used.iter().any(|u| is_known(u, &single(n, **k))))
        .map(|(n, _)| n)
        .collect();
    assert!(
        unused.is_empty(),
        "in ops/pending-metrics.txt but used by no query: {unused:?}"
    );
}

#[test]
fn alert_rules_cover_the_conditions_and_each_is_unit_tested() {
    let rules = read("ops/prometheus/alerts.yml");
    let alerts: BTreeSet<String> = yaml_values(&rules, "alert")
        .into_iter()
        .map(|(_, a)| a)
        .collect();
    for required in [
        "TsfiledNoDataArriving",
        "TsfiledRejectsRising",
        "TsfiledWalNearFull",
        "TsfiledMemtableNearFull",
        "TsfiledMqttDisconnected",
        "TsfiledNoFileSealed",
        "TsfiledStorageDegraded",
    ] {
        assert!(alerts.contains(required), "alerts.yml lacks {required}");
    }
    let tested: BTreeSet<String> =
        yaml_values(&read("ops/prometheus/alerts_test.yml"), "alertname")
            .into_iter()
            .map(|(_, a)| a)
            .collect();
    let untested: Vec<&String> = alerts.difference(&tested).collect();
    // The rarer alerts are covered by reading; the rest must fire (or not) in a test.
    let read_only = ["TsfiledHttpServerErrors", "TsfiledMqttMessageErrors"];
    let untested: Vec<&&String> = untested
        .iter()
        .filter(|a| !read_only.contains(&a.as_str()))
        .collect();
    assert!(
        untested.is_empty(),
        "alerts without a promtool test: {untested:?}"
    );
}

#[test]
fn promtool_checks_the_scrape_config_and_rules() {
    let dir = root().join("ops/prometheus");
    let out = promtool(&["check", "config", "prometheus.yml"], &dir);
    assert_success("promtool check config", &out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("1 rule files found"));
    let out = promtool(&["check", "rules", "alerts.yml"], &dir);
    assert_success("promtool check rules", &out);
    let out = promtool(&["test", "rules", "alerts_test.yml"], &dir);
    assert_success("promtool test rules", &out);
}

#[test]
fn dashboard_queries_are_valid_promql() {
    let queries = dashboard_queries(&dashboard());
    let mut rules = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, (at, q)) in queries.iter().enumerate() {
        let q = q
            .replace("$__rate_interval", "5m")
            .replace("$__interval", "1m")
            .replace("$instance", ".*")
            .replace("$pipeline", ".*");
        assert!(!q.contains('$'), "{at}: unknown variable in {q}");
        let quoted = serde_json::to_string(&q).expect("JSON string");
        rules.push_str(&format!(
            "      - record: dashboard_query_{i}\n        expr: {quoted}\n"
        ));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("dashboard.yml"), rules).expect("write");
    let out = promtool(&["check", "rules", "dashboard.yml"], dir.path());
    assert_success("promtool check rules (dashboard queries)", &out);
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains(&format!("SUCCESS: {} rules found", queries.len())));
}

#[test]
fn dashboard_is_well_formed_and_covers_the_topics() {
    let d = dashboard();
    assert_eq!(d["uid"], "tsfiled-gateway");
    let panels = d["panels"].as_array().expect("panels");
    let mut ids = BTreeSet::new();
    let mut boxes: Vec<(String, i64, i64, i64, i64)> = Vec::new();
    for p in panels {
        let title = p["title"].as_str().expect("title").to_string();
        assert!(
            ids.insert(p["id"].as_i64().expect("id")),
            "duplicate id: {title}"
        );
        let g = &p["gridPos"];
        let (x, y, w, h) = (
            g["x"].as_i64().expect("x"),
            g["y"].as_i64().expect("y"),
            g["w"].as_i64().expect("w"),
            g["h"].as_i64().expect("h"),
        );
        assert!(x >= 0 && w > 0 && x + w <= 24 && h > 0, "{title}: {g}");
        for (other, ox, oy, ow, oh) in &boxes {
            let overlap = x < ox + ow && *ox < x + w && y < oy + oh && *oy < y + h;
            assert!(!overlap, "{title} overlaps {other}");
        }
        boxes.push((title.clone(), x, y, w, h));
        if p["type"] == "row" {
            continue;
        }
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        let targets = p["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no query");
        let mut refs = BTreeSet::new();
        for t in targets {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
            assert!(refs.insert(t["refId"].as_str().expect("refId")), "{title}");
        }
    }
    let all: Vec<String> = dashboard_queries(&d).into_iter().map(|(_, q)| q).collect();
    let has = |pred: &dyn Fn(&str) -> bool| all.iter().any(|q| pred(q));
    assert!(has(&|q| q.contains("rate(tsfiled_points_received_total")
        && q.contains("by (pipeline, source)")));
    assert!(has(
        &|q| q.contains("tsfiled_points_rejected_total") && q.contains("reason")
    ));
    assert!(has(&|q| q.contains("tsfiled_files_sealed_total")));
    assert!(has(&|q| q.contains("tsfiled_memtable_bytes")));
    assert!(has(&|q| q.contains("tsfiled_wal_bytes")));
    assert!(has(&|q| q.starts_with("histogram_quantile(0.99")
        && q.contains("tsfiled_ack_latency_seconds_bucket")));
    assert!(has(&|q| q.contains("tsfiled_mqtt_connected")));
    let state = panels
        .iter()
        .find(|p| p["type"] == "state-timeline")
        .expect("MQTT connection state panel");
    let mappings = state["fieldConfig"]["defaults"]["mappings"].to_string();
    assert!(mappings.contains("disconnected") && mappings.contains("connected"));
}

// ---------------------------------------------------------------------------------------
// Install script and systemd unit.

/// Runs `ops/install.sh ARGS` with `DESTDIR=destdir` (and `PREFIX` when given).
fn run_install(destdir: &Path, prefix: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("ops/install.sh"))
        .args(args)
        .env("DESTDIR", destdir)
        .env_remove("PREFIX");
    if let Some(p) = prefix {
        cmd.env("PREFIX", p);
    }
    cmd.output().expect("run bash ops/install.sh")
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
        & 0o7777
}

#[test]
fn install_script_stages_binary_unit_config_and_directories() {
    let stage = tempfile::tempdir().expect("tempdir");
    let d = stage.path();
    let bin = env!("CARGO_BIN_EXE_tsfiled-e2e");
    let out = run_install(d, None, &["--binary", bin]);
    assert_success("install.sh", &out);

    let installed = d.join("usr/bin/tsfiled");
    assert_eq!(
        std::fs::read(&installed).expect("installed binary"),
        std::fs::read(bin).expect("built binary")
    );
    assert_eq!(mode(&installed), 0o755);

    // The unit as committed: ExecStart already names /usr/bin/tsfiled.
    let unit = d.join("etc/systemd/system/tsfiled.service");
    assert_eq!(
        std::fs::read_to_string(&unit).expect("unit"),
        read("systemd/tsfiled.service")
    );
    assert_eq!(mode(&unit), 0o644);

    // The commented default, valid, with data in /var/lib/tsfiled.
    let config = d.join("etc/tsfiled/tsfiled.toml");
    let text = std::fs::read_to_string(&config).expect("config");
    assert!(text.contains("# Sealed TsFiles, the write-ahead log and state live here"));
    let parsed = tsfiled_config::Config::load(&config).expect("installed config is valid");
    assert_eq!(parsed.data_dir, Path::new("/var/lib/tsfiled"));
    let default_there = tsfiled_config::DEFAULT_CONFIG.replace(
        "\ndata_dir = \"./data\"\n",
        "\ndata_dir = \"/var/lib/tsfiled\"\n",
    );
    let expected = tsfiled_config::Config::from_toml_str(&default_there, "default")
        .expect("default with data_dir");
    assert_eq!(parsed, expected);
    assert_eq!(mode(&config), 0o640);
    assert_eq!(mode(&d.join("etc/tsfiled")), 0o750);

    assert_eq!(mode(&d.join("var/lib/tsfiled")), 0o750);
    let sysusers = std::fs::read_to_string(d.join("usr/lib/sysusers.d/tsfiled.conf"))
        .expect("sysusers.d entry");
    assert!(sysusers.contains("\nu tsfiled - \"tsfiled daemon\" /var/lib/tsfiled"));
    for f in [
        "usr/share/doc/tsfiled/configuration.md",
        "usr/share/doc/tsfiled/examples/mqtt.toml",
        "usr/share/tsfiled/prometheus/alerts.yml",
        "usr/share/tsfiled/prometheus/prometheus.yml",
        "usr/share/tsfiled/grafana/tsfiled-dashboard.json",
    ] {
        assert!(d.join(f).is_file(), "{f} not installed");
    }
    // Staging creates no user and touches no systemd.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("user and group"), "{stdout}");

    // A second run keeps the operator's configuration and puts the new default beside it.
    std::fs::write(&config, "# edited by the operator\n").expect("edit");
    let out = run_install(d, None, &["--binary", bin]);
    assert_success("install.sh (again)", &out);
    assert_eq!(
        std::fs::read_to_string(&config).expect("config"),
        "# edited by the operator\n"
    );
    tsfiled_config::Config::load(&d.join("etc/tsfiled/tsfiled.toml.dist"))
        .expect(".dist is the valid default");
}

#[test]
fn install_script_follows_prefix_and_refuses_bad_input() {
    let stage = tempfile::tempdir().expect("tempdir");
    let d = stage.path();
    let bin = env!("CARGO_BIN_EXE_tsfiled-e2e");
    let out = run_install(d, Some("/usr/local"), &["--binary", bin]);
    assert_success("install.sh with PREFIX=/usr/local", &out);
    assert!(d.join("usr/local/bin/tsfiled").is_file());
    let unit = std::fs::read_to_string(d.join("etc/systemd/system/tsfiled.service")).unwrap();
    let exec: Vec<&str> = unit
        .lines()
        .filter(|l| l.starts_with("ExecStart="))
        .collect();
    assert_eq!(
        exec,
        ["ExecStart=/usr/local/bin/tsfiled run --config /etc/tsfiled/tsfiled.toml --data-dir /var/lib/tsfiled"]
    );
    assert!(std::fs::read_to_string(d.join("etc/tsfiled/tsfiled.toml"))
        .unwrap()
        .contains("/usr/local/share/doc/tsfiled/configuration.md"));

    let missing = d.join("no-such-binary");
    let out = run_install(d, None, &["--binary", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not an executable file"));
    let out = run_install(d, None, &["--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    let out = run_install(d, Some("relative"), &["--binary", bin]);
    assert_eq!(out.status.code(), Some(2));
}

/// `systemd-analyze verify` on a copy of `unit_text` whose ExecStart names `exec`.
fn systemd_verify(unit_text: &str, exec: &str) -> Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let text: String = unit_text
        .lines()
        .map(|l| match l.strip_prefix("ExecStart=/usr/bin/tsfiled ") {
            Some(rest) => format!("ExecStart={exec} {rest}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    let path = dir.path().join("tsfiled.service");
    std::fs::write(&path, text).expect("write unit");
    Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run systemd-analyze ({e}); install it: apt-get install -y systemd")
        })
}

#[test]
fn systemd_analyze_verify_prints_nothing_for_the_unit() {
    let unit = read("systemd/tsfiled.service");
    assert!(unit.contains("\nExecStart=/usr/bin/tsfiled run "));
    let out = systemd_verify(&unit, env!("CARGO_BIN_EXE_tsfiled-e2e"));
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "systemd-analyze verify failed:\n{printed}"
    );
    assert!(
        printed.is_empty(),
        "systemd-analyze verify printed:\n{printed}"
    );

    // The check can fail: a misspelt directive and a missing binary are reported.
    let broken = unit.replace("WatchdogSec=", "WatchdogSecs=");
    let out = systemd_verify(&broken, "/nonexistent/tsfiled");
    let printed = String::from_utf8_lossy(&out.stderr);
    assert!(printed.contains("Unknown key 'WatchdogSecs'"), "{printed}");
    assert!(printed.contains("/nonexistent/tsfiled"), "{printed}");
}

#[test]
fn unit_has_the_service_contract() {
    let unit = read("systemd/tsfiled.service");
    let has = |line: &str| unit.lines().any(|l| l.trim() == line);
    for line in [
        "Type=notify",
        "NotifyAccess=main",
        "Restart=on-failure",
        "User=tsfiled",
        "StateDirectory=tsfiled",
        "ConfigurationDirectory=tsfiled",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=",
        "ReadWritePaths=/var/lib/tsfiled",
    ] {
        assert!(has(line), "unit lacks {line}");
    }
    let secs = |key: &str| -> u64 {
        let v = unit
            .lines()
            .find_map(|l| l.trim().strip_prefix(key))
            .unwrap_or_else(|| panic!("unit lacks {key}"));
        v.strip_suffix('s')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{key}{v}: expected seconds like 30s"))
    };
    assert!(secs("WatchdogSec=") > 0);
    assert!(unit.lines().any(|l| l.starts_with("LimitNOFILE=")));
    // The stop timeout leaves room after the daemon's own shutdown deadline.
    let deadline = tsfiled_config::Config::embedded_default()
        .expect("default")
        .shutdown_timeout
        .as_secs();
    assert!(
        secs("TimeoutStopSec=") > deadline,
        "TimeoutStopSec must exceed the shutdown deadline ({deadline}s)"
    );
}

// ---------------------------------------------------------------------------------------
// The status page in headless Chromium, against canned /metrics and /api/status.

#[path = "support/browser.rs"]
mod browser;

const STATUS_PAGE: &str = include_str!("../daemon/assets/status.html");
const T0_MS: u64 = 1_700_000_000_000;

/// `/metrics` at the `n`-th scrape: every counter is a multiple of `n`.
fn fake_metrics(n: u64) -> String {
    format!(
        r#"# HELP tsfiled_points_received_total Points received by sources, accepted or not.
# TYPE tsfiled_points_received_total counter
tsfiled_points_received_total{{pipeline="default",source="http"}} {http}
tsfiled_points_received_total{{pipeline="default",source="broker"}} {broker}
tsfiled_points_received_total{{pipeline="lab",source="plc"}} 777
# TYPE tsfiled_points_rejected_total counter
tsfiled_points_rejected_total{{pipeline="default",source="http",reason="type_mismatch"}} {tm}
tsfiled_points_rejected_total{{pipeline="default",source="http",reason="invalid_path"}} {ip}
# TYPE tsfiled_points_written_total counter
tsfiled_points_written_total{{pipeline="default"}} {written}
# TYPE tsfiled_files_sealed_total counter
tsfiled_files_sealed_total{{pipeline="default",reason="size"}} {n}
tsfiled_files_sealed_total{{pipeline="default",reason="age"}} 2
# TYPE tsfiled_open_files gauge
tsfiled_open_files{{pipeline="default"}} 3
tsfiled_open_files{{pipeline="lab"}} 0
# TYPE tsfiled_wal_bytes gauge
tsfiled_wal_bytes{{pipeline="default"}} 536870912
tsfiled_wal_max_bytes{{pipeline="default"}} 1073741824
# TYPE tsfiled_memtable_bytes gauge
tsfiled_memtable_bytes{{pipeline="default"}} 16777216
tsfiled_series{{pipeline="default"}} 42
tsfiled_mqtt_connected{{pipeline="default",source="broker"}} 1
tsfiled_mqtt_connected{{pipeline="lab",source="plc"}} 0
tsfiled_ack_latency_seconds_bucket{{pipeline="default",source="http",le="+Inf"}} {n}
tsfiled_build_info{{version="0.1.0"}} 1
"#,
        http = 1000 * n,
        broker = 500 * n,
        tm = 10 * n,
        ip = 5 * n,
        written = 1400 * n,
    )
}

/// As [`fake_metrics`], with the sources' rates varying from scrape to scrape.
fn wavy_metrics(n: u64) -> String {
    let per_scrape = |k: u64, base: f64, amp: f64, period: f64| {
        (2.0 * (base + amp * (k as f64 / period).sin())).max(0.0) as u64
    };
    let http: u64 = (1..=n).map(|k| per_scrape(k, 800.0, 300.0, 9.0)).sum();
    let broker: u64 = (1..=n).map(|k| per_scrape(k, 400.0, 250.0, 23.0)).sum();
    fake_metrics(n)
        .replace(
            &format!("source=\"http\"}} {}\n", 1000 * n),
            &format!("source=\"http\"}} {http}\n"),
        )
        .replace(
            &format!("source=\"broker\"}} {}\n", 500 * n),
            &format!("source=\"broker\"}} {broker}\n"),
        )
}

/// `/api/status` at the `n`-th request: the server clock advances 2 s per request.
fn fake_status(n: u64) -> String {
    serde_json::json!({
        "version": "0.1.0-test",
        "started_at_ms": T0_MS - 3_600_000,
        "time_ms": T0_MS + 2000 * n,
        "pipelines": [
            {
                "name": "default",
                "accepting": true,
                "wal": {"bytes": 1, "max_bytes": 2},
                "memtable": {"bytes": 1, "budget_bytes": 67108864},
                "sources": [
                    {"name": "http", "type": "http", "state": "listening"},
                    {"name": "broker", "type": "mqtt", "state": "connecting"}
                ],
                "open_files": [
                    {"path": "sequence/root.sg/0/1700000000000-7-0.tsfile", "storage_group": "root.sg",
                     "bytes": 1048576, "points": 9000, "created_ms": T0_MS},
                    {"path": "sequence/root.plant/0/1700000000001-8-0.tsfile", "storage_group": "root.plant",
                     "bytes": 2048, "points": 10, "created_ms": T0_MS}
                ],
                "recent_sealed": [
                    {"path": "sequence/root.sg/0/1699990000000-6-0.tsfile", "storage_group": "root.sg",
                     "bytes": 268435456, "points": 12000000, "sealed_ms": T0_MS - 60_000, "reason": "size"},
                    {"path": "unsequence/root.sg/0/1699980000000-5-0.tsfile", "storage_group": "root.sg",
                     "bytes": 4096, "points": 12, "sealed_ms": T0_MS - 120_000, "reason": "age"}
                ]
            },
            {
                "name": "lab",
                "accepting": false,
                "storage": {
                    "degraded": true,
                    "reason": "seal failing (I/O error: No space left on device (os error 28))",
                    "refusing": "storage degraded: no space left on the data device",
                    "faults": [{"op": "seal", "kind": "no_space", "message": "I/O error: No space left on device (os error 28)", "since_ms": T0_MS}]
                },
                "wal": {"bytes": 0, "max_bytes": 0},
                "sources": [{"name": "plc", "type": "mqtt", "state": "disconnected"}]
            }
        ]
    })
    .to_string()
}

fn status_page_server(metrics_at: fn(u64) -> String) -> browser::FakeServer {
    let html = |_n: u64| {
        (
            "text/html; charset=utf-8".to_string(),
            STATUS_PAGE.to_string(),
        )
    };
    let metrics = move |n: u64| ("text/plain; version=0.0.4".to_string(), metrics_at(n));
    let status = |n: u64| ("application/json".to_string(), fake_status(n));
    browser::FakeServer::start(vec![
        ("/", Box::new(html)),
        ("/metrics", Box::new(metrics)),
        ("/api/status", Box::new(status)),
    ])
}

#[test]
fn status_page_shows_the_figures_from_metrics_and_status() {
    use browser::{by_id, find_all, first_tag};
    let server = status_page_server(fake_metrics);
    let dom = browser::Chromium::find().dump_dom(&server.url("/"), 15_000);

    let body = first_tag(&dom, "body");
    assert_eq!(body.attr("data-state"), Some("ok"), "{body:?}");
    let polls: u64 = body.attr("data-polls").unwrap().parse().unwrap();
    assert!(polls >= 3, "only {polls} polls");
    assert!(server.count("/metrics") >= polls);

    // All figures come from one scrape, the n-th.
    let http = by_id(&dom, "fig-default-http-received");
    let n = http.value() as u64 / 1000;
    assert!(n >= 3, "{http:?}");
    assert_eq!(http.value(), (1000 * n) as f64);
    assert_eq!(http.text, format!("{}", fmt_thousands(1000 * n)));
    let fig = |id: &str| by_id(&dom, id).value();
    assert_eq!(fig("fig-default-broker-received"), (500 * n) as f64);
    assert_eq!(fig("fig-default-http-rejected"), (15 * n) as f64);
    assert_eq!(
        fig("fig-default-http-rejected-type_mismatch"),
        (10 * n) as f64
    );
    assert_eq!(
        fig("fig-default-http-rejected-invalid_path"),
        (5 * n) as f64
    );
    // No rejects counted yet for the broker: 0, not unknown.
    assert_eq!(fig("fig-default-broker-rejected"), 0.0);
    assert_eq!(fig("fig-lab-written"), 0.0);
    // A gauge without samples is unknown.
    assert_eq!(by_id(&dom, "fig-lab-series").attr("data-value"), Some(""));
    assert_eq!(by_id(&dom, "fig-lab-series").text, "–");
    assert_eq!(fig("fig-default-received"), (1500 * n) as f64);
    assert_eq!(fig("fig-default-rejected"), (15 * n) as f64);
    assert_eq!(fig("fig-default-written"), (1400 * n) as f64);
    assert_eq!(fig("fig-default-sealed"), (n + 2) as f64);
    assert_eq!(fig("fig-default-open_files"), 3.0);
    assert_eq!(fig("fig-default-series"), 42.0);
    assert_eq!(fig("fig-lab-plc-received"), 777.0);

    // Rates: counters grow 1000n and 500n per 2 s of server clock.
    assert_eq!(fig("fig-default-http-rate"), 500.0);
    assert_eq!(fig("fig-default-broker-rate"), 250.0);
    assert_eq!(fig("fig-default-rate"), 750.0);
    assert_eq!(fig("fig-lab-plc-rate"), 0.0);
    assert_eq!(by_id(&dom, "fig-default-http-rate").text, "500/s");

    // WAL from /metrics (it wins over the JSON), memtable budget from the JSON.
    let wal = by_id(&dom, "fig-default-wal_bytes");
    assert_eq!(wal.value(), 536870912.0);
    assert_eq!(wal.text, "512.0 MiB (50.0%)");
    assert_eq!(fig("fig-default-wal_max_bytes"), 1073741824.0);
    assert_eq!(fig("fig-default-wal_fill"), 0.5);
    assert_eq!(fig("fig-default-memtable_bytes"), 16777216.0);
    assert_eq!(fig("fig-default-memtable_max_bytes"), 67108864.0);
    assert_eq!(fig("fig-default-memtable_fill"), 0.25);
    assert_eq!(
        by_id(&dom, "fig-default-memtable_bytes").text,
        "16.0 MiB (25.0%)"
    );

    // Source states: as each source reports it (the JSON), whatever its metrics say (the
    // broker's tsfiled_mqtt_connected is 1 while it reports "connecting").
    let state = |id: &str| by_id(&dom, id).attr("data-value").unwrap().to_string();
    assert_eq!(state("fig-default-broker-state"), "connecting");
    assert_eq!(state("fig-lab-plc-state"), "disconnected");
    assert_eq!(state("fig-default-http-state"), "listening");
    assert_eq!(
        by_id(&dom, "fig-lab-accepting").attr("data-value"),
        Some("false")
    );
    assert_eq!(
        by_id(&dom, "fig-default-accepting").attr("data-value"),
        Some("true")
    );
    // Failing storage is named, and only where it fails.
    let storage = by_id(&dom, "fig-lab-storage");
    assert_eq!(storage.attr("data-value"), Some("refusing"));
    assert_eq!(
        storage.text,
        "Storage failing: seal failing (I/O error: No space left on device (os error 28)) \u{2014} intake refused until a retry succeeds"
    );
    assert!(find_all(&dom, "id", "fig-default-storage").is_empty());
    assert_eq!(by_id(&dom, "version").text, "0.1.0-test");
    // Uptime: 1 h before T0, plus 2 s of server clock per request.
    let uptime_min = ((3600 + 2 * n) as f64 / 60.0).round();
    assert_eq!(by_id(&dom, "uptime").text, format!("{uptime_min} min"));

    // Files.
    let open: Vec<String> = find_all(&dom, "data-file", "open")
        .into_iter()
        .map(|e| e.attr("data-path").unwrap().to_string())
        .collect();
    assert_eq!(
        open,
        [
            "sequence/root.sg/0/1700000000000-7-0.tsfile",
            "sequence/root.plant/0/1700000000001-8-0.tsfile"
        ]
    );
    let sealed = find_all(&dom, "data-file", "sealed");
    assert_eq!(sealed.len(), 2);
    assert_eq!(
        sealed[0].attr("data-path"),
        Some("sequence/root.sg/0/1699990000000-6-0.tsfile")
    );
    assert_eq!(sealed[0].attr("data-reason"), Some("size"));
    assert_eq!(sealed[0].attr("data-points"), Some("12000000"));
    assert_eq!(sealed[1].attr("data-reason"), Some("age"));
    assert_eq!(by_id(&dom, "fig-lab-sealed-files").text, "none");

    // The chart holds one sample per poll after the first, one line per source.
    let chart = by_id(&dom, "throughput-chart");
    let samples: u64 = chart.attr("data-samples").unwrap().parse().unwrap();
    assert_eq!(samples, polls - 1);
    assert_eq!(chart.attr("data-series"), Some("3"));
    assert_eq!(chart.attr("data-max"), Some("500"));
    let legend: Vec<String> = find_all(&dom, "data-series", "default/http")
        .into_iter()
        .map(|e| e.text)
        .collect();
    assert_eq!(legend, ["default/http"]);
}

fn fmt_thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn status_page_reports_a_failing_endpoint() {
    use browser::{by_id, first_tag};
    // Only the page and /metrics: /api/status answers 404, the page still shows /metrics.
    let html = |_n: u64| ("text/html".to_string(), STATUS_PAGE.to_string());
    let metrics = |n: u64| ("text/plain".to_string(), fake_metrics(n));
    let server = browser::FakeServer::start(vec![
        ("/", Box::new(html) as browser::Responder),
        ("/metrics", Box::new(metrics)),
    ]);
    let dom = browser::Chromium::find().dump_dom(&server.url("/"), 5_000);
    let body = first_tag(&dom, "body");
    assert_eq!(body.attr("data-state"), Some("error"));
    assert_eq!(by_id(&dom, "error").text, "api/status: HTTP 404");
    let n = by_id(&dom, "fig-default-http-received").value() as u64 / 1000;
    assert!(n >= 1);
    assert_eq!(
        by_id(&dom, "fig-default-received").value(),
        (1500 * n) as f64
    );
    assert_eq!(by_id(&dom, "version").text, "0.1.0");
    // Without the JSON there is no memtable budget, so no fill.
    assert_eq!(
        by_id(&dom, "fig-default-memtable_fill").attr("data-value"),
        Some("")
    );
}

#[test]
fn status_page_screenshot() {
    // Nine minutes of varying traffic, so that the chart has something to show.
    let server = status_page_server(wavy_metrics);
    let dir = tempfile::tempdir().expect("tempdir");
    let png = dir.path().join("status.png");
    browser::Chromium::find().screenshot(&server.url("/"), &png, 1280, 1100, 540_000);
    assert!(
        server.count("/metrics") > 200,
        "{}",
        server.count("/metrics")
    );
    let bytes = std::fs::read(&png).expect("screenshot");
    let img = decode_png(&bytes);
    assert_eq!((img.width, img.height), (1280, 1100));
    // The page is drawn: many colours (text is anti-aliased), the dark header bar across the
    // top (#1d2330), the page background (#f6f7f9), and each source's line in the chart in
    // its colour (the page's first three series colours #3b7ddd, #1f9d55, #d98a00; the
    // chart has three sources) across most of the chart's width, not only in the legend's
    // swatches.
    let distinct: std::collections::BTreeSet<[u8; 3]> = img.pixels.iter().copied().collect();
    assert!(distinct.len() > 100, "{} colours", distinct.len());
    let header = (0..img.width)
        .filter(|&x| img.at(x, 4) == [0x1d, 0x23, 0x30])
        .count();
    assert!(header > 1200, "header bar: {header} of 1280 pixels");
    let background = img
        .pixels
        .iter()
        .filter(|p| **p == [0xf6, 0xf7, 0xf9])
        .count();
    assert!(background > 10_000, "page background: {background} pixels");
    for (name, colour) in [
        ("series 1", [0x3b, 0x7d, 0xdd]),
        ("series 2", [0x1f, 0x9d, 0x55]),
        ("series 3", [0xd9, 0x8a, 0x00]),
    ] {
        let columns = (0..img.width)
            .filter(|&x| (0..img.height).any(|y| img.at(x, y) == colour))
            .count();
        eprintln!("{name}: {colour:02x?} in {columns} columns");
        assert!(
            columns > 600,
            "{name}'s line: {colour:02x?} in only {columns} columns"
        );
    }
    if let Some(out) = std::env::var_os("TSFILED_STATUS_SCREENSHOT") {
        std::fs::copy(&png, out).expect("copy screenshot");
    }
}

/// A decoded 8-bit RGB or RGBA PNG (alpha dropped).
struct Image {
    width: u32,
    height: u32,
    pixels: Vec<[u8; 3]>,
}

impl Image {
    fn at(&self, x: u32, y: u32) -> [u8; 3] {
        self.pixels[(y * self.width + x) as usize]
    }
}

/// Decodes a non-interlaced 8-bit truecolour PNG (what Chromium writes) following the PNG
/// specification: chunks, the zlib stream of the IDAT chunks (inflated by flate2), and the
/// five scanline filters.
fn decode_png(b: &[u8]) -> Image {
    use std::io::Read;
    assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let (mut pos, mut idat) = (8, Vec::new());
    let (mut width, mut height, mut channels) = (0u32, 0u32, 0usize);
    while pos + 8 <= b.len() {
        let len = u32::from_be_bytes(b[pos..pos + 4].try_into().unwrap()) as usize;
        let kind = &b[pos + 4..pos + 8];
        let data = &b[pos + 8..pos + 8 + len];
        match kind {
            b"IHDR" => {
                width = u32::from_be_bytes(data[0..4].try_into().unwrap());
                height = u32::from_be_bytes(data[4..8].try_into().unwrap());
                assert_eq!(data[8], 8, "bit depth");
                channels = match data[9] {
                    2 => 3,
                    6 => 4,
                    t => panic!("colour type {t}"),
                };
                assert_eq!(data[12], 0, "interlaced");
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len; // length, type, data, CRC
    }
    let mut raw = Vec::new();
    flate2::read::ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .expect("IDAT inflates");
    let stride = width as usize * channels;
    assert_eq!(raw.len(), height as usize * (stride + 1), "image data size");
    let mut prev = vec![0u8; stride];
    let mut pixels = Vec::with_capacity((width * height) as usize);
    for y in 0..height as usize {
        let filter = raw[y * (stride + 1)];
        let mut line = raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)].to_vec();
        for i in 0..stride {
            let a = if i >= channels { line[i - channels] } else { 0 };
            let (up, c) = (prev[i], if i >= channels { prev[i - channels] } else { 0 });
            let predictor = match filter {
                0 => 0,
                1 => a,
                2 => up,
                3 => ((a as u16 + up as u16) / 2) as u8,
                4 => {
                    let p = a as i16 + up as i16 - c as i16;
                    let (pa, pb, pc) = (
                        (p - a as i16).abs(),
                        (p - up as i16).abs(),
                        (p - c as i16).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        up
                    } else {
                        c
                    }
                }
                f => panic!("filter {f}"),
            };
            line[i] = line[i].wrapping_add(predictor);
        }
        pixels.extend(line.chunks(channels).map(|p| [p[0], p[1], p[2]]));
        prev = line;
    }
    Image {
        width,
        height,
        pixels,
    }
}
