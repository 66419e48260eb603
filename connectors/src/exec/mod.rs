//! The `exec` source: runs a program (in the manner of Telegraf's `execd` input) and ingests
//! what it writes to its standard output, InfluxDB line protocol or IoTDB JSON, one point or
//! document per line.
//!
//! - The program is started with the source and restarted whenever it exits or cannot be
//!   started, after a delay that doubles from `restart_delay` up to `restart_max_delay`
//!   (back to `restart_delay` after a run at least that long).
//! - Its standard error is logged line by line (level warn, with the source's name).
//! - On shutdown and on a reload that changes or removes the source, the program gets SIGTERM
//!   and, if still running after `stop_timeout`, SIGKILL.
//! - Lines are gathered while more are already buffered and handed to the pipeline as one
//!   batch; while the pipeline is full the source stops reading, so the program blocks on its
//!   full pipe (backpressure).
//!
//! **Delivery: at most once.** A pipe has no acknowledgement: a line read from the program's
//! output is gone from it, so points read but not yet durable when the daemon stops or
//! crashes are lost. Programs that need at-least-once delivery should write files for the
//! `csv` source or publish to MQTT with QoS 1 instead.

mod config;
mod run;

pub use config::{ExecFormat, ExecSourceConfig, ExecTable};

use crate::source::{SourceContext, SourceFuture, SourceSettings};

impl SourceSettings for ExecSourceConfig {
    type Table = ExecTable;

    fn to_table(&self, name: &str, _secret: &dyn Fn(&str) -> String) -> ExecTable {
        self.table(name)
    }

    fn start(&self, cx: SourceContext) -> SourceFuture {
        Box::pin(run::run(self.clone(), cx))
    }
}
