//! Parsing (stage one: TOML → [`RawConfig`]) and validation (stage two: [`RawConfig`] →
//! [`Config`]), both reporting every problem they find with its key path, line and column.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use toml::de::{DeTable, DeValue, ValueDeserializer};
use toml::Spanned;

use crate::error::{ConfigError, Diagnostic, Diagnostics, KeyPath};
use crate::locate::SpanIndex;
use crate::model::*;
use crate::path::check_prefix;
use crate::patterns::{
    check_strftime, check_timezone, check_topic_filter, Glob, Template, TopicLevel, TopicTemplate,
};
use crate::raw::*;
use crate::schema::{
    encoding_supported, encoding_supported_v4, encodings_for, encodings_for_v4, Compression,
    DataType, Encoding, PathPattern,
};
use crate::units::{format_duration, parse_duration, parse_size, ByteSize};

/// Source types, for messages.
const SOURCE_TYPES: &str = "\"http\", \"mqtt\" or \"csv\"";

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
            format!("missing required key `type` ({SOURCE_TYPES})"),
        ));
        return None;
    };
    let kind_name = match kind.get_ref().as_str() {
        Some(s) => s.to_string(),
        None => {
            diags.push(spans.at_value(
                &path.key("type"),
                format!(
                    "expected a string ({SOURCE_TYPES}), found {}",
                    kind.get_ref().type_str()
                ),
            ));
            return None;
        }
    };
    let de = ValueDeserializer::from(Spanned::new(span, DeValue::Table(table)));
    let result = match kind_name.as_str() {
        "http" => RawHttpSource::deserialize(de).map(RawSource::Http),
        "mqtt" => RawMqttSource::deserialize(de).map(RawSource::Mqtt),
        "csv" => RawCsvSource::deserialize(de).map(RawSource::Csv),
        other => {
            diags.push(spans.at_value(
                &path.key("type"),
                format!("unknown source type \"{other}\"; expected {SOURCE_TYPES}"),
            ));
            return None;
        }
    };
    match result {
        Ok(s) => Some(s),
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

/// Collects problems while turning raw values into typed ones; on a problem it returns a
/// default so that validation goes on and finds the rest.
struct V<'a> {
    spans: &'a SpanIndex,
    diags: Vec<Diagnostic>,
}

