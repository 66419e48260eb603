//! Parsing (stage one: TOML → [`RawConfig`]) and validation (stage two: [`RawConfig`] →
//! [`Config`]), both reporting every problem they find with its key path, line and column.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml::Spanned;
use tsfiled_connectors::registry;
use tsfiled_connectors::source::SourceEnv;
use tsfiled_core::{
    choices_text, format_duration, same_path, ByteSize, Compression, DataType, Encoding,
    PathPattern, SpanIndex, TimePrecision, Validator as V, PRECISIONS,
};

use crate::error::{ConfigError, Diagnostic, Diagnostics, KeyPath};
use crate::model::*;
use crate::raw::*;

// ---------------------------------------------------------------------------------------------
// Stage one
// ---------------------------------------------------------------------------------------------

/// Rewrites serde's wording into the configuration's: keys, tables, arrays.
fn rewrite_serde_message(msg: &str) -> String {
    let mut m = msg
        .replace("unknown field", "unknown key")
        .replace("missing field", "missing required key")
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected a table");
    while let Some(i) = m.find("struct Raw") {
        let rest = &m[i + "struct Raw".len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        m = format!("{}a table{}", &m[..i], &rest[end..]);
    }
    m
}

/// Edit distance of two short strings (for "did you mean").
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `unknown field `x`, expected one of `a`, `b`` → `unknown key `x`; did you mean `a`?` when
/// one expected key is close, else the whole list.
fn suggest_key(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (key, list) = rest.split_once("`, expected ")?;
    let list = list.strip_prefix("one of ").unwrap_or(list);
    let best = list
        .split(", ")
        .flat_map(|s| s.split(" or "))
        .map(|s| s.trim().trim_matches('`'))
        .filter(|s| !s.is_empty())
        .map(|c| (edit_distance(key, c), c))
        .min()?;
    (best.0 <= (key.chars().count() / 3).max(1))
        .then(|| format!("unknown key `{key}`; did you mean `{}`?", best.1))
}

fn serde_diag(spans: &SpanIndex, e: &toml::de::Error) -> Diagnostic {
    let span = e.span().unwrap_or(0..0);
    let mut path = spans.path_at(&span);
    let msg = e.message();
    if let Some(rest) = msg.strip_prefix("missing field `") {
        if let Some(key) = rest.strip_suffix('`') {
            path = path.key(key);
        }
    }
    let text = suggest_key(msg).unwrap_or_else(|| rewrite_serde_message(msg));
    spans.at_span(path, &span, text)
}

fn take_array_of_tables<'i>(
    table: &mut DeTable<'i>,
    key: &str,
    at: &KeyPath,
    spans: &SpanIndex,
    diags: &mut Vec<Diagnostic>,
) -> Vec<Spanned<DeValue<'i>>> {
    let Some(value) = table.remove(key) else {
        return Vec::new();
    };
    let path = at.key(key);
    let span = value.span();
    match value.into_inner() {
        DeValue::Array(items) => {
            let mut out = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                if item.get_ref().is_table() {
                    out.push(item);
                } else {
                    diags.push(spans.at_value(
                        &path.index(i),
                        format!(
                            "expected a table, found {}; write [[{}]] sections",
                            item.get_ref().type_str(),
                            dotted(at, key)
                        ),
                    ));
                }
            }
            out
        }
        other => {
            diags.push(spans.at_span(
                path,
                &span,
                format!(
                    "expected an array of tables, found {}; write [[{}]] (double brackets)",
                    other.type_str(),
                    dotted(at, key)
                ),
            ));
            Vec::new()
        }
    }
}

/// `pipeline.source` for the `[[...]]` hint (indices dropped).
fn dotted(at: &KeyPath, key: &str) -> String {
    let mut s: Vec<String> = at
        .segments()
        .iter()
        .filter_map(|seg| match seg {
            crate::error::Segment::Key(k) => Some(k.clone()),
            crate::error::Segment::Index(_) => None,
        })
        .collect();
    s.push(key.to_string());
    s.join(".")
}

