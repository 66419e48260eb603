//! `[[pipeline]]`: storage, schema and sources of one pipeline; each source table is validated
//! by its source type.

use std::path::Path;

use tsfiled_connectors::source::SourceEnv;
use tsfiled_core::Validator as V;

use super::schema::{validate_rule, validate_schema_defaults};
use super::storage::validate_storage;
use crate::error::KeyPath;
use crate::model::*;
use crate::raw::*;

pub(super) fn validate_pipeline(
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
    let v4 = storage.format_version == FormatVersion::V4;
    let defaults = validate_schema_defaults(
        v,
        &rp.schema_defaults.clone().unwrap_or_default(),
        &pp.key("schema_defaults"),
        v4,
    );
    let mut rules: Vec<SchemaRule> = Vec::new();
    for (i, r) in rp.schema.clone().unwrap_or_default().iter().enumerate() {
        let rpath = pp.key("schema").index(i);
        if let Some(rule) = validate_rule(v, r, &rpath, &defaults, v4) {
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
        line_protocol_model: storage.line_protocol_model,
    };
    let settings = s.0.validate(v, sp, &env)?;
    name_ok.then_some(SourceConfig { name, settings })
}
