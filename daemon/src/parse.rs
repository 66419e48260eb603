//! Payload parsers behind a small trait, so the HTTP source (and later MQTT) does not
//! depend on which implementation is in use.
//!
//! [`BuiltinParsers`] is a compact implementation of IoTDB's JSON formats and InfluxDB
//! line protocol; it stands in until the connectors crate's parsers are wired in.

use tsfiled_connectors::{Batch, Field, FieldValue, Record, RejectReason, Rejection, TimeUnit};

/// How line-protocol measurement and tags map to a device path.
#[derive(Debug, Clone, PartialEq)]
pub struct LineMapping {
    /// Device template: `{measurement}`, `{tag:NAME}` (or `{NAME}` for a tag),
    /// `{tags}` (every tag value, by tag key, dot-separated; nothing if no tags),
    /// `{org}`, `{bucket}`, `{db}` are replaced; a missing tag gives an invalid_path
    /// rejection. Characters not allowed in a path node become `_` in tag values.
    pub device_template: String,
}

impl Default for LineMapping {
    fn default() -> Self {
        LineMapping {
            device_template: "root.{db}.{measurement}.{tags}".to_string(),
        }
    }
}

/// Request-level variables for the device template (`db`, `org`, `bucket`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineVars {
    /// `db` (v1) or `bucket` (v2), default `telegraf`.
    pub db: Option<String>,
    /// `org` (v2).
    pub org: Option<String>,
    /// `bucket` (v2).
    pub bucket: Option<String>,
}

/// The parsers a source uses.
pub trait Parsers: Send + Sync + 'static {
    /// IoTDB JSON: one record, the batch form, or an array of either. Times are in
    /// `unit` and converted to `stored`.
    fn iotdb_json(&self, body: &[u8], unit: TimeUnit, stored: TimeUnit) -> Batch;
    /// InfluxDB line protocol with `precision`, converted to `stored`.
    fn line_protocol(
        &self,
        body: &[u8],
        precision: TimeUnit,
        stored: TimeUnit,
        mapping: &LineMapping,
        vars: &LineVars,
        now_nanos: i64,
    ) -> Batch;
}

/// The built-in parsers.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltinParsers;

fn reject(loc: String, reason: RejectReason, msg: String, points: u64) -> Rejection {
    Rejection {
        location: loc,
        reason,
        message: msg,
        points,
    }
}

fn json_value(v: &serde_json::Value) -> Option<FieldValue> {
    use serde_json::Value as J;
    match v {
        J::Bool(b) => Some(FieldValue::Bool(*b)),
        J::Number(n) => n
            .as_i64()
            .map(FieldValue::Int)
            .or_else(|| n.as_f64().map(FieldValue::Float)),
        J::String(s) => Some(FieldValue::Text(s.clone())),
        _ => None,
    }
}

fn json_time(v: &serde_json::Value, unit: TimeUnit, stored: TimeUnit) -> Result<i64, String> {
    let t = match v {
        serde_json::Value::Number(n) => n.as_i64().ok_or("timestamp is not an integer")?,
        serde_json::Value::String(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| "timestamp is not an integer")?,
        _ => return Err("timestamp is not an integer".into()),
    };
    unit.convert(t, stored)
        .ok_or_else(|| format!("timestamp {t} overflows when converted from {unit} to {stored}"))
}

