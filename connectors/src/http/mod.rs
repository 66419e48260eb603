//! The `http` source: points pushed over the daemon's HTTP listener (IoTDB JSON, InfluxDB line
//! protocol, IoTDB's REST write API). It has no task of its own: the daemon mounts its routes
//! ([`SourceSettings::http_push`]) on the shared listener.

use tsfiled_core::{config_table, KeyPath, Validator};

use crate::source::{
    line_mapping, LineProtocolMapping, SourceContext, SourceEnv, SourceFuture, SourceSettings,
    SourceTable,
};

config_table! {
    /// `type = "http"`: points pushed over the `[http]` listener.
    pub struct HttpTable {
        /// Name of the source, unique in its pipeline: letters, digits, `_` and `-`. Used in
        /// metric labels.
        #[key("name", "string", "the source type (\"http\")")]
        name: Option<String>,
        /// URL path prefix of this source's endpoints, e.g. `"/plant"` serves
        /// `/plant/ingest/iotdb-json`; empty serves them at the root. Two sources may not serve
        /// the same URL.
        #[key("base_path", "string", "\"\"")]
        base_path: Option<String>,
        /// Which endpoints to serve: `"iotdb-json"` (`POST /ingest/iotdb-json`, IoTDB's JSON
        /// records), `"line-protocol"` (`POST /write` and `POST /api/v2/write`, InfluxDB line
        /// protocol, as Telegraf's influxdb outputs send) and `"iotdb-rest"` (IoTDB's REST write
        /// API: `POST /rest/v2/insertTablet`, `/rest/v2/insertRecords`, `/rest/v1/insertTablet`;
        /// `GET /ping` then answers as IoTDB does).
        #[key("endpoints", "array of \"iotdb-json\" | \"line-protocol\" | \"iotdb-rest\"", "[\"iotdb-json\", \"line-protocol\", \"iotdb-rest\"]")]
        endpoints: Option<Vec<String>>,
        /// Line protocol: device path = `path_prefix` + `.` + `device_template`, the fields
        /// become measurements. May be `"root"` itself.
        #[key("path_prefix", "IoTDB path", "\"root.lp\"")]
        path_prefix: Option<String>,
        /// Line protocol: the device path below `path_prefix`. `{measurement}` is the line's
        /// measurement, `{<tag key>}` (or `{tag:<tag key>}`) a tag's value (a line without that
        /// tag is rejected; `{tag:<tag key>|<default>}` uses `<default>` instead), and `{tags}`
        /// (a whole node) the values of all other tags in tag-key order, one node each.
        #[key("device_template", "template", "\"{measurement}.{tags}\"")]
        device_template: Option<String>,
        /// Line protocol: unit of timestamps when a request has no `precision` parameter:
        /// `"ns"`, `"us"`, `"ms"` or `"s"`.
        #[key("precision", "\"ns\" | \"us\" | \"ms\" | \"s\"", "\"ns\"")]
        precision: Option<String>,
    }
}

/// An HTTP push endpoint kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HttpEndpoint {
    /// `POST {base}/ingest/iotdb-json`.
    IotdbJson,
    /// `POST {base}/write` and `POST {base}/api/v2/write`.
    LineProtocol,
    /// IoTDB's REST write API: `POST {base}/rest/v2/insertTablet`,
    /// `POST {base}/rest/v2/insertRecords` and `POST {base}/rest/v1/insertTablet`.
    IotdbRest,
}

impl HttpEndpoint {
    /// The configuration name.
    pub fn as_str(self) -> &'static str {
        match self {
            HttpEndpoint::IotdbJson => "iotdb-json",
            HttpEndpoint::LineProtocol => "line-protocol",
            HttpEndpoint::IotdbRest => "iotdb-rest",
        }
    }

    /// URL paths served for this endpoint below `base_path`.
    pub fn routes(self, base_path: &str) -> Vec<String> {
        match self {
            HttpEndpoint::IotdbJson => vec![format!("{base_path}/ingest/iotdb-json")],
            HttpEndpoint::LineProtocol => {
                vec![
                    format!("{base_path}/write"),
                    format!("{base_path}/api/v2/write"),
                ]
            }
            HttpEndpoint::IotdbRest => vec![
                format!("{base_path}/rest/v2/insertTablet"),
                format!("{base_path}/rest/v2/insertRecords"),
                format!("{base_path}/rest/v1/insertTablet"),
            ],
        }
    }
}

/// `type = "http"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSourceConfig {
    /// URL prefix ("" or `/x`).
    pub base_path: String,
    /// Endpoints served.
    pub endpoints: Vec<HttpEndpoint>,
    /// Line-protocol mapping.
    pub line_protocol: LineProtocolMapping,
}

impl HttpSourceConfig {
    /// Every URL path this source serves.
    pub fn routes(&self) -> Vec<String> {
        self.endpoints
            .iter()
            .flat_map(|e| e.routes(&self.base_path))
            .collect()
    }
}

impl SourceTable for HttpTable {
    const TYPE: &'static str = "http";
    const SUMMARY: &'static str = "points pushed over the [http] listener";
    const EXAMPLE: &'static str = "base_path = \"/plant\"\n";
    type Settings = HttpSourceConfig;

    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        env: &SourceEnv<'_>,
    ) -> Option<HttpSourceConfig> {
        validate_http_source(v, self, at, env.line_protocol_model)
    }
}

impl SourceSettings for HttpSourceConfig {
    type Table = HttpTable;

    fn to_table(&self, name: &str, _secret: &dyn Fn(&str) -> String) -> HttpTable {
        let (path_prefix, device_template, precision) = self.line_protocol.keys();
        HttpTable {
            name: Some(name.to_string()),
            base_path: Some(self.base_path.clone()),
            endpoints: Some(
                self.endpoints
                    .iter()
                    .map(|e| e.as_str().to_string())
                    .collect(),
            ),
            path_prefix,
            device_template,
            precision,
        }
    }

    fn initial_state(&self) -> &'static str {
        "listening"
    }

    fn http_push(&self) -> Option<&HttpSourceConfig> {
        Some(self)
    }

    fn start(&self, cx: SourceContext) -> SourceFuture {
        // Served by the daemon's HTTP listener; nothing runs here until shutdown.
        Box::pin(async move {
            cx.shutdown.cancelled().await;
            Ok(())
        })
    }
}

fn validate_http_source(
    v: &mut Validator<'_>,
    h: &HttpTable,
    sp: &KeyPath,
    model: tsfiled_core::LineProtocolModel,
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
        model,
    );
    (v.diags.len() == before).then_some(HttpSourceConfig {
        base_path,
        endpoints,
        line_protocol,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
