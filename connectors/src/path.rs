//! IoTDB 0.10 path rules as the sources apply them: validation, sanitizing (see
//! [`tsfiled_core::path`]) and the device-path template ([`DeviceTemplate`]), all defined in
//! `tsfiled-core` and re-exported here, so that the configuration refuses exactly the prefixes
//! and templates the sources would; plus the duplicate tag-key check of line protocol.

use std::collections::HashSet;

pub use tsfiled_core::path::{
    is_clean_measurement, is_node_char, sanitize_measurement, sanitize_node, sanitize_node_into,
    validate_device, validate_measurement, validate_node, MAX_DEVICE_BYTES, MAX_NODE_BYTES,
};
pub use tsfiled_core::DeviceTemplate;

/// Distinct keys check used by tests and callers that want to reject duplicate tag keys.
pub(crate) fn has_duplicate_keys<K: AsRef<str>, V>(tags: &[(K, V)]) -> bool {
    if tags.windows(2).all(|w| w[0].0.as_ref() < w[1].0.as_ref()) {
        return false;
    }
    if tags.len() < 8 {
        return tags
            .iter()
            .enumerate()
            .any(|(i, (k, _))| tags[..i].iter().any(|(k2, _)| k2.as_ref() == k.as_ref()));
    }
    let mut seen = HashSet::with_capacity(tags.len());
    !tags.iter().all(|(k, _)| seen.insert(k.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn sanitizing() {
        assert_eq!(sanitize_node("gw-1.local"), "gw_1_local");
        assert_eq!(sanitize_node(""), "_");
        assert_eq!(sanitize_node("/"), "_");
        assert_eq!(sanitize_node("root"), "_root");
        assert_eq!(sanitize_node("time"), "time");
        assert_eq!(sanitize_measurement("time"), "_time");
        assert_eq!(sanitize_node("1e3"), "_1e3");
        assert_eq!(sanitize_node("车间 A"), "车间_A");
        assert_eq!(sanitize_node("ü"), "_");
        let long = sanitize_node(&"x".repeat(1000));
        assert_eq!(long.len(), MAX_NODE_BYTES - 1);
        assert!(is_clean_measurement("usage_idle"));
        assert!(!is_clean_measurement("usage-idle"));
        assert!(!is_clean_measurement("time"));
    }

    #[test]
    fn duplicate_keys() {
        assert!(has_duplicate_keys(&[("a", "1"), ("a", "2")]));
        assert!(!has_duplicate_keys(&[("a", "1"), ("b", "2")]));
        let many: Vec<(String, String)> = (0..10).map(|i| (format!("k{i}"), "v".into())).collect();
        let mut refs: Vec<(&str, &str)> =
            many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert!(!has_duplicate_keys(&refs));
        refs.push(("k3", "x"));
        assert!(has_duplicate_keys(&refs));
    }

    const NODES: &[&str] = &[
        "a", "x1", "12", "root", "Root", "time", "1e5", "2E0", "e5", "a-b", "", "工厂",
    ];
    const TEMPLATE_NODES: &[&str] = &[
        "{measurement}",
        "{host}",
        "{tags}",
        "x{host}",
        "1e{host}",
        "{host}-x",
        "a",
        "root",
        "1e5",
        "a-b",
        "",
    ];

    fn pick(from: &'static [&'static str], len: std::ops::Range<usize>) -> BoxedStrategy<String> {
        proptest::collection::vec(proptest::sample::select(from), len)
            .prop_map(|v| v.join("."))
            .boxed()
    }

    proptest! {
        /// The configuration accepts a line-protocol `path_prefix` and `device_template`
        /// exactly when the connector builds a template from them.
        #[test]
        fn configuration_accepts_what_line_templates_accept(
            below in pick(NODES, 0..3),
            template in pick(TEMPLATE_NODES, 1..4),
        ) {
            let prefix = if below.is_empty() { "root".to_string() } else { format!("root.{below}") };
            let first_level = prefix.split('.').count();
            let config = tsfiled_core::path::check_prefix(&prefix, true).is_ok()
                && DeviceTemplate::check_below(first_level, &template).is_ok();
            let connector = DeviceTemplate::with_prefix(&prefix, &template);
            prop_assert_eq!(config, connector.is_ok(), "{} {}: {:?}", prefix, template, connector);
        }

        /// The same for a CSV `path_prefix` and `device_template`.
        #[test]
        fn configuration_accepts_what_csv_paths_accept(
            below in pick(NODES, 0..3),
            fixed in pick(NODES, 1..3),
        ) {
            let prefix = if below.is_empty() { "root".to_string() } else { format!("root.{below}") };
            prop_assert_eq!(
                tsfiled_core::path::check_prefix(&prefix, false).is_ok(),
                validate_device(&prefix).is_ok()
            );
            // A template of fixed nodes renders to itself, which the parser validates.
            let template = format!("root.{fixed}.{{file_stem}}");
            let config = tsfiled_core::Template::parse_csv_device(&template).is_ok();
            prop_assert_eq!(config, validate_device(&format!("root.{fixed}.f")).is_ok(), "{}", template);
        }

        #[test]
        fn sanitized_nodes_validate(raw in any::<String>()) {
            let n = sanitize_node(&raw);
            prop_assert_eq!(validate_node(&n, 1), Ok(()));
            prop_assert_eq!(validate_device(&format!("root.{n}")), Ok(()));
            let m = sanitize_measurement(&raw);
            prop_assert_eq!(validate_measurement(&m), Ok(()));
        }

        #[test]
        fn valid_nodes_are_kept(raw in "[a-zA-Z_\u{4e00}-\u{4e10}][a-zA-Z0-9_\u{4e00}-\u{4e10}]{0,20}") {
            prop_assume!(validate_measurement(&raw).is_ok());
            prop_assert_eq!(sanitize_measurement(&raw), raw);
        }

        #[test]
        fn rendered_templates_validate(
            m in any::<String>(),
            tags in proptest::collection::btree_map(any::<String>(), any::<String>(), 0..5),
        ) {
            let tags: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let t = DeviceTemplate::default();
            let mut out = String::new();
            t.render(&m, &tags, &mut out).unwrap();
            prop_assert_eq!(validate_device(&out), Ok(()));
            prop_assert_eq!(out.split('.').count(), 3 + tags.len());
        }
    }
}
