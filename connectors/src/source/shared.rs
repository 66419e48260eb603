//! Settings several sources share: how line-protocol points map onto IoTDB paths.

use tsfiled_core::path::check_prefix;
use tsfiled_core::{DeviceTemplate, KeyPath, LineProtocolModel, TimeUnit, Validator, PRECISIONS};

/// How line-protocol points map onto IoTDB paths (the `path_prefix`, `device_template` and
/// `precision` keys of the http source and of MQTT topics with `payload = "line"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineProtocolMapping {
    /// Device path prefix, e.g. `root.lp`.
    pub path_prefix: String,
    /// The device path: `path_prefix` and the template below it (placeholders
    /// `{measurement}`, `{tags}`, `{<tag key>}`, `{tag:KEY|default}`), compiled.
    pub device_template: DeviceTemplate,
    /// Timestamp unit when the request or source gives none.
    pub precision: TimeUnit,
}

impl LineProtocolMapping {
    /// The three keys as written in the effective configuration (no `device_template` in
    /// table mode).
    pub fn keys(&self) -> (Option<String>, Option<String>, Option<String>) {
        (
            Some(self.path_prefix.clone()),
            self.device_template
                .table_database()
                .is_none()
                .then(|| self.device_template.as_str().to_string()),
            Some(self.precision.as_str().to_string()),
        )
    }
}

/// Validates the line-protocol keys of the table at `at`; `default_prefix` applies when
/// `path_prefix` is not written. In a pipeline with `storage.line_protocol_model = "table"`
/// (`model`), `path_prefix` names the database (`root.<database>`, stored lower case, as IoTDB
/// 2.x stores database names) and `device_template` is not taken.
pub fn line_mapping(
    v: &mut Validator<'_>,
    prefix: &Option<String>,
    template: &Option<String>,
    precision: &Option<String>,
    at: &KeyPath,
    default_prefix: &str,
    model: LineProtocolModel,
) -> LineProtocolMapping {
    let path_prefix = prefix.clone().unwrap_or_else(|| default_prefix.to_string());
    if model == LineProtocolModel::Table {
        v.not_with(
            template.is_some(),
            &at.key("device_template"),
            "with storage.line_protocol_model = \"table\" (a line's measurement is its table, \
             its tags are the table's TAG columns)",
        );
        let db = match path_prefix.split_once('.') {
            Some(("root", db)) if check_prefix(&path_prefix, true).is_ok() && !db.contains('.') => {
                db.to_lowercase()
            }
            _ => {
                v.err(
                    &at.key("path_prefix"),
                    format!(
                        "\"{path_prefix}\": with storage.line_protocol_model = \"table\" the prefix \
                         is `root.<database>` (one level below root: the IoTDB 2.x database)"
                    ),
                );
                String::new()
            }
        };
        return LineProtocolMapping {
            device_template: DeviceTemplate::table(&path_prefix, &db),
            path_prefix,
            precision: v.choice(precision, &at.key("precision"), TimeUnit::Nanos, PRECISIONS),
        };
    }
    let tpl_text = template
        .clone()
        .unwrap_or_else(|| "{measurement}.{tags}".to_string());
    let checked = match check_prefix(&path_prefix, true) {
        Ok(()) => DeviceTemplate::with_prefix(&path_prefix, &tpl_text),
        Err(e) => {
            v.err(&at.key("path_prefix"), e);
            // The template is still checked, at the levels it would have.
            let levels = path_prefix.split('.').count();
            DeviceTemplate::check_below(levels, &tpl_text).map(|()| DeviceTemplate::default())
        }
    };
    let device_template = checked.unwrap_or_else(|e| {
        let msg = match &e {
            tsfiled_core::Error::Template {
                template, message, ..
            } => format!("template \"{template}\": {message}"),
            other => other.to_string(),
        };
        v.err(&at.key("device_template"), msg);
        DeviceTemplate::default()
    });
    LineProtocolMapping {
        path_prefix,
        device_template,
        precision: v.choice(precision, &at.key("precision"), TimeUnit::Nanos, PRECISIONS),
    }
}

#[cfg(test)]
mod tests {
    use crate::line_protocol::{parse_line_protocol, LineProtocolOptions};
    use crate::model::{FieldValue, TimeUnit};
    use tsfiled_core::{DeviceTemplate, TableLine};

    /// A table-mode template hands each line over as its database, measurement and tags in
    /// line order (escapes removed); field values and declared types are the parser's.
    #[test]
    fn a_table_template_keeps_measurement_and_tags() {
        let t = DeviceTemplate::table("root.lp", "lp");
        let b = parse_line_protocol(
            b"CPU,host=gw\\ 1,a=x.y usage=1.5,n=2i 7\nm,bad=\x1e v=1 8\nm v=t 9\n",
            &LineProtocolOptions {
                device_template: &t,
                precision: TimeUnit::Millis,
                stored_unit: TimeUnit::Millis,
                now: 0,
            },
        );
        assert_eq!(b.records.len(), 2, "{:?}", b.rejections);
        assert_eq!(b.rejections.len(), 1, "the reserved character is refused");
        let l = TableLine::decode(&b.records[0].device).unwrap();
        assert_eq!(
            (l.database, l.table, l.tags),
            ("lp", "CPU", vec![("host", "gw 1"), ("a", "x.y")])
        );
        assert_eq!(b.records[0].fields[0].value, FieldValue::Float(1.5));
        assert_eq!(b.records[0].time, 7);
        let l = TableLine::decode(&b.records[1].device).unwrap();
        assert_eq!((l.table, l.tags.len()), ("m", 0));
    }
}
