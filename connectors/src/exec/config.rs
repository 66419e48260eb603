//! The `exec` source's `[[pipeline.source]]` table, its validation and its settings.

use std::path::PathBuf;
use std::time::Duration;

use tsfiled_core::{config_table, ByteSize, Human, KeyPath, Validator};

use crate::source::{line_mapping, LineProtocolMapping, SourceEnv, SourceTable};

config_table! {
    /// `type = "exec"`: a long-running program whose standard output carries the points.
    pub struct ExecTable {
        /// Name of the source, unique in its pipeline.
        #[key("name", "string", "the source type (\"exec\")")]
        name: Option<String>,
        /// The program and its arguments, e.g. `["/usr/local/bin/read-plc", "--port", "502"]`.
        /// Run directly (no shell); a relative program name is looked up in `PATH`.
        #[key("command", "array of strings", "required")]
        command: Option<Vec<String>>,
        /// What the program writes to its standard output: `"line"` (InfluxDB line protocol,
        /// one point per line) or `"iotdb-json"` (one IoTDB JSON document per line).
        #[key("format", "\"line\" | \"iotdb-json\"", "\"line\"")]
        format: Option<String>,
        /// For `format = "line"`: path prefix of the device paths.
        #[key("path_prefix", "IoTDB path", "\"root.exec\"")]
        path_prefix: Option<String>,
        /// For `format = "line"`: device path below `path_prefix`, as in the http source.
        #[key("device_template", "template", "\"{measurement}.{tags}\"")]
        device_template: Option<String>,
        /// For `format = "line"`: unit of line-protocol timestamps.
        #[key("precision", "\"ns\" | \"us\" | \"ms\" | \"s\"", "\"ns\"")]
        precision: Option<String>,
        /// Environment variables added to the daemon's for the program, as `"NAME=value"`.
        #[key("env", "array of strings", "[]")]
        env: Option<Vec<String>>,
        /// Working directory of the program (default: the daemon's).
        #[key("working_dir", "path", "none")]
        working_dir: Option<String>,
        /// Delay before the first restart after the program exited or could not be started;
        /// doubles with each restart in a row, up to `restart_max_delay`.
        #[key("restart_delay", "duration", "\"1s\"")]
        restart_delay: Option<Human>,
        /// Longest delay between restarts. A program that ran at least this long restarts
        /// after `restart_delay` again.
        #[key("restart_max_delay", "duration", "\"30s\"")]
        restart_max_delay: Option<Human>,
        /// Longest output line; a longer one is dropped (and counted) without buffering it.
        #[key("max_line_size", "size", "\"1MiB\"")]
        max_line_size: Option<Human>,
        /// On stop (shutdown, reload): how long the program has to exit after SIGTERM before it
        /// is killed.
        #[key("stop_timeout", "duration", "\"5s\"")]
        stop_timeout: Option<Human>,
    }
}

/// What the program writes to its standard output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecFormat {
    /// InfluxDB line protocol.
    Line(LineProtocolMapping),
    /// IoTDB JSON, one document per line (timestamps in milliseconds).
    IotdbJson,
}

/// The validated settings of an `exec` source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSourceConfig {
    /// Program and arguments (at least the program).
    pub command: Vec<String>,
    /// Output format.
    pub format: ExecFormat,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub working_dir: Option<PathBuf>,
    /// First restart delay.
    pub restart_delay: Duration,
    /// Restart delay cap.
    pub restart_max_delay: Duration,
    /// Longest output line.
    pub max_line_size: ByteSize,
    /// Grace between SIGTERM and SIGKILL.
    pub stop_timeout: Duration,
}

impl ExecSourceConfig {
    /// Settings for `command` with every other key at its default.
    pub fn new(command: Vec<String>, format: ExecFormat) -> ExecSourceConfig {
        ExecSourceConfig {
            command,
            format,
            env: Vec::new(),
            working_dir: None,
            restart_delay: Duration::from_secs(1),
            restart_max_delay: Duration::from_secs(30),
            max_line_size: ByteSize::mib(1),
            stop_timeout: Duration::from_secs(5),
        }
    }
}