impl BuiltinParsers {
    fn json_object(
        &self,
        obj: &serde_json::Value,
        path: &str,
        unit: TimeUnit,
        stored: TimeUnit,
        out: &mut Batch,
    ) {
        let Some(o) = obj.as_object() else {
            out.rejections.push(reject(
                path.into(),
                RejectReason::Parse,
                "expected an object".into(),
                1,
            ));
            return;
        };
        let Some(device) = o.get("device").and_then(|d| d.as_str()) else {
            out.rejections.push(reject(
                format!("{path}.device"),
                RejectReason::Parse,
                "missing string \"device\"".into(),
                1,
            ));
            return;
        };
        let Some(ms) = o.get("measurements").and_then(|m| m.as_array()) else {
            out.rejections.push(reject(
                format!("{path}.measurements"),
                RejectReason::Parse,
                "missing array \"measurements\"".into(),
                1,
            ));
            return;
        };
        let names: Vec<Option<&str>> = ms.iter().map(|m| m.as_str()).collect();
        let values = o.get("values").and_then(|v| v.as_array());
        let Some(values) = values else {
            out.rejections.push(reject(
                format!("{path}.values"),
                RejectReason::Parse,
                "missing array \"values\"".into(),
                names.len() as u64,
            ));
            return;
        };
        let row = |t: Result<i64, String>,
                   vals: &[serde_json::Value],
                   vpath: String,
                   tpath: String,
                   out: &mut Batch| {
            let time = match t {
                Ok(t) => t,
                Err(e) => {
                    out.rejections.push(reject(
                        tpath,
                        RejectReason::InvalidTime,
                        e,
                        vals.len() as u64,
                    ));
                    return;
                }
            };
            let mut fields = Vec::with_capacity(vals.len());
            for (i, v) in vals.iter().enumerate() {
                if v.is_null() {
                    continue;
                }
                let Some(Some(name)) = names.get(i) else {
                    out.rejections.push(reject(
                        format!("{vpath}[{i}]"),
                        RejectReason::Parse,
                        "value without a measurement name".into(),
                        1,
                    ));
                    continue;
                };
                match json_value(v) {
                    Some(value) => fields.push(Field {
                        measurement: name.to_string(),
                        value,
                    }),
                    None => out.rejections.push(reject(
                        format!("{vpath}[{i}]"),
                        RejectReason::Parse,
                        "expected a number, string or boolean".into(),
                        1,
                    )),
                }
            }
            if !fields.is_empty() {
                out.records.push(Record {
                    device: device.to_string(),
                    time,
                    fields,
                });
            }
        };
        if let Some(ts) = o.get("timestamps").and_then(|t| t.as_array()) {
            // Batch form: values[measurement][row].
            let cols: Vec<&Vec<serde_json::Value>> =
                values.iter().filter_map(|c| c.as_array()).collect();
            if cols.len() != values.len() || cols.len() != names.len() {
                out.rejections.push(reject(
                    format!("{path}.values"),
                    RejectReason::Parse,
                    "expected one array of values per measurement".into(),
                    (names.len() * ts.len()) as u64,
                ));
                return;
            }
            let empty = serde_json::Value::Null;
            for (r, t) in ts.iter().enumerate() {
                let vals: Vec<serde_json::Value> = cols
                    .iter()
                    .map(|c| c.get(r).unwrap_or(&empty).clone())
                    .collect();
                row(
                    json_time(t, unit, stored),
                    &vals,
                    format!("{path}.values[*][{r}]"),
                    format!("{path}.timestamps[{r}]"),
                    out,
                );
            }
        } else {
            let t = match o.get("timestamp") {
                Some(t) => json_time(t, unit, stored),
                None => Err("missing \"timestamp\"".into()),
            };
            row(
                t,
                values,
                format!("{path}.values"),
                format!("{path}.timestamp"),
                out,
            );
        }
    }
}

fn json_position(body: &[u8], e: &serde_json::Error) -> String {
    let _ = body;
    format!("line {} column {}", e.line(), e.column())
}

