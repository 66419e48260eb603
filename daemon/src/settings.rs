//! The daemon's runtime settings, mapped from the validated configuration
//! (`tsfiled-config`), plus command-line overrides.

use std::path::PathBuf;
use std::time::Duration;

use tsfiled_config as cfg;
use tsfiled_connectors::TimeUnit;

use crate::engine::schema::{SchemaRule, TypeDefaults};
use crate::pipeline::PipelineOptions;

/// Everything `tsfiled run` needs.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The pipelines (at least one).
    pub pipelines: Vec<PipelineSettings>,
    /// The HTTP listener (push endpoints, health, metrics), as configured.
    pub http: cfg::HttpConfig,
    /// Metrics endpoint, as configured.
    pub metrics: cfg::MetricsConfig,
    /// Logging, as configured.
    pub log: cfg::LogConfig,
    /// Shutdown deadline: stop intake, make durable, seal, exit.
    pub shutdown_timeout: Duration,
}

/// One pipeline.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// Storage, WAL and schema settings.
    pub options: PipelineOptions,
    /// Stored time precision (default ms, as IoTDB).
    pub time_precision: TimeUnit,
    /// The sources feeding this pipeline, as validated by their plugins.
    pub sources: Vec<cfg::SourceConfig>,
}

impl PipelineSettings {
    /// What its sources run with: the stored time unit and the pipeline's state directory.
    pub fn source_env(&self) -> (TimeUnit, PathBuf) {
        (self.time_precision, self.options.engine.state_dir.clone())
    }
}

fn size(b: cfg::ByteSize) -> u64 {
    b.0
}

impl Settings {
    /// How long shutdown waits for open HTTP connections: a third of the shutdown timeout, at
    /// most 5 s.
    pub fn http_shutdown_grace(&self) -> Duration {
        Duration::from_secs(5).min(self.shutdown_timeout / 3)
    }

    /// Maps a validated configuration onto runtime settings; fails with
    /// [`Error::Config`](crate::Error::Config).
    pub fn from_config(c: &cfg::Config) -> crate::Result<Settings> {
        Settings::map(c).map_err(crate::Error::Config)
    }

    fn map(c: &cfg::Config) -> Result<Settings, String> {
        let mut pipelines = Vec::new();
        for p in &c.pipelines {
            let st = &p.storage;
            let precision = st.time_precision;
            let mut o = PipelineOptions::new(&p.name, st.data_dir.clone());
            o.engine.state_dir = p.state_dir();
            o.engine.sg_level = st.storage_group_level as usize;
            o.engine.partition_interval = match st.time_partition {
                Some(d) => Some(st.time_precision.units_of(d).filter(|&n| n > 0).ok_or(
                    "time_partition_interval is not a whole number of time_precision units",
                )?),
                None => None,
            };
            o.engine.memtable_bytes = size(st.memtable_budget) as usize;
            o.engine.chunk_group_bytes = size(st.chunk_group_size) as usize;
            o.engine.file_max_bytes = size(st.seal_size);
            o.engine.file_max_age = st.seal_age;
            o.engine.file_idle = st.seal_idle;
            o.engine.tick =
                Duration::from_millis(500).min(st.seal_idle.max(Duration::from_millis(10)));
            o.engine.writer.page_size_bytes = size(st.page_size) as usize;
            o.engine.writer.max_points_per_page = st.max_points_per_page as usize;
            o.engine.writer.max_degree = st.max_index_degree as usize;
            o.engine.writer.bloom_error_rate = st.bloom_filter_error_rate;
            o.engine.format = st.format_version;
            o.wal.dir = st.wal_dir.clone();
            o.wal.max_bytes = size(st.wal_max_size);
            o.wal.commit_bytes = size(st.wal_commit_size) as usize;
            let d = &p.schema.defaults;
            o.defaults = TypeDefaults {
                integer: d.integer_type,
                float: d.float_type,
                boolean_encoding: d.boolean,
                int32_encoding: d.int32,
                int64_encoding: d.int64,
                float_encoding: d.float,
                double_encoding: d.double,
                text_encoding: d.text,
                compression: d.compression,
                choose: d.choose_encoding && st.format_version == cfg::FormatVersion::V2,
            };
            o.rules = p
                .schema
                .rules
                .iter()
                .map(|r| SchemaRule {
                    pattern: r.pattern.clone(),
                    data_type: Some(r.data_type),
                    encoding: Some(r.encoding),
                    compression: Some(r.compression),
                })
                .collect();
            pipelines.push(PipelineSettings {
                options: o,
                time_precision: precision,
                sources: p.sources.clone(),
            });
        }
        Ok(Settings {
            pipelines,
            http: c.http.clone(),
            metrics: c.metrics.clone(),
            log: c.log.clone(),
            shutdown_timeout: c.shutdown_timeout,
        })
    }

    /// The embedded default configuration (HTTP push and metrics on 127.0.0.1, data
    /// under `./data`).
    pub fn embedded_default() -> Settings {
        let c =
            cfg::Config::embedded_default().expect("the embedded default configuration is valid");
        Settings::from_config(&c).expect("the embedded default configuration maps")
    }