fn parse_source(
    value: Spanned<DeValue<'_>>,
    path: &KeyPath,
    spans: &SpanIndex,
    diags: &mut Vec<Diagnostic>,
) -> Option<RawSource> {
    let span = value.span();
    let DeValue::Table(mut table) = value.into_inner() else {
        return None;
    };
    let Some(kind) = table.remove("type") else {
        diags.push(spans.at_value(
            &path.key("type"),
            format!("missing required key `type` ({})", registry::type_names()),
        ));
        return None;
    };
    let kind_name = match kind.get_ref().as_str() {
        Some(s) => s.to_string(),
        None => {
            diags.push(spans.at_value(
                &path.key("type"),
                format!(
                    "expected a string ({}), found {}",
                    registry::type_names(),
                    kind.get_ref().type_str()
                ),
            ));
            return None;
        }
    };
    let de = ValueDeserializer::from(Spanned::new(span, DeValue::Table(table)));
    let Some(plugin) = registry::find(&kind_name) else {
        diags.push(spans.at_value(
            &path.key("type"),
            format!(
                "unknown source type \"{kind_name}\"; expected {}",
                registry::type_names()
            ),
        ));
        return None;
    };
    match plugin.deserialize(de) {
        Ok(s) => Some(RawSource(s)),
        Err(e) => {
            diags.push(serde_diag(spans, &e));
            None
        }
    }
}

/// Stage one: parses TOML text into the raw structures and the span index.
pub(crate) fn parse_raw(text: &str) -> Result<(RawConfig, SpanIndex), Vec<Diagnostic>> {
    let (root, parse_errors) = DeTable::parse_recoverable(text);
    let spans = SpanIndex::new(text, &root);
    let mut diags: Vec<Diagnostic> = parse_errors
        .iter()
        .map(|e| {
            let span = e.span().unwrap_or(0..0);
            let mut msg = e.message().to_string();
            let key = spans.snippet(&span);
            if msg == "duplicate key" && !key.is_empty() {
                msg = format!("duplicate key `{key}`");
            }
            spans.at_span(spans.path_at(&span), &span, msg)
        })
        .collect();
    if !diags.is_empty() {
        return Err(diags);
    }
    let root_span = root.span();
    let mut table = root.into_inner();
    let pipelines =
        take_array_of_tables(&mut table, "pipeline", &KeyPath::root(), &spans, &mut diags);
    let mut raw = match RawConfig::deserialize(toml::de::Deserializer::from(Spanned::new(
        root_span, table,
    ))) {
        Ok(r) => Some(r),
        Err(e) => {
            diags.push(serde_diag(&spans, &e));
            None
        }
    };
    let mut raw_pipelines = Vec::new();
    for (i, p) in pipelines.into_iter().enumerate() {
        let ppath = KeyPath::root().key("pipeline").index(i);
        let pspan = p.span();
        let DeValue::Table(mut ptable) = p.into_inner() else {
            continue;
        };
        let sources = take_array_of_tables(&mut ptable, "source", &ppath, &spans, &mut diags);
        let de = ValueDeserializer::from(Spanned::new(pspan, DeValue::Table(ptable)));
        let mut pipeline = match RawPipeline::deserialize(de) {
            Ok(p) => Some(p),
            Err(e) => {
                diags.push(serde_diag(&spans, &e));
                None
            }
        };
        for (j, s) in sources.into_iter().enumerate() {
            let spath = ppath.key("source").index(j);
            if let Some(src) = parse_source(s, &spath, &spans, &mut diags) {
                if let Some(p) = pipeline.as_mut() {
                    p.source.push(src);
                }
            }
        }
        if let Some(p) = pipeline {
            raw_pipelines.push(p);
        }
    }
    match raw.as_mut() {
        Some(r) if diags.is_empty() => {
            r.pipeline = raw_pipelines;
            Ok((raw.unwrap_or_default(), spans))
        }
        _ => {
            sort_diags(&mut diags);
            Err(diags)
        }
    }
}

fn sort_diags(d: &mut [Diagnostic]) {
    d.sort_by_key(|a| (a.line, a.column));
}

// ---------------------------------------------------------------------------------------------
// Stage two
// ---------------------------------------------------------------------------------------------

const LOG_LEVELS: &[&str] = &["trace", "debug", "info", "warn", "error", "off"];