impl SourceTable for ExecTable {
    const TYPE: &'static str = "exec";
    const SUMMARY: &'static str = "a program whose standard output carries the points";
    const EXAMPLE: &'static str =
        "command = [\"/usr/local/bin/read-sensors\", \"--interval\", \"1s\"]\n";
    type Settings = ExecSourceConfig;

    fn validate(
        &self,
        v: &mut Validator<'_>,
        at: &KeyPath,
        env: &SourceEnv<'_>,
    ) -> Option<ExecSourceConfig> {
        let before = v.diags.len();
        let command = match v.present(&self.command, at, "command") {
            None => Vec::new(),
            Some(c) if c.is_empty() || c[0].trim().is_empty() => {
                v.err(
                    &at.key("command"),
                    "the first element must name the program, e.g. [\"/usr/local/bin/reader\"]",
                );
                Vec::new()
            }
            Some(c) => c.clone(),
        };
        let line = v.choice(
            &self.format,
            &at.key("format"),
            true,
            &[("line", true), ("iotdb-json", false)],
        );
        let format = if line {
            ExecFormat::Line(line_mapping(
                v,
                &self.path_prefix,
                &self.device_template,
                &self.precision,
                at,
                "root.exec",
                env.line_protocol_model,
            ))
        } else {
            let why = "with format = \"iotdb-json\"";
            v.not_with(self.path_prefix.is_some(), &at.key("path_prefix"), why);
            v.not_with(
                self.device_template.is_some(),
                &at.key("device_template"),
                why,
            );
            v.not_with(self.precision.is_some(), &at.key("precision"), why);
            ExecFormat::IotdbJson
        };
        let mut env = Vec::new();
        for (i, e) in self.env.iter().flatten().enumerate() {
            match e.split_once('=') {
                Some((k, val)) if !k.is_empty() && !k.contains('\0') && !val.contains('\0') => {
                    env.push((k.to_string(), val.to_string()))
                }
                _ => v.err(&at.key("env").index(i), format!("{e:?} is not NAME=value")),
            }
        }
        let working_dir = v
            .nonempty(&self.working_dir, &at.key("working_dir"))
            .map(PathBuf::from);
        let (restart_delay, restart_max_delay) = v.backoff(
            (&self.restart_delay, &self.restart_max_delay),
            at,
            ["restart_delay", "restart_max_delay"],
            [Duration::from_secs(1), Duration::from_secs(30)],
        );
        let max_line_size = v.size_min(
            &self.max_line_size,
            &at.key("max_line_size"),
            ByteSize::mib(1),
            ByteSize(16),
        );
        let stop_timeout = v.positive_duration(
            &self.stop_timeout,
            &at.key("stop_timeout"),
            Duration::from_secs(5),
        );
        (v.diags.len() == before).then_some(ExecSourceConfig {
            command,
            format,
            env,
            working_dir,
            restart_delay,
            restart_max_delay,
            max_line_size,
            stop_timeout,
        })
    }
}

impl ExecSourceConfig {
    /// The table with every default written out.
    pub(super) fn table(&self, name: &str) -> ExecTable {
        let dur = |d: Duration| Some(Human::Text(tsfiled_core::format_duration(d)));
        let mut t = ExecTable {
            name: Some(name.to_string()),
            command: Some(self.command.clone()),
            format: Some(
                match self.format {
                    ExecFormat::Line(_) => "line",
                    ExecFormat::IotdbJson => "iotdb-json",
                }
                .to_string(),
            ),
            env: Some(self.env.iter().map(|(k, v)| format!("{k}={v}")).collect()),
            working_dir: self
                .working_dir
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            restart_delay: dur(self.restart_delay),
            restart_max_delay: dur(self.restart_max_delay),
            max_line_size: Some(Human::Text(self.max_line_size.to_string())),
            stop_timeout: dur(self.stop_timeout),
            ..ExecTable::default()
        };
        if let ExecFormat::Line(m) = &self.format {
            (t.path_prefix, t.device_template, t.precision) = m.keys();
        }
        t
    }
}