    /// The embedded default with a data directory and listen address (tests, tools).
    pub fn embedded_with(data_dir: &std::path::Path, listen: &str) -> Settings {
        let mut c =
            cfg::Config::embedded_default().expect("the embedded default configuration is valid");
        c = c.with_data_dir(data_dir).expect("data dir override");
        if let Ok(a) = listen.parse() {
            c = c.with_http_listen(a).expect("listen override");
        }
        Settings::from_config(&c).expect("the embedded default configuration maps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfg::ConfigName;
    use tsfile::{DataType, Encoding};

    /// The encoding the daemon runs a rule with when a configuration in `format` gives
    /// series of type `t` encoding `name`; `None` when the configuration refuses it.
    fn rule_encoding(t: DataType, name: &str, format: u8) -> Option<Encoding> {
        let text = format!(
            "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"http\"\n[pipeline.storage]\nformat_version = {format}\n[[pipeline.schema]]\npattern = \"root.a.b\"\ntype = \"{t}\"\nencoding = \"{name}\"\n"
        );
        let c = cfg::Config::from_toml_str(&text, "t.toml").ok()?;
        let s = Settings::from_config(&c).unwrap();
        s.pipelines[0].options.rules[0].encoding
    }

    /// What the configuration accepts, name for name in each format, is the format
    /// library's matrix: TsFile 0.10's names and `supports` in format 2, TsFile 2.x's names
    /// (`from_v4_name`) and `supports_v4` in format 4, without BOOLEAN RLE (which the C++
    /// library does not read back).
    #[test]
    fn encoding_matrices_are_the_format_library_s() {
        let mut accepted = [0, 0];
        for t in DataType::accepted() {
            for name in cfg::EncodingName::ALL.iter().map(|n| n.as_str()) {
                let v2 = name.parse::<Encoding>().ok().filter(|e| e.supports(t));
                assert_eq!(rule_encoding(t, name, 2), v2, "format 2: {t} {name}");
                let v4 = Encoding::from_v4_name(name)
                    .ok()
                    .filter(|e| e.supports_v4(t) && (t, *e) != (DataType::BOOLEAN, Encoding::RLE));
                assert_eq!(rule_encoding(t, name, 4), v4, "format 4: {t} {name}");
                accepted[0] += usize::from(v2.is_some());
                accepted[1] += usize::from(v4.is_some());
            }
        }
        // the matrices of the configuration reference
        assert_eq!(accepted, [2 + 4 + 4 + 4 + 4 + 1, 1 + 8 + 8 + 6 + 6 + 2]);
    }

    /// GORILLA is code 6 in format 000002 and code 8 in v4, where code 6 is GORILLA_V1
    /// and code 1 DICTIONARY (Apache TsFile 2.x's `TSEncoding`).
    #[test]
    fn encoding_names_follow_the_format() {
        use DataType as T;
        let code = |t, name, f| rule_encoding(t, name, f).map(|e| e.code());
        assert_eq!(code(T::DOUBLE, "GORILLA", 2), Some(6));
        assert_eq!(code(T::DOUBLE, "GORILLA", 4), Some(8));
        assert_eq!(code(T::TEXT, "DICTIONARY", 4), Some(1));
        assert_eq!(code(T::INT64, "ZIGZAG", 4), Some(9));
        assert_eq!(code(T::DOUBLE, "CHIMP", 4), Some(11));
        assert_eq!(code(T::FLOAT, "SPRINTZ", 4), Some(12));
        assert_eq!(code(T::INT32, "RLBE", 4), Some(13));
        assert_eq!(code(T::INT64, "TS_2DIFF", 4), Some(4));
        assert_eq!(code(T::FLOAT, "GORILLA_V1", 2), None);
        assert_eq!(code(T::FLOAT, "GORILLA_V1", 4), None);
        let v1 = cfg::EncodingName::parse_name("GORILLA_V1").unwrap();
        assert_eq!(v1.in_format(true).map(|e| e.code()), Some(6));
        // the defaults: FLOAT and DOUBLE are GORILLA, code 8 in v4
        let c = cfg::Config::from_toml_str(
            "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"http\"\n[pipeline.storage]\nformat_version = 4\n",
            "t.toml",
        )
        .unwrap();
        let d = &Settings::from_config(&c).unwrap().pipelines[0]
            .options
            .defaults;
        assert_eq!((d.float_encoding.code(), d.double_encoding.code()), (8, 8));
    }

    /// Encodings are chosen at the first flush by default in format 2 only
    /// (docs/configuration.md, `schema_defaults.choose_encoding`), and not when switched off.
    #[test]
    fn encodings_are_chosen_in_format_2_unless_switched_off() {
        let choose = |extra: &str| {
            let text = format!(
                "[[pipeline]]\nname = \"p\"\n[[pipeline.source]]\ntype = \"http\"\n{extra}"
            );
            let c = cfg::Config::from_toml_str(&text, "t.toml").unwrap();
            Settings::from_config(&c).unwrap().pipelines[0]
                .options
                .defaults
                .choose
        };
        assert!(choose(""));
        assert!(choose("[pipeline.storage]\nformat_version = 2\n"));
        assert!(!choose("[pipeline.storage]\nformat_version = 4\n"));
        assert!(!choose(
            "[pipeline.schema_defaults]\nchoose_encoding = false\n"
        ));
        assert!(!choose(
            "[pipeline.storage]\nformat_version = 4\n[pipeline.schema_defaults]\nchoose_encoding = true\n"
        ));
    }
}