fn choices_text(choices: &[&str]) -> String {
    let quoted: Vec<String> = choices.iter().map(|c| format!("\"{c}\"")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

fn same_path(a: &Path, b: &Path) -> bool {
    let norm = |p: &Path| -> PathBuf {
        p.components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect()
    };
    norm(a) == norm(b)
}

impl V<'_> {
    fn err(&mut self, path: &KeyPath, msg: impl Into<String>) {
        self.diags.push(self.spans.at_value(path, msg.into()));
    }

    fn err_key(&mut self, path: &KeyPath, msg: impl Into<String>) {
        self.diags.push(self.spans.at_key(path, msg.into()));
    }

    fn written(&self, path: &KeyPath) -> bool {
        self.spans.contains(path)
    }

    fn size(&mut self, v: &Option<Human>, path: &KeyPath, default: ByteSize) -> ByteSize {
        match v {
            None => default,
            Some(Human::Int(n)) => match u64::try_from(*n) {
                Ok(b) => ByteSize(b),
                Err(_) => {
                    self.err(path, format!("negative size {n}"));
                    default
                }
            },
            Some(Human::Text(s)) => match parse_size(s) {
                Ok(b) => b,
                Err(e) => {
                    self.err(path, e.0);
                    default
                }
            },
        }
    }

    fn size_min(
        &mut self,
        v: &Option<Human>,
        path: &KeyPath,
        default: ByteSize,
        min: ByteSize,
    ) -> ByteSize {
        let s = self.size(v, path, default);
        if s < min {
            self.err(path, format!("{s} is too small; at least {min}"));
            return default;
        }
        s
    }

    fn duration(&mut self, v: &Option<Human>, path: &KeyPath, default: Duration) -> Duration {
        match v {
            None => default,
            Some(Human::Int(n)) => {
                self.err(
                    path,
                    format!("a duration needs a unit: write e.g. \"{n}s\" or \"{n}ms\""),
                );
                default
            }
            Some(Human::Text(s)) => match parse_duration(s) {
                Ok(d) => d,
                Err(e) => {
                    self.err(path, e.0);
                    default
                }
            },
        }
    }

    fn positive_duration(
        &mut self,
        v: &Option<Human>,
        path: &KeyPath,
        default: Duration,
    ) -> Duration {
        let d = self.duration(v, path, default);
        if d.is_zero() {
            self.err(path, "must be more than 0s");
            return default;
        }
        d
    }

    fn whole_seconds(
        &mut self,
        v: &Option<Human>,
        path: &KeyPath,
        default: Duration,
        min_s: u64,
        max_s: u64,
    ) -> Duration {
        let d = self.duration(v, path, default);
        if d.subsec_nanos() != 0 {
            self.err(
                path,
                format!("{} is not a whole number of seconds", format_duration(d)),
            );
            return default;
        }
        if d.as_secs() < min_s || d.as_secs() > max_s {
            self.err(
                path,
                format!(
                    "{} is out of range; expected {} to {}",
                    format_duration(d),
                    format_duration(Duration::from_secs(min_s)),
                    format_duration(Duration::from_secs(max_s))
                ),
            );
            return default;
        }
        d
    }

    fn choice<T: Copy>(
        &mut self,
        v: &Option<String>,
        path: &KeyPath,
        default: T,
        choices: &[(&str, T)],
    ) -> T {
        let Some(s) = v else { return default };
        match choices.iter().find(|(name, _)| name == s) {
            Some((_, t)) => *t,
            None => {
                let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
                self.err(
                    path,
                    format!("unknown value \"{s}\"; expected {}", choices_text(&names)),
                );
                default
            }
        }
    }

    fn int(&mut self, v: &Option<i64>, path: &KeyPath, default: i64, min: i64, max: i64) -> i64 {
        match v {
            None => default,
            Some(n) if *n >= min && *n <= max => *n,
            Some(n) => {
                self.err(
                    path,
                    format!("{n} is out of range; expected {min} to {max}"),
                );
                default
            }
        }
    }

    fn nonempty(&mut self, v: &Option<String>, path: &KeyPath) -> Option<String> {
        match v {
            Some(s) if s.trim().is_empty() => {
                self.err(path, "must not be empty");
                None
            }
            Some(s) => Some(s.clone()),
            None => None,
        }
    }

    fn required<'s>(
        &mut self,
        v: &'s Option<String>,
        parent: &KeyPath,
        key: &str,
    ) -> Option<&'s str> {
        match v {
            None => {
                self.err(&parent.key(key), format!("missing required key `{key}`"));
                None
            }
            Some(s) if s.trim().is_empty() => {
                self.err(&parent.key(key), "must not be empty");
                None
            }
            Some(s) => Some(s.as_str()),
        }
    }

    fn path_or(&mut self, v: &Option<String>, path: &KeyPath, default: PathBuf) -> PathBuf {
        self.nonempty(v, path).map_or(default, PathBuf::from)
    }

    fn socket_addr(&mut self, s: &str, path: &KeyPath) -> Option<SocketAddr> {
        match s.parse::<SocketAddr>() {
            Ok(a) => Some(a),
            Err(_) => {
                let hint = if s.starts_with("localhost") {
                    "; use 127.0.0.1 instead of localhost"
                } else if !s.contains(':') {
                    "; a port is required"
                } else {
                    ""
                };
                self.err(
                    path,
                    format!(
                        "\"{s}\" is not an IP address and port such as \"127.0.0.1:8080\", \"0.0.0.0:8080\" or \"[::]:8080\"{hint}"
                    ),
                );
                None
            }
        }
    }

    fn name(&mut self, s: &str, path: &KeyPath) -> bool {
        if s.is_empty()
            || !s
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            self.err(
                path,
                format!(
                    "name \"{s}\" may only use letters, digits, '_' and '-' (and not be empty)"
                ),
            );
            return false;
        }
        true
    }

    fn not_with(&mut self, set: bool, path: &KeyPath, why: &str) {
        if set {
            self.err_key(path, format!("not used {why}; remove it"));
        }
    }

    fn data_type(&mut self, s: &str, path: &KeyPath) -> Option<DataType> {
        let t = DataType::parse(s);
        if t.is_none() {
            self.err(
                path,
                format!(
                    "unknown data type \"{s}\"; expected one of {}",
                    DataType::choices()
                ),
            );
        }
        t
    }

    fn encoding(&mut self, s: &str, path: &KeyPath) -> Option<Encoding> {
        let e = Encoding::parse(s);
        if e.is_none() {
            self.err(
                path,
                format!(
                    "unknown encoding \"{s}\"; expected one of {}",
                    Encoding::choices()
                ),
            );
        }
        e
    }

    fn compression(
        &mut self,
        v: &Option<String>,
        path: &KeyPath,
        default: Compression,
    ) -> Compression {
        let Some(s) = v else { return default };
        match Compression::parse(s) {
            Some(c) => c,
            None => {
                self.err(
                    path,
                    format!(
                        "unknown compression \"{s}\"; expected {} (TsFile 0.10 as written by tsfiled)",
                        Compression::choices()
                    ),
                );
                default
            }
        }
    }

    fn check_encoding(&mut self, t: DataType, e: Encoding, path: &KeyPath) -> bool {
        if encoding_supported(t, e) {
            return true;
        }
        let ok: Vec<&str> = encodings_for(t).iter().map(|e| e.as_str()).collect();
        self.err(
            path,
            format!(
                "TsFile 0.10 cannot encode {t} with {e}; {t} takes {}",
                choices_text(&ok)
            ),
        );
        false
    }
}

const PRECISIONS: &[(&str, TimePrecision)] = &[
    ("ms", TimePrecision::Ms),
    ("us", TimePrecision::Us),
    ("ns", TimePrecision::Ns),
    ("s", TimePrecision::S),
];

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