fn check_log_level(s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err("empty log level".into());
    }
    for d in s.split(',') {
        let d = d.trim();
        if d.is_empty() {
            continue;
        }
        let (target, level) = match d.split_once('=') {
            Some((t, l)) => (Some(t), l),
            None => (None, d),
        };
        if !LOG_LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "\"{level}\" is not a log level; expected {} (or target=level directives such as \"info,tsfiled=debug\")",
                choices_text(LOG_LEVELS)
            ));
        }
        if let Some(t) = target {
            if t.is_empty()
                || !t
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '-' | '.'))
            {
                return Err(format!("\"{t}\" is not a log target such as \"tsfiled\""));
            }
        }
    }
    Ok(())
}

/// Validated pipeline with where its paths came from, for the cross-pipeline checks.
struct Built {
    pipeline: PipelineConfig,
    path: KeyPath,
}

/// Stage two: validates raw structures into a [`Config`].
pub(crate) fn validate(
    raw: &RawConfig,
    spans: &Arc<SpanIndex>,
    origin: &str,
) -> Result<Config, Diagnostics> {
    let mut v = V {
        spans,
        diags: Vec::new(),
    };
    let root = KeyPath::root();
    let data_dir = v.path_or(
        &raw.data_dir,
        &root.key("data_dir"),
        PathBuf::from("./data"),
    );
    let shutdown_timeout = v.positive_duration(
        &raw.shutdown_timeout,
        &root.key("shutdown_timeout"),
        Duration::from_secs(30),
    );

    // [http]
    let rh = raw.http.clone().unwrap_or_default();
    let hp = root.key("http");
    let listen = match &rh.listen {
        Some(s) => v.socket_addr(s, &hp.key("listen")),
        None => None,
    }
    .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080)));
    let mut tokens = Vec::new();
    for (i, t) in rh
        .tokens
        .clone()
        .unwrap_or_default()
        .into_iter()
        .enumerate()
    {
        if t.is_empty() || t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            v.err(
                &hp.key("tokens").index(i),
                "a token must be non-empty and contain no whitespace",
            );
        } else {
            tokens.push(t);
        }
    }
    let token_file = v
        .nonempty(&rh.token_file, &hp.key("token_file"))
        .map(PathBuf::from);
    let mut users: Vec<HttpUser> = Vec::new();
    for (i, u) in rh.user.iter().flatten().enumerate() {
        let up = hp.key("user").index(i);
        let name = v.required(&u.name, &up, "name").map(str::to_owned);
        if let Some(n) = &name {
            if let Err(e) = HttpUser::check_name(n) {
                v.err(&up.key("name"), e);
            } else if users.iter().any(|x| &x.name == n) {
                v.err(&up.key("name"), format!("user {n:?} is listed twice"));
            }
        }
        let password = match &u.password {
            None => {
                v.err(&up.key("password"), "missing required key `password`");
                None
            }
            Some(p) => match HttpUser::check_password(p) {
                Ok(()) => Some(p.clone()),
                Err(e) => {
                    v.err(&up.key("password"), e);
                    None
                }
            },
        };
        if let (Some(name), Some(password)) = (name, password) {
            if HttpUser::check_name(&name).is_ok() && !users.iter().any(|x| x.name == name) {
                users.push(HttpUser { name, password });
            }
        }
    }
    let user_file = v
        .nonempty(&rh.user_file, &hp.key("user_file"))
        .map(PathBuf::from);
    let max_body_size = v.size_min(
        &rh.max_body_size,
        &hp.key("max_body_size"),
        ByteSize::mib(16),
        ByteSize(1),
    );
    let max_decompressed_size = v.size(
        &rh.max_decompressed_size,
        &hp.key("max_decompressed_size"),
        ByteSize::mib(64).max(max_body_size),
    );
    if max_decompressed_size < max_body_size {
        v.err(
            &hp.key("max_decompressed_size"),
            format!(
                "{max_decompressed_size} is less than max_body_size ({max_body_size}); a decompressed body is never smaller than the limit on the raw body"
            ),
        );
    }
    let request_timeout = v.positive_duration(
        &rh.request_timeout,
        &hp.key("request_timeout"),
        Duration::from_secs(30),
    );
    let http = HttpConfig {
        listen,
        tokens,
        token_file,
        users,
        user_file,
        max_body_size,
        max_decompressed_size,
        request_timeout,
    };

    // [metrics]
    let rm = raw.metrics.clone().unwrap_or_default();
    let mp = root.key("metrics");
    let metrics_path = rm.path.clone().unwrap_or_else(|| "/metrics".to_string());
    if !metrics_path.starts_with('/')
        || metrics_path.len() < 2
        || metrics_path
            .chars()
            .any(|c| c.is_whitespace() || c == '?' || c == '#')
    {
        v.err(
            &mp.key("path"),
            format!("\"{metrics_path}\" is not a URL path such as \"/metrics\""),
        );
    }
    let metrics_listen = match &rm.listen {
        Some(s) => v.socket_addr(s, &mp.key("listen")),
        None => None,
    };
    if let Some(a) = metrics_listen {
        if a == http.listen && a.port() != 0 {
            v.err(
                &mp.key("listen"),
                format!("{a} is also http.listen; leave metrics.listen unset to serve metrics on the HTTP listener"),
            );
        }
    }
    let metrics = MetricsConfig {
        enabled: rm.enabled.unwrap_or(true),
        path: metrics_path,
        listen: metrics_listen,
    };

    // [log]
    let rl = raw.log.clone().unwrap_or_default();
    let lp = root.key("log");
    let level = rl.level.clone().unwrap_or_else(|| "info".to_string());
    if let Err(e) = check_log_level(&level) {
        v.err(&lp.key("level"), e);
    }
    let log = LogConfig {
        level,
        format: v.choice(
            &rl.format,
            &lp.key("format"),
            LogFormat::Text,
            &[("text", LogFormat::Text), ("json", LogFormat::Json)],
        ),
        color: v.choice(
            &rl.color,
            &lp.key("color"),
            ColorMode::Auto,
            &[
                ("auto", ColorMode::Auto),
                ("never", ColorMode::Never),
                ("always", ColorMode::Always),
            ],
        ),
    };

    // [[pipeline]]
    if raw.pipeline.is_empty() {
        v.err(
            &root,
            "no [[pipeline]]: at least one pipeline with a source is required",
        );
    }
    let mut names: HashMap<&str, KeyPath> = HashMap::new();
    for (i, rp) in raw.pipeline.iter().enumerate() {
        let pp = root.key("pipeline").index(i);
        if let Some(n) = rp.name.as_deref() {
            if let Some(first) = names.get(n) {
                v.err(
                    &pp.key("name"),
                    format!("pipeline name \"{n}\" is already used by {first}"),
                );
            } else {
                names.insert(n, pp);
            }
        }
    }
    let mut built: Vec<Built> = Vec::new();
    for (i, rp) in raw.pipeline.iter().enumerate() {
        let pp = root.key("pipeline").index(i);
        if let Some(p) = validate_pipeline(&mut v, rp, &pp, &data_dir, &http) {
            built.push(Built {
                pipeline: p,
                path: pp,
            });
        }
    }

    // Cross-pipeline checks.
    let mut dirs: Vec<(PathBuf, KeyPath, &'static str)> = Vec::new();
    let mut routes: HashMap<String, KeyPath> = HashMap::new();
    for b in &built {
        let p = &b.pipeline;
        let sp = b.path.key("storage");
        for (dir, key, what) in [
            (&p.storage.data_dir, "data_dir", "data directory"),
            (&p.storage.wal_dir, "wal_dir", "WAL directory"),
        ] {
            if let Some((_, other, other_what)) = dirs.iter().find(|(d, _, _)| same_path(d, dir)) {
                let shown = if v.written(&sp.key(key)) {
                    sp.key(key)
                } else {
                    b.path.clone()
                };
                v.err(
                    &shown,
                    format!(
                        "{what} {} is also the {other_what} of {other}; give each pipeline its own storage.data_dir",
                        dir.display()
                    ),
                );
            } else {
                dirs.push((dir.clone(), sp.key(key), what));
            }
        }
        for (j, s) in p.sources.iter().enumerate() {
            if let Some(h) = s.settings.http_push() {
                let srcp = b.path.key("source").index(j);
                for r in h.routes() {
                    if let Some(other) = routes.get(&r) {
                        let at = if v.written(&srcp.key("base_path")) {
                            srcp.key("base_path")
                        } else {
                            srcp.clone()
                        };
                        v.err(
                            &at,
                            format!("{r} is already served by {other}; set a different base_path"),
                        );
                    } else {
                        routes.insert(r, srcp.clone());
                    }
                }
            }
        }
    }
    if metrics.enabled && metrics.listen.is_none() {
        let mut reserved: Vec<String> = ["/", "/health", "/ready"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        reserved.extend(routes.keys().cloned());
        if reserved.contains(&metrics.path) {
            v.err(
                &mp.key("path"),
                format!("{} is already a route of the HTTP listener", metrics.path),
            );
        }
    }

    if !v.diags.is_empty() {
        let mut items = v.diags;
        sort_diags(&mut items);
        items.dedup();
        return Err(Diagnostics {
            origin: origin.to_string(),
            items,
        });
    }
    Ok(Config {
        data_dir,
        shutdown_timeout,
        http,
        metrics,
        log,
        pipelines: built.into_iter().map(|b| b.pipeline).collect(),
        provenance: Provenance {
            origin: origin.to_string(),
            raw: raw.clone(),
            spans: Arc::clone(spans),
        },
    })
}

fn validate_pipeline(
    v: &mut V<'_>,
    rp: &RawPipeline,
    pp: &KeyPath,
    top_data_dir: &Path,
    http: &HttpConfig,
) -> Option<PipelineConfig> {
    let before = v.diags.len();
    let name = v.required(&rp.name, pp, "name").map(str::to_string);
    if let Some(n) = &name {
        v.name(n, &pp.key("name"));
    }
    let storage = validate_storage(
        v,
        &rp.storage.clone().unwrap_or_default(),
        &pp.key("storage"),
        top_data_dir,
        http,
    );
    let defaults = validate_schema_defaults(
        v,
        &rp.schema_defaults.clone().unwrap_or_default(),
        &pp.key("schema_defaults"),
    );
    let mut rules: Vec<SchemaRule> = Vec::new();
    for (i, r) in rp.schema.clone().unwrap_or_default().iter().enumerate() {
        let rpath = pp.key("schema").index(i);
        if let Some(rule) = validate_rule(v, r, &rpath, &defaults) {
            if let Some(j) = rules.iter().position(|x| x.pattern == rule.pattern) {
                v.err(
                    &rpath.key("pattern"),
                    format!(
                        "same pattern as {}; only the first rule can match",
                        pp.key("schema").index(j)
                    ),
                );
            }
            rules.push(rule);
        }
    }
    if rp.source.is_empty() {
        v.err(
            &pp.key("source"),
            "no [[pipeline.source]]: a pipeline needs at least one source",
        );
    }
    let mut sources: Vec<SourceConfig> = Vec::new();
    for (j, s) in rp.source.iter().enumerate() {
        let sp = pp.key("source").index(j);
        if let Some(src) = validate_source(v, s, &sp, &storage) {
            if sources.iter().any(|x| x.name == src.name) {
                let at = if v.written(&sp.key("name")) {
                    sp.key("name")
                } else {
                    sp.clone()
                };
                v.err(
                    &at,
                    format!(
                        "source name \"{}\" is already used in this pipeline; give each source a unique `name`",
                        src.name
                    ),
                );
            }
            sources.push(src);
        }
    }
    if v.diags.len() != before {
        return None;
    }
    Some(PipelineConfig {
        name: name?,
        storage,
        schema: SchemaConfig { rules, defaults },
        sources,
    })
}

fn validate_storage(
    v: &mut V<'_>,
    rs: &RawStorage,
    sp: &KeyPath,
    top_data_dir: &Path,
    http: &HttpConfig,
) -> StorageConfig {
    let data_dir = v.path_or(
        &rs.data_dir,
        &sp.key("data_dir"),
        top_data_dir.to_path_buf(),
    );
    let storage_group_level = v.int(
        &rs.storage_group_level,
        &sp.key("storage_group_level"),
        1,
        1,
        64,
    ) as u32;
    let time_precision = v.choice(
        &rs.time_precision,
        &sp.key("time_precision"),
        TimePrecision::Ms,
        PRECISIONS,
    );
    let memtable_budget = v.size_min(
        &rs.memtable_budget,
        &sp.key("memtable_budget"),
        ByteSize::mib(64),
        ByteSize::kib(4),
    );
    let chunk_group_size = v.size_min(
        &rs.chunk_group_size,
        &sp.key("chunk_group_size"),
        ByteSize::mib(16).min(memtable_budget),
        ByteSize::kib(1),
    );
    if chunk_group_size > memtable_budget {
        v.err(
            &sp.key("chunk_group_size"),
            format!("{chunk_group_size} is more than memtable_budget ({memtable_budget})"),
        );
    }
    let seal_size = v.size_min(
        &rs.seal_size,
        &sp.key("seal_size"),
        ByteSize::mib(256),
        ByteSize::kib(1),
    );
    let seal_age =
        v.positive_duration(&rs.seal_age, &sp.key("seal_age"), Duration::from_secs(3600));
    let seal_idle = v.positive_duration(
        &rs.seal_idle,
        &sp.key("seal_idle"),
        Duration::from_secs(600),
    );
    let partitioning = rs.time_partitioning.unwrap_or(false);
    let interval_path = sp.key("time_partition_interval");
    let mut interval = v.positive_duration(
        &rs.time_partition_interval,
        &interval_path,
        Duration::from_secs(7 * 86400),
    );
    if time_precision.units_of(interval).is_none() {
        v.err(
            &interval_path,
            format!(
                "{} is not a whole number of {} (time_precision)",
                format_duration(interval),
                time_precision.as_str()
            ),
        );
        interval = Duration::from_secs(7 * 86400);
    }
    let wal_dir = v.path_or(&rs.wal_dir, &sp.key("wal_dir"), data_dir.join("wal"));
    let wal_commit_interval = v.duration(
        &rs.wal_commit_interval,
        &sp.key("wal_commit_interval"),
        Duration::from_millis(10),
    );
    if wal_commit_interval >= http.request_timeout {
        v.err(
            &sp.key("wal_commit_interval"),
            format!(
                "{} is not less than http.request_timeout ({}); pushes would time out before their points are durable",
                format_duration(wal_commit_interval),
                format_duration(http.request_timeout)
            ),
        );
    }
    let wal_commit_size = v.size_min(
        &rs.wal_commit_size,
        &sp.key("wal_commit_size"),
        ByteSize::mib(1),
        ByteSize(1),
    );
    let wal_max_size = v.size(
        &rs.wal_max_size,
        &sp.key("wal_max_size"),
        ByteSize(ByteSize::GIB.max(memtable_budget.0.saturating_mul(2))),
    );
    if wal_max_size < memtable_budget {
        v.err(
            &sp.key("wal_max_size"),
            format!(
                "{wal_max_size} is less than memtable_budget ({memtable_budget}); the WAL holds every point not yet sealed, so intake would stop before memory fills"
            ),
        );
    } else if wal_max_size < wal_commit_size {
        v.err(
            &sp.key("wal_max_size"),
            format!("{wal_max_size} is less than wal_commit_size ({wal_commit_size})"),
        );
    }
    let page_size = v.size_min(
        &rs.page_size,
        &sp.key("page_size"),
        ByteSize::kib(64),
        ByteSize(1),
    );
    if page_size.0 > i32::MAX as u64 {
        v.err(
            &sp.key("page_size"),
            format!("{page_size} is more than TsFile's limit (2GiB - 1)"),
        );
    }
    let max_points_per_page = v.int(
        &rs.max_points_per_page,
        &sp.key("max_points_per_page"),
        1024 * 1024,
        1,
        i64::from(i32::MAX),
    ) as u32;
    let max_index_degree = v.int(
        &rs.max_index_degree,
        &sp.key("max_index_degree"),
        1024,
        2,
        i64::from(i32::MAX),
    ) as u32;
    let bloom_filter_error_rate = match rs.bloom_filter_error_rate {
        None => 0.05,
        Some(r) if (0.01..=0.1).contains(&r) => r,
        Some(r) => {
            v.err(
                &sp.key("bloom_filter_error_rate"),
                format!("{r} is out of range; TsFile 0.10 accepts 0.01 to 0.1"),
            );
            0.05
        }
    };
    StorageConfig {
        data_dir,
        storage_group_level,
        time_precision,
        memtable_budget,
        chunk_group_size,
        seal_size,
        seal_age,
        seal_idle,
        time_partition: partitioning.then_some(interval),
        time_partition_interval: interval,
        wal_dir,
        wal_commit_interval,
        wal_commit_size,
        wal_max_size,
        page_size,
        max_points_per_page,
        max_index_degree,
        bloom_filter_error_rate,
    }
}

fn validate_schema_defaults(v: &mut V<'_>, rd: &RawSchemaDefaults, dp: &KeyPath) -> SchemaDefaults {
    let enc = |v: &mut V<'_>, val: &Option<String>, key: &str, t: DataType, d: Encoding| {
        let Some(s) = val else { return d };
        let path = dp.key(key);
        match v.encoding(s, &path) {
            Some(e) if v.check_encoding(t, e, &path) => e,
            _ => d,
        }
    };
    let boolean = enc(v, &rd.boolean, "boolean", DataType::Boolean, Encoding::Rle);
    let int32 = enc(v, &rd.int32, "int32", DataType::Int32, Encoding::Ts2Diff);
    let int64 = enc(v, &rd.int64, "int64", DataType::Int64, Encoding::Ts2Diff);
    let float = enc(v, &rd.float, "float", DataType::Float, Encoding::Gorilla);
    let double = enc(v, &rd.double, "double", DataType::Double, Encoding::Gorilla);
    let text = enc(v, &rd.text, "text", DataType::Text, Encoding::Plain);
    let compression = v.compression(&rd.compression, &dp.key("compression"), Compression::Snappy);
    let pick =
        |v: &mut V<'_>, val: &Option<String>, key: &str, allowed: &[DataType], d: DataType| {
            let Some(s) = val else { return d };
            let path = dp.key(key);
            match v.data_type(s, &path) {
                Some(t) if allowed.contains(&t) => t,
                Some(t) => {
                    let names: Vec<&str> = allowed.iter().map(|t| t.as_str()).collect();
                    v.err(
                        &path,
                        format!("{t} cannot hold numbers; expected {}", choices_text(&names)),
                    );
                    d
                }
                None => d,
            }
        };
    use DataType as T;
    let integer_type = pick(
        v,
        &rd.integer_type,
        "integer_type",
        &[T::Int64, T::Int32, T::Double, T::Float],
        T::Int64,
    );
    let float_type = pick(
        v,
        &rd.float_type,
        "float_type",
        &[T::Double, T::Float],
        T::Double,
    );
    SchemaDefaults {
        boolean,
        int32,
        int64,
        float,
        double,
        text,
        compression,
        integer_type,
        float_type,
    }
}