impl Parsers for BuiltinParsers {
    fn iotdb_json(&self, body: &[u8], unit: TimeUnit, stored: TimeUnit) -> Batch {
        let mut out = Batch::default();
        let v: serde_json::Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                out.rejections.push(reject(
                    json_position(body, &e),
                    RejectReason::Parse,
                    format!("invalid JSON: {e}"),
                    1,
                ));
                return out;
            }
        };
        match &v {
            serde_json::Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.json_object(item, &format!("$[{i}]"), unit, stored, &mut out);
                }
            }
            _ => self.json_object(&v, "$", unit, stored, &mut out),
        }
        out
    }

    fn line_protocol(
        &self,
        body: &[u8],
        precision: TimeUnit,
        stored: TimeUnit,
        mapping: &LineMapping,
        vars: &LineVars,
        now_nanos: i64,
    ) -> Batch {
        let mut out = Batch::default();
        let text = String::from_utf8_lossy(body);
        for (ln, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let loc = format!("line {}", ln + 1);
            match parse_line(line, precision, stored, mapping, vars, now_nanos) {
                Ok(rec) => out.records.push(rec),
                Err((reason, msg, points)) => out.rejections.push(reject(loc, reason, msg, points)),
            }
        }
        out
    }
}

/// Splits on unescaped `sep` outside double quotes.
fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut esc = false;
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        if esc {
            esc = false;
            continue;
        }
        match c {
            '\\' => esc = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                parts.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut esc = false;
    for c in s.chars() {
        if esc {
            out.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else {
            out.push(c);
        }
    }
    out
}

type LineError = (RejectReason, String, u64);

/// A tag value as a path node: characters IoTDB does not take become `_`.
fn sanitize(v: &str) -> String {
    v.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' || c == ':' || c == '#' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn parse_line(
    line: &str,
    precision: TimeUnit,
    stored: TimeUnit,
    mapping: &LineMapping,
    vars: &LineVars,
    now_nanos: i64,
) -> Result<Record, LineError> {
    let parts: Vec<&str> = split_unescaped(line, ' ')
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err((
            RejectReason::Parse,
            "expected `measurement[,tags] fields [timestamp]`".into(),
            1,
        ));
    }
    let key = split_unescaped(parts[0], ',');
    let measurement = unescape(key[0]);
    if measurement.is_empty() {
        return Err((RejectReason::Parse, "empty measurement".into(), 1));
    }
    let mut tags = Vec::new();
    for t in &key[1..] {
        let kv = split_unescaped(t, '=');
        if kv.len() != 2 {
            return Err((RejectReason::Parse, format!("bad tag {t:?}"), 1));
        }
        tags.push((unescape(kv[0]), unescape(kv[1])));
    }
    let mut fields = Vec::new();
    for f in split_unescaped(parts[1], ',') {
        let Some((k, v)) = f.split_once('=') else {
            return Err((RejectReason::Parse, format!("bad field {f:?}"), 1));
        };
        let value = if let Some(s) = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
            FieldValue::Text(unescape(s))
        } else if let Some(i) = v.strip_suffix('i') {
            FieldValue::Int(
                i.parse()
                    .map_err(|_| (RejectReason::Parse, format!("bad integer {v:?}"), 1))?,
            )
        } else if let Some(u) = v.strip_suffix('u') {
            let u: u64 = u
                .parse()
                .map_err(|_| (RejectReason::Parse, format!("bad unsigned {v:?}"), 1))?;
            FieldValue::Int(i64::try_from(u).map_err(|_| {
                (
                    RejectReason::TypeMismatch,
                    format!("unsigned {u} exceeds INT64"),
                    1,
                )
            })?)
        } else if matches!(v, "t" | "T" | "true" | "True" | "TRUE") {
            FieldValue::Bool(true)
        } else if matches!(v, "f" | "F" | "false" | "False" | "FALSE") {
            FieldValue::Bool(false)
        } else {
            FieldValue::Float(
                v.parse()
                    .map_err(|_| (RejectReason::Parse, format!("bad field value {v:?}"), 1))?,
            )
        };
        fields.push(Field {
            measurement: unescape(k),
            value,
        });
    }
    let n = fields.len() as u64;
    let time = match parts.get(2) {
        Some(ts) => {
            let t: i64 = ts.parse().map_err(|_| {
                (
                    RejectReason::InvalidTime,
                    format!("bad timestamp {ts:?}"),
                    n,
                )
            })?;
            precision.convert(t, stored).ok_or((
                RejectReason::InvalidTime,
                format!("timestamp {t} overflows"),
                n,
            ))?
        }
        None => TimeUnit::Nanos.convert(now_nanos, stored).unwrap_or(0),
    };
    let db = vars
        .db
        .clone()
        .or_else(|| vars.bucket.clone())
        .unwrap_or_else(|| "telegraf".into());
    let mut device = String::new();
    let tpl = &mapping.device_template;
    let mut rest = tpl.as_str();
    while let Some(open) = rest.find('{') {
        device.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + close];
        let val = match name {
            "tags" => {
                let mut sorted: Vec<&(String, String)> = tags.iter().collect();
                sorted.sort();
                let joined: Vec<String> = sorted.iter().map(|(_, v)| sanitize(v)).collect();
                if joined.is_empty() && device.ends_with('.') {
                    device.pop();
                }
                Some(joined.join("."))
            }
            "measurement" => Some(measurement.clone()),
            "db" => Some(db.clone()),
            "org" => vars.org.clone(),
            "bucket" => vars.bucket.clone().or_else(|| vars.db.clone()),
            other => {
                let tag = other.strip_prefix("tag:").unwrap_or(other);
                tags.iter()
                    .find(|(k, _)| k == tag)
                    .map(|(_, v)| sanitize(v))
            }
        };
        let Some(val) = val else {
            return Err((
                RejectReason::InvalidPath,
                format!("device template {tpl:?}: no value for {{{name}}}"),
                n,
            ));
        };
        device.push_str(&val);
        rest = &rest[open + close + 1..];
    }
    device.push_str(rest);
    Ok(Record {
        device,
        time,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_forms() {
        let p = BuiltinParsers;
        let b = p.iotdb_json(
            br#"{"device":"root.sg.d1","timestamp":5,"measurements":["a","b"],"values":[1,2.5]}"#,
            TimeUnit::Millis,
            TimeUnit::Millis,
        );
        assert_eq!(b.point_count(), 2);
        assert_eq!(b.records[0].fields[1].value, FieldValue::Float(2.5));
        let b = p.iotdb_json(br#"[{"device":"root.sg.d1","timestamps":[1,2],"measurements":["a","b"],"values":[[1,2],[true,null]]}]"#, TimeUnit::Millis, TimeUnit::Millis);
        assert_eq!(b.point_count(), 3);
        let b = p.iotdb_json(b"{\"device\":", TimeUnit::Millis, TimeUnit::Millis);
        assert_eq!(b.rejections[0].reason, RejectReason::Parse);
        assert!(b.rejections[0].location.starts_with("line 1 column"));
    }

    #[test]
    fn line_protocol() {
        let p = BuiltinParsers;
        let map = LineMapping {
            device_template: "root.{db}.{tag:host}.{measurement}".into(),
        };
        let vars = LineVars {
            db: Some("tele".into()),
            ..Default::default()
        };
        let b = p.line_protocol(
            b"cpu,host=h1 usage=1.5,n=3i,ok=t,s=\"x y\" 2000\nbad line\n",
            TimeUnit::Seconds,
            TimeUnit::Millis,
            &map,
            &vars,
            0,
        );
        assert_eq!(b.records.len(), 1);
        assert_eq!(b.records[0].device, "root.tele.h1.cpu");
        assert_eq!(b.records[0].time, 2_000_000);
        assert_eq!(b.records[0].fields.len(), 4);
        assert_eq!(b.records[0].fields[3].value, FieldValue::Text("x y".into()));
        assert_eq!(b.rejections[0].location, "line 2");
        let b = p.line_protocol(
            b"disk,path=/dev/sda,host=h1 used=1i 1\nup v=1i 1\n",
            TimeUnit::Millis,
            TimeUnit::Millis,
            &LineMapping::default(),
            &LineVars::default(),
            0,
        );
        assert_eq!(b.records[0].device, "root.telegraf.disk.h1._dev_sda");
        assert_eq!(b.records[1].device, "root.telegraf.up");
    }
}