fn check_base_path(p: &str) -> Result<(), String> {
    if p.is_empty() {
        return Ok(());
    }
    if !p.starts_with('/') || p.ends_with('/') {
        return Err(format!(
            "\"{p}\" must start with '/' and not end with '/' (e.g. \"/plant\"), or be empty"
        ));
    }
    if let Some(c) = p
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '/' | '-' | '_' | '.' | '~')))
    {
        return Err(format!(
            "\"{p}\" contains {c:?}; URL paths use letters, digits, '/', '-', '_', '.', '~'"
        ));
    }
    if p.contains("//") {
        return Err(format!("\"{p}\" contains an empty segment"));
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
            if let SourceKind::Http(h) = &s.kind {
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
    let mut defaults = validate_schema_defaults(
        v,
        &rp.schema_defaults.clone().unwrap_or_default(),
        &pp.key("schema_defaults"),
    );
    let v4 = storage.format_version == FormatVersion::V4;
    if v4 {
        fit_defaults_v4(v, &mut defaults, &pp.key("schema_defaults"));
    }
    let mut rules: Vec<SchemaRule> = Vec::new();
    for (i, r) in rp.schema.clone().unwrap_or_default().iter().enumerate() {
        let rpath = pp.key("schema").index(i);
        if let Some(rule) = validate_rule(v, r, &rpath, &defaults) {
            if v4 {
                check_encoding_v4(v, rule.data_type, rule.encoding, &rpath.key("encoding"));
            }
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
    let format_version = match rs.format_version {
        None => FormatVersion::V2,
        Some(n) => FormatVersion::from_number(n).unwrap_or_else(|| {
            v.err(
                &sp.key("format_version"),
                format!(
                    "unknown format version {n}; expected 2 (TsFile 000002, IoTDB 0.10) or 4 (TsFile v4, IoTDB 2.x)"
                ),
            );
            FormatVersion::V2
        }),
    };
    StorageConfig {
        format_version,
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

/// With `format_version = 4`: an encoding the daemon does not write in v4 is an error where it
/// is written, and a default not written becomes PLAIN.
fn fit_defaults_v4(v: &mut V<'_>, d: &mut SchemaDefaults, dp: &KeyPath) {
    let keys = [
        ("boolean", DataType::Boolean, &mut d.boolean),
        ("int32", DataType::Int32, &mut d.int32),
        ("int64", DataType::Int64, &mut d.int64),
        ("float", DataType::Float, &mut d.float),
        ("double", DataType::Double, &mut d.double),
        ("text", DataType::Text, &mut d.text),
    ];
    for (key, t, e) in keys {
        let path = dp.key(key);
        if v.written(&path) {
            check_encoding_v4(v, t, *e, &path);
        } else if !encoding_supported_v4(t, *e) {
            *e = Encoding::Plain;
        }
    }
}

fn check_encoding_v4(v: &mut V<'_>, t: DataType, e: Encoding, path: &KeyPath) {
    if !encoding_supported_v4(t, e) {
        let ok: Vec<&str> = encodings_for_v4(t).iter().map(|e| e.as_str()).collect();
        v.err(
            path,
            format!(
                "{t} {e} is not written in TsFile v4 (storage.format_version = 4); {t} takes {}",
                choices_text(&ok)
            ),
        );
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
    let (name_raw, default_name) = match s {
        RawSource::Http(h) => (&h.name, "http"),
        RawSource::Mqtt(m) => (&m.name, "mqtt"),
        RawSource::Csv(c) => (&c.name, "csv"),
    };
    let name = name_raw.clone().unwrap_or_else(|| default_name.to_string());
    let name_ok = v.name(&name, &sp.key("name"));
    let kind = match s {
        RawSource::Http(h) => SourceKind::Http(validate_http_source(v, h, sp)?),
        RawSource::Mqtt(m) => SourceKind::Mqtt(validate_mqtt(v, m, sp, &name, storage)?),
        RawSource::Csv(c) => SourceKind::Csv(validate_csv(v, c, sp)?),
    };
    name_ok.then_some(SourceConfig { name, kind })
}

fn line_mapping(
    v: &mut V<'_>,
    prefix: &Option<String>,
    template: &Option<String>,
    precision: &Option<String>,
    at: &KeyPath,
    default_prefix: &str,
) -> LineProtocolMapping {
    let path_prefix = prefix.clone().unwrap_or_else(|| default_prefix.to_string());
    if let Err(e) = check_prefix(&path_prefix, true) {
        v.err(&at.key("path_prefix"), e);
    }
    let tpl_text = template
        .clone()
        .unwrap_or_else(|| "{measurement}.{tags}".to_string());
    // The template's first node is the level after the prefix's last.
    let first_level = path_prefix.split('.').count();
    let device_template = match Template::parse_at(&tpl_text, first_level, None, &["tags"]) {
        Ok(t) => t,
        Err(e) => {
            v.err(&at.key("device_template"), e);
            Template::fallback()
        }
    };
    LineProtocolMapping {
        path_prefix,
        device_template,
        precision: v.choice(
            precision,
            &at.key("precision"),
            TimePrecision::Ns,
            PRECISIONS,
        ),
    }
}

fn validate_http_source(
    v: &mut V<'_>,
    h: &RawHttpSource,
    sp: &KeyPath,
) -> Option<HttpSourceConfig> {
    let before = v.diags.len();
    let base_path = h.base_path.clone().unwrap_or_default();
    if let Err(e) = check_base_path(&base_path) {
        v.err(&sp.key("base_path"), e);
    }
    let mut endpoints = Vec::new();
    match &h.endpoints {
        None => {
            endpoints = vec![
                HttpEndpoint::IotdbJson,
                HttpEndpoint::LineProtocol,
                HttpEndpoint::IotdbRest,
            ]
        }
        Some(list) => {
            if list.is_empty() {
                v.err(
                    &sp.key("endpoints"),
                    "an http source needs at least one endpoint (\"iotdb-json\", \"line-protocol\", \"iotdb-rest\")",
                );
            }
            for (i, e) in list.iter().enumerate() {
                let p = sp.key("endpoints").index(i);
                let ep = v.choice(
                    &Some(e.clone()),
                    &p,
                    None,
                    &[
                        ("iotdb-json", Some(HttpEndpoint::IotdbJson)),
                        ("line-protocol", Some(HttpEndpoint::LineProtocol)),
                        ("iotdb-rest", Some(HttpEndpoint::IotdbRest)),
                    ],
                );
                if let Some(ep) = ep {
                    if endpoints.contains(&ep) {
                        v.err(&p, format!("\"{e}\" is listed twice"));
                    } else {
                        endpoints.push(ep);
                    }
                }
            }
        }
    }
    let line_protocol = line_mapping(
        v,
        &h.path_prefix,
        &h.device_template,
        &h.precision,
        sp,
        "root.lp",
    );
    (v.diags.len() == before).then_some(HttpSourceConfig {
        base_path,
        endpoints,
        line_protocol,
    })
}

fn validate_mqtt(
    v: &mut V<'_>,
    m: &RawMqttSource,
    sp: &KeyPath,
    name: &str,
    storage: &StorageConfig,
) -> Option<MqttSourceConfig> {
    let before = v.diags.len();
    let url = v.required(&m.url, sp, "url").map(str::to_string);
    let broker = url.as_deref().and_then(|u| {
        BrokerAddress::parse(u)
            .map_err(|e| v.err(&sp.key("url"), e))
            .ok()
    });
    let protocol = v.choice(
        &m.protocol,
        &sp.key("protocol"),
        MqttProtocol::V311,
        &[("v3", MqttProtocol::V311), ("v5", MqttProtocol::V5)],
    );
    let client_id = match &m.client_id {
        Some(id) if id.is_empty() => {
            v.err(&sp.key("client_id"), "must not be empty");
            None
        }
        Some(id) if id.len() > 65535 || id.chars().any(|c| c.is_control()) => {
            v.err(
                &sp.key("client_id"),
                "a client id is at most 65535 bytes without control characters",
            );
            None
        }
        other => other.clone(),
    };
    let username = v.nonempty(&m.username, &sp.key("username"));
    let password = match (&m.password, &m.password_file) {
        (Some(_), Some(_)) => {
            v.err_key(
                &sp.key("password_file"),
                "give either password or password_file, not both",
            );
            None
        }
        (Some(p), None) => Some(Password::Inline(p.clone())),
        (None, Some(_)) => v
            .nonempty(&m.password_file, &sp.key("password_file"))
            .map(|f| Password::File(PathBuf::from(f))),
        (None, None) => None,
    };
    if password.is_some() && username.is_none() && protocol == MqttProtocol::V311 {
        let key = if m.password.is_some() {
            "password"
        } else {
            "password_file"
        };
        v.err_key(
            &sp.key(key),
            "MQTT 3.1.1 sends a password only with a username; set `username` (or use protocol = \"v5\")",
        );
    }
    let tls_on = broker.as_ref().is_some_and(|b| b.tls);
    for key in ["ca_file", "client_cert_file", "client_key_file"] {
        let set = match key {
            "ca_file" => m.ca_file.is_some(),
            "client_cert_file" => m.client_cert_file.is_some(),
            _ => m.client_key_file.is_some(),
        };
        if set && broker.is_some() && !tls_on {
            v.err_key(
                &sp.key(key),
                "TLS settings need an mqtts:// url (this one is mqtt://)",
            );
        }
    }
    let ca_file = v
        .nonempty(&m.ca_file, &sp.key("ca_file"))
        .map(PathBuf::from);
    let cert = v
        .nonempty(&m.client_cert_file, &sp.key("client_cert_file"))
        .map(PathBuf::from);
    let key = v
        .nonempty(&m.client_key_file, &sp.key("client_key_file"))
        .map(PathBuf::from);
    let client_auth = match (cert, key) {
        (Some(c), Some(k)) => Some((c, k)),
        (Some(_), None) => {
            v.err_key(&sp.key("client_cert_file"), "needs client_key_file too");
            None
        }
        (None, Some(_)) => {
            v.err_key(&sp.key("client_key_file"), "needs client_cert_file too");
            None
        }
        (None, None) => None,
    };
    let tls = tls_on.then_some(MqttTls {
        ca_file,
        client_auth,
    });
    let keep_alive = v.whole_seconds(
        &m.keep_alive,
        &sp.key("keep_alive"),
        Duration::from_secs(60),
        1,
        65535,
    );
    let clean_session = m.clean_session.unwrap_or(false);
    if m.session_expiry.is_some() && protocol == MqttProtocol::V311 {
        v.err_key(
            &sp.key("session_expiry"),
            "session_expiry is an MQTT 5 setting; set protocol = \"v5\" or remove it (MQTT 3.1.1 sessions last until the broker expires them)",
        );
    }
    let session_expiry = v.whole_seconds(
        &m.session_expiry,
        &sp.key("session_expiry"),
        Duration::from_secs(86400),
        0,
        u64::from(u32::MAX),
    );
    if !clean_session && client_id.is_none() && m.client_id.is_none() {
        v.err(
            &sp.key("client_id"),
            "a persistent session (clean_session = false, the default) needs a stable, non-empty client_id, unique per daemon; set client_id, or set clean_session = true and use only QoS 0",
        );
    }
    let shared_group = match &m.shared_group {
        Some(g) if g.is_empty() || g.contains(['/', '+', '#', '\0']) => {
            v.err(
                &sp.key("shared_group"),
                format!("\"{g}\" is not a shared-subscription group; it must be non-empty without '/', '+' or '#'"),
            );
            None
        }
        other => other.clone(),
    };
    let max_payload_size = v.size_min(
        &m.max_payload_size,
        &sp.key("max_payload_size"),
        ByteSize::mib(1),
        ByteSize(1),
    );
    if max_payload_size.0 > 268_435_455 {
        v.err(
            &sp.key("max_payload_size"),
            format!("{max_payload_size} is more than MQTT allows (268435455 bytes)"),
        );
    }
    let max_inflight = v.int(&m.max_inflight, &sp.key("max_inflight"), 1000, 1, 65535) as u16;
    let reconnect_max_backoff = v.positive_duration(
        &m.reconnect_max_backoff,
        &sp.key("reconnect_max_backoff"),
        Duration::from_secs(30),
    );
    let dead_letter_file = v.path_or(
        &m.dead_letter_file,
        &sp.key("dead_letter_file"),
        storage
            .data_dir
            .join("dead-letter")
            .join(format!("{name}.jsonl")),
    );
    let mut topics: Vec<TopicConfig> = Vec::new();
    match &m.topic {
        None => v.err(
            &sp.key("topic"),
            "missing required key `topic`: add at least one [[pipeline.source.topic]] with a filter",
        ),
        Some(list) if list.is_empty() => v.err(&sp.key("topic"), "at least one topic is required"),
        Some(list) => {
            for (k, t) in list.iter().enumerate() {
                let tp = sp.key("topic").index(k);
                if let Some(topic) = validate_topic(v, t, &tp) {
                    if topic.qos > Qos::AtMostOnce {
                        let q = topic.qos.level();
                        if clean_session {
                            v.err(
                                &tp.key("qos"),
                                format!("QoS {q} needs a persistent session so the broker redelivers unacknowledged messages after a restart: set clean_session = false and a stable client_id"),
                            );
                        } else if protocol == MqttProtocol::V5 && session_expiry.is_zero() {
                            v.err(
                                &tp.key("qos"),
                                format!("QoS {q} needs a persistent session: with MQTT 5 set session_expiry above 0s"),
                            );
                        }
                    }
                    if topics.iter().any(|x| x.filter == topic.filter) {
                        v.err(
                            &tp.key("filter"),
                            format!("filter \"{}\" is subscribed twice in this source", topic.filter),
                        );
                    }
                    topics.push(topic);
                }
            }
        }
    }
    if v.diags.len() != before {
        return None;
    }
    Some(MqttSourceConfig {
        url: url?,
        broker: broker?,
        protocol,
        client_id,
        username,
        password,
        tls,
        keep_alive,
        clean_session,
        session_expiry,
        shared_group,
        max_payload_size,
        max_inflight,
        reconnect_max_backoff,
        dead_letter_file,
        topics,
    })
}

fn validate_topic(v: &mut V<'_>, t: &RawTopic, tp: &KeyPath) -> Option<TopicConfig> {
    let before = v.diags.len();
    let filter = v.required(&t.filter, tp, "filter").map(str::to_string);
    if let Some(f) = &filter {
        if let Err(e) = check_topic_filter(f) {
            v.err(&tp.key("filter"), e);
        }
    }
    let qos = u8::try_from(v.int(&t.qos, &tp.key("qos"), 1, 0, 2))
        .ok()
        .and_then(Qos::from_level)
        .unwrap_or_default();
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Json,
        Line,
        Value,
    }
    let p = v.choice(
        &t.payload,
        &tp.key("payload"),
        P::Json,
        &[
            ("iotdb-json", P::Json),
            ("line", P::Line),
            ("value", P::Value),
        ],
    );
    let why = match p {
        P::Json => "with payload = \"iotdb-json\"",
        P::Line => "with payload = \"line\"",
        P::Value => "with payload = \"value\"",
    };
    v.not_with(
        p != P::Value && t.topic_template.is_some(),
        &tp.key("topic_template"),
        why,
    );
    v.not_with(
        p == P::Json && t.path_prefix.is_some(),
        &tp.key("path_prefix"),
        why,
    );
    v.not_with(
        p != P::Line && t.device_template.is_some(),
        &tp.key("device_template"),
        why,
    );
    v.not_with(
        p != P::Line && t.precision.is_some(),
        &tp.key("precision"),
        why,
    );
    let payload = match p {
        P::Json => MqttPayload::IotdbJson,
        P::Line => MqttPayload::Line(line_mapping(
            v,
            &t.path_prefix,
            &t.device_template,
            &t.precision,
            tp,
            "root.mqtt",
        )),
        P::Value => {
            let path_prefix = t.path_prefix.clone().unwrap_or_else(|| "root.mqtt".into());
            let tpl = match &t.topic_template {
                None => {
                    v.err(
                        &tp.key("topic_template"),
                        "payload = \"value\" needs a topic_template such as \"plant/{device}/{measurement}\"",
                    );
                    None
                }
                Some(s) => TopicTemplate::parse(s)
                    .map_err(|e| v.err(&tp.key("topic_template"), e))
                    .ok(),
            };
            // `root` alone is a prefix only when the topic adds device levels below it.
            let root_allowed = tpl
                .as_ref()
                .is_none_or(|t| t.levels().contains(&TopicLevel::Device));
            if let Err(e) = check_prefix(&path_prefix, root_allowed) {
                v.err(&tp.key("path_prefix"), e);
            }
            if let (Some(tpl), Some(f)) = (&tpl, &filter) {
                if !f.contains('#')
                    && f.split('/').count() != tpl.levels().len()
                    && !tpl.as_str().ends_with('#')
                {
                    v.err(
                        &tp.key("topic_template"),
                        format!(
                            "has {} levels but the filter \"{f}\" matches topics of {} levels",
                            tpl.levels().len(),
                            f.split('/').count()
                        ),
                    );
                }
            }
            match tpl {
                Some(topic_template) => MqttPayload::Value {
                    topic_template,
                    path_prefix,
                },
                None => MqttPayload::IotdbJson,
            }
        }
    };
    if v.diags.len() != before {
        return None;
    }
    Some(TopicConfig {
        filter: filter?,
        qos,
        payload,
    })
}

fn column(v: &mut V<'_>, c: &RawColumn, path: &KeyPath, header_rows: u32) -> Option<ColumnRef> {
    match c {
        RawColumn::Index(n) if *n >= 1 => usize::try_from(*n - 1).ok().map(ColumnRef::Index),
        RawColumn::Index(n) => {
            v.err(path, format!("column numbers start at 1, found {n}"));
            None
        }
        RawColumn::Name(s) if s.is_empty() => {
            v.err(path, "empty column name");
            None
        }
        RawColumn::Name(s) if header_rows == 0 => {
            v.err(
                path,
                format!("column \"{s}\" is named but header_rows = 0; use a column number or a header row"),
            );
            None
        }
        RawColumn::Name(s) => Some(ColumnRef::Name(s.clone())),
    }
}

fn validate_csv(v: &mut V<'_>, c: &RawCsvSource, sp: &KeyPath) -> Option<CsvSourceConfig> {
    let before = v.diags.len();
    let mut directories: Vec<PathBuf> = Vec::new();
    match &c.directories {
        None => v.err(&sp.key("directories"), "missing required key `directories`"),
        Some(list) if list.is_empty() => {
            v.err(&sp.key("directories"), "at least one directory is required")
        }
        Some(list) => {
            for (i, d) in list.iter().enumerate() {
                let p = sp.key("directories").index(i);
                if d.trim().is_empty() {
                    v.err(&p, "must not be empty");
                } else if directories.iter().any(|x| same_path(x, Path::new(d))) {
                    v.err(&p, format!("directory {d} is listed twice"));
                } else {
                    directories.push(PathBuf::from(d));
                }
            }
        }
    }
    let globs =
        |v: &mut V<'_>, list: &Option<Vec<String>>, key: &str, default: &[&str], nonempty: bool| {
            let list: Vec<String> = list
                .clone()
                .unwrap_or_else(|| default.iter().map(|s| s.to_string()).collect());
            if nonempty && list.is_empty() {
                v.err(&sp.key(key), "at least one file pattern is required");
            }
            list.iter()
                .enumerate()
                .filter_map(|(i, g)| {
                    Glob::parse(g)
                        .map_err(|e| v.err(&sp.key(key).index(i), e))
                        .ok()
                })
                .collect::<Vec<_>>()
        };
    let patterns = globs(
        v,
        &c.patterns,
        "patterns",
        CsvSourceConfig::DEFAULT_PATTERNS,
        true,
    );
    let ignore = globs(
        v,
        &c.ignore,
        "ignore",
        CsvSourceConfig::DEFAULT_IGNORE,
        false,
    );
    let recursive = c.recursive.unwrap_or(false);
    let settle = v.positive_duration(&c.settle, &sp.key("settle"), Duration::from_secs(2));

    #[derive(Clone, Copy, PartialEq)]
    enum F {
        Wide,
        Device,
        Generic,
    }
    let f = v.choice(
        &c.format,
        &sp.key("format"),
        F::Wide,
        &[
            ("iotdb-wide", F::Wide),
            ("iotdb-device", F::Device),
            ("generic", F::Generic),
        ],
    );
    let format = if f == F::Generic {
        let header_rows = v.int(&c.header_rows, &sp.key("header_rows"), 1, 0, 1000) as u32;
        let time_column = match &c.time_column {
            None => Some(ColumnRef::Index(0)),
            Some(col) => column(v, col, &sp.key("time_column"), header_rows),
        };
        let device = match (&c.device_column, &c.device_template) {
            (Some(_), Some(_)) => {
                v.err_key(
                    &sp.key("device_template"),
                    "give either device_column or device_template, not both",
                );
                None
            }
            (None, None) => {
                v.err(
                    &sp.key("device_column"),
                    "the generic format needs device_column or device_template",
                );
                None
            }
            (Some(col), None) => {
                let path_prefix = c.path_prefix.clone();
                if let Some(p) = &path_prefix {
                    if let Err(e) = check_prefix(p, false) {
                        v.err(&sp.key("path_prefix"), e);
                    }
                }
                column(v, col, &sp.key("device_column"), header_rows).map(|column| {
                    CsvDevice::Column {
                        column,
                        path_prefix,
                    }
                })
            }
            (None, Some(t)) => {
                v.not_with(
                    c.path_prefix.is_some(),
                    &sp.key("path_prefix"),
                    "with device_template (write the full path in the template)",
                );
                match Template::parse_csv_device(t) {
                    Ok(tpl) => Some(CsvDevice::Template(tpl)),
                    Err(e) => {
                        v.err(&sp.key("device_template"), e);
                        None
                    }
                }
            }
        };
        let mut value_columns: Vec<ColumnRef> = Vec::new();
        for (i, col) in c
            .value_columns
            .clone()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let p = sp.key("value_columns").index(i);
            if let Some(cr) = column(v, col, &p, header_rows) {
                if value_columns.contains(&cr) {
                    v.err(&p, "column listed twice");
                } else if Some(&cr) == time_column.as_ref() {
                    v.err(&p, "this is the time column");
                } else if matches!(&device, Some(CsvDevice::Column { column, .. }) if *column == cr)
                {
                    v.err(&p, "this is the device column");
                } else {
                    value_columns.push(cr);
                }
            }
        }
        if let (
            Some(ColumnRef::Index(a)),
            Some(CsvDevice::Column {
                column: ColumnRef::Index(b),
                ..
            }),
        ) = (&time_column, &device)
        {
            if a == b {
                v.err(
                    &sp.key("device_column"),
                    "the device column is also the time column",
                );
            }
        }
        match (time_column, device) {
            (Some(time_column), Some(device)) => CsvFormat::Generic(GenericCsv {
                header_rows,
                time_column,
                device,
                value_columns,
            }),
            _ => CsvFormat::IotdbWide,
        }
    } else {
        let why = "unless format = \"generic\"";
        v.not_with(c.header_rows.is_some(), &sp.key("header_rows"), why);
        v.not_with(c.time_column.is_some(), &sp.key("time_column"), why);
        v.not_with(c.device_column.is_some(), &sp.key("device_column"), why);
        v.not_with(c.device_template.is_some(), &sp.key("device_template"), why);
        v.not_with(c.path_prefix.is_some(), &sp.key("path_prefix"), why);
        v.not_with(c.value_columns.is_some(), &sp.key("value_columns"), why);
        if f == F::Wide {
            CsvFormat::IotdbWide
        } else {
            CsvFormat::IotdbDevice
        }
    };

    #[derive(Clone, Copy, PartialEq)]
    enum Tf {
        Auto,
        S,
        Ms,
        Us,
        Ns,
        Rfc,
        Strf,
    }
    let tf = v.choice(
        &c.time_format,
        &sp.key("time_format"),
        Tf::Auto,
        &[
            ("auto", Tf::Auto),
            ("epoch_s", Tf::S),
            ("epoch_ms", Tf::Ms),
            ("epoch_us", Tf::Us),
            ("epoch_ns", Tf::Ns),
            ("rfc3339", Tf::Rfc),
            ("strftime", Tf::Strf),
        ],
    );
    let time_format = match tf {
        Tf::Auto => TimeFormat::Auto,
        Tf::S => TimeFormat::EpochS,
        Tf::Ms => TimeFormat::EpochMs,
        Tf::Us => TimeFormat::EpochUs,
        Tf::Ns => TimeFormat::EpochNs,
        Tf::Rfc => TimeFormat::Rfc3339,
        Tf::Strf => match &c.time_pattern {
            None => {
                v.err(
                    &sp.key("time_pattern"),
                    "time_format = \"strftime\" needs time_pattern, e.g. \"%Y-%m-%d %H:%M:%S\"",
                );
                TimeFormat::Auto
            }
            Some(p) => match check_strftime(p) {
                Ok(()) => TimeFormat::Strftime(p.clone()),
                Err(e) => {
                    v.err(&sp.key("time_pattern"), e);
                    TimeFormat::Auto
                }
            },
        },
    };
    v.not_with(
        tf != Tf::Strf && c.time_pattern.is_some(),
        &sp.key("time_pattern"),
        "unless time_format = \"strftime\"",
    );
    let timezone = c.timezone.clone().unwrap_or_else(|| "UTC".to_string());
    if let Err(e) = check_timezone(&timezone) {
        v.err(&sp.key("timezone"), e);
    }
    let ambiguous_time = v.choice(
        &c.ambiguous_time,
        &sp.key("ambiguous_time"),
        AmbiguousTime::Earliest,
        &[
            ("earliest", AmbiguousTime::Earliest),
            ("latest", AmbiguousTime::Latest),
            ("reject", AmbiguousTime::Reject),
        ],
    );
    let delimiter = match c.delimiter.as_deref() {
        None => b',',
        Some(d) => {
            let b = d.as_bytes();
            if b.len() == 1 && b[0].is_ascii() && !matches!(b[0], b'"' | b'\n' | b'\r') {
                b[0]
            } else {
                v.err(
                    &sp.key("delimiter"),
                    format!("{d:?} is not one ASCII character other than a quote or line break"),
                );
                b','
            }
        }
    };
    let skip_rows = v.int(
        &c.skip_rows,
        &sp.key("skip_rows"),
        0,
        0,
        i64::from(u32::MAX),
    ) as u32;
    let on_success = v.choice(
        &c.on_success,
        &sp.key("on_success"),
        OnSuccess::Move,
        &[("move", OnSuccess::Move), ("delete", OnSuccess::Delete)],
    );
    v.not_with(
        on_success == OnSuccess::Delete && c.done_dir.is_some(),
        &sp.key("done_dir"),
        "with on_success = \"delete\"",
    );
    let done_dir = v.path_or(&c.done_dir, &sp.key("done_dir"), PathBuf::from("done"));
    let error_dir = v.path_or(&c.error_dir, &sp.key("error_dir"), PathBuf::from("error"));
    if on_success == OnSuccess::Move && same_path(&done_dir, &error_dir) {
        v.err(&sp.key("error_dir"), "error_dir must differ from done_dir");
    }
    let max_concurrent_files = v.int(
        &c.max_concurrent_files,
        &sp.key("max_concurrent_files"),
        2,
        1,
        1024,
    ) as u32;
    let rescan_interval = v.positive_duration(
        &c.rescan_interval,
        &sp.key("rescan_interval"),
        Duration::from_secs(30),
    );
    if v.diags.len() != before {
        return None;
    }
    Some(CsvSourceConfig {
        directories,
        patterns,
        ignore,
        recursive,
        settle,
        format,
        time_format,
        timezone,
        ambiguous_time,
        delimiter,
        skip_rows,
        done_dir,
        error_dir,
        on_success,
        max_concurrent_files,
        rescan_interval,
    })
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
    fn broker_urls() {
        let b = BrokerAddress::parse("mqtt://broker.local").unwrap();
        assert_eq!(
            (b.tls, b.host.as_str(), b.port),
            (false, "broker.local", 1883)
        );
        let b = BrokerAddress::parse("mqtts://10.0.0.1:9000/").unwrap();
        assert_eq!((b.tls, b.host.as_str(), b.port), (true, "10.0.0.1", 9000));
        let b = BrokerAddress::parse("mqtts://[::1]").unwrap();
        assert_eq!((b.host.as_str(), b.port), ("::1", 8883));
        let b = BrokerAddress::parse("mqtt://[fe80::1]:1884").unwrap();
        assert_eq!((b.host.as_str(), b.port), ("fe80::1", 1884));
        assert!(BrokerAddress::parse("tcp://x")
            .unwrap_err()
            .contains("mqtt://"));
        assert!(BrokerAddress::parse("mqtt://")
            .unwrap_err()
            .contains("no host"));
        assert!(BrokerAddress::parse("mqtt://x:0").is_err());
        assert!(BrokerAddress::parse("mqtt://x:70000").is_err());
        assert!(BrokerAddress::parse("mqtt://u:p@x").is_err());
        assert!(BrokerAddress::parse("mqtt://x/topic").is_err());
        assert!(BrokerAddress::parse("mqtt://[::1").is_err());
        // What the MQTT connector used to take on its own, and more, is refused.
        for bad in [
            "ssl://x",
            "MQTT://x",
            "mqtt://x#y",
            "mqtt://[::1]x",
            "mqtt://a b",
        ] {
            assert!(
                BrokerAddress::parse(bad).unwrap_err().contains(bad),
                "{bad}"
            );
        }
    }

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
    fn base_paths() {
        assert!(check_base_path("").is_ok());
        assert!(check_base_path("/plant").is_ok());
        assert!(check_base_path("/a/b").is_ok());
        assert!(check_base_path("plant").is_err());
        assert!(check_base_path("/plant/").is_err());
        assert!(check_base_path("/a b").is_err());
        assert!(check_base_path("/a//b").is_err());
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