fn validate_rule(
    v: &mut V<'_>,
    r: &RawSchemaRule,
    rp: &KeyPath,
    defaults: &SchemaDefaults,
) -> Option<SchemaRule> {
    let pattern = v.required(&r.pattern, rp, "pattern").and_then(|p| {
        PathPattern::parse(p)
            .map_err(|e| v.err(&rp.key("pattern"), e))
            .ok()
    });
    let data_type = v
        .required(&r.data_type, rp, "type")
        .and_then(|t| v.data_type(t, &rp.key("type")));
    let compression = v.compression(&r.compression, &rp.key("compression"), defaults.compression);
    let encoding = match (&r.encoding, data_type) {
        (Some(s), Some(t)) => {
            let path = rp.key("encoding");
            v.encoding(s, &path)
                .filter(|e| v.check_encoding(t, *e, &path))
        }
        (Some(s), None) => v.encoding(s, &rp.key("encoding")),
        (None, Some(t)) => Some(defaults.encoding_for(t)),
        (None, None) => None,
    };
    Some(SchemaRule {
        pattern: pattern?,
        data_type: data_type?,
        encoding: encoding?,
        compression,
    })
}

fn validate_source(
    v: &mut V<'_>,
    s: &RawSource,
    sp: &KeyPath,
    storage: &StorageConfig,
) -> Option<SourceConfig> {
    let name = s.0.name().unwrap_or(s.0.type_name()).to_string();
    let name_ok = v.name(&name, &sp.key("name"));
    let env = SourceEnv {
        name: &name,
        data_dir: &storage.data_dir,
    };
    let settings = s.0.validate(v, sp, &env)?;
    name_ok.then_some(SourceConfig { name, settings })
}

// ---------------------------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------------------------

impl Config {
    /// Parses and validates TOML text. `origin` names it in diagnostics (a file path, or
    /// `<embedded default>`).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Config, ConfigError> {
        let (raw, spans) = parse_raw(text).map_err(|items| {
            ConfigError::Invalid(Diagnostics {
                origin: origin.to_string(),
                items,
            })
        })?;
        validate(&raw, &Arc::new(spans), origin).map_err(ConfigError::Invalid)
    }

    /// Reads, parses and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Config::from_toml_str(&text, &path.display().to_string())
    }

    /// The embedded default configuration ([`crate::DEFAULT_CONFIG`]).
    pub fn embedded_default() -> Result<Config, ConfigError> {
        Config::from_toml_str(crate::DEFAULT_CONFIG, "<embedded default>")
    }

    /// Where this configuration came from (as given to [`Config::from_toml_str`]).
    pub fn origin(&self) -> &str {
        &self.provenance.origin
    }

    /// This configuration with the top-level `data_dir` replaced (the `--data-dir` flag).
    /// Pipelines that do not set `storage.data_dir` follow it, and so do their defaulted WAL
    /// and dead-letter paths. Fails if two pipelines would then share a directory.
    pub fn with_data_dir(&self, dir: &Path) -> Result<Config, ConfigError> {
        let mut raw = self.provenance.raw.clone();
        raw.data_dir = Some(dir.to_string_lossy().into_owned());
        self.revalidate(raw, "--data-dir")
    }

    /// This configuration with `http.listen` replaced (the `--http-listen` flag; port 0 picks a
    /// free port).
    pub fn with_http_listen(&self, addr: SocketAddr) -> Result<Config, ConfigError> {
        let mut raw = self.provenance.raw.clone();
        raw.http.get_or_insert_with(Default::default).listen = Some(addr.to_string());
        self.revalidate(raw, "--http-listen")
    }

    fn revalidate(&self, raw: RawConfig, flag: &str) -> Result<Config, ConfigError> {
        let origin = format!("{} (with {flag})", self.provenance.origin);
        let mut c =
            validate(&raw, &self.provenance.spans, &origin).map_err(ConfigError::Invalid)?;
        c.provenance.origin = self.provenance.origin.clone();
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels() {
        assert!(check_log_level("info").is_ok());
        assert!(check_log_level("INFO").is_ok());
        assert!(check_log_level("warn,tsfiled=debug,tsfiled::wal=trace").is_ok());
        assert!(check_log_level("inf")
            .unwrap_err()
            .contains("not a log level"));
        assert!(check_log_level("tsfiled=loud").is_err());
        assert!(check_log_level("=debug").is_err());
        assert!(check_log_level("").is_err());
    }

    #[test]
    fn suggestions() {
        assert_eq!(edit_distance("seal_agee", "seal_age"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(
            suggest_key("unknown field `seal_agee`, expected one of `seal_age`, `seal_idle`")
                .as_deref(),
            Some("unknown key `seal_agee`; did you mean `seal_age`?")
        );
        assert_eq!(
            suggest_key("unknown field `qoss`, expected `qos` or `filter`").as_deref(),
            Some("unknown key `qoss`; did you mean `qos`?")
        );
        assert_eq!(
            suggest_key("unknown field `colour`, expected one of `data_dir`, `http`"),
            None
        );
        assert_eq!(suggest_key("missing field `x`"), None);
    }

    #[test]
    fn serde_wording() {
        assert_eq!(
            rewrite_serde_message("invalid type: integer `3`, expected struct RawHttp"),
            "invalid type: integer `3`, expected a table"
        );
        assert_eq!(
            rewrite_serde_message("unknown field `x`, expected `a`"),
            "unknown key `x`, expected `a`"
        );
    }
}
