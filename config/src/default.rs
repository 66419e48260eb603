//! The embedded default configuration, used by `tsfiled run` without `--config`.

/// The default configuration: one pipeline `default` with an HTTP push source on
/// 127.0.0.1:8080, metrics on the same listener, data under `./data`. No broker needed.
pub const DEFAULT_CONFIG: &str = r#"# tsfiled: the embedded default configuration.
# `tsfiled check-config FILE` prints the effective configuration with every default.

# Sealed TsFiles, the write-ahead log and state live here (`--data-dir` overrides it).
data_dir = "./data"
# A stop (SIGTERM/SIGINT) makes everything durable and seals open files within this time.
shutdown_timeout = "30s"

[http]
# Push endpoints, /metrics, /health, /ready and the status page (`--http-listen` overrides it;
# port 0 picks a free port).
listen = "127.0.0.1:8080"
# No bearer tokens and no users: anyone who can reach the address may push. Set `tokens` or
# `token_file`, or Basic users ([[http.user]] or `user_file`), before listening on another
# interface.
max_body_size = "16MiB"
max_decompressed_size = "64MiB"

[metrics]
# Prometheus text format on the HTTP listener.
path = "/metrics"

[log]
level = "info"
format = "text"   # or "json"
color = "auto"    # colours only on a terminal, never in journald

[[pipeline]]
name = "default"

[pipeline.storage]
# Files go to ./data/sequence/<storage group>/0/, e.g. root.sg for root.sg.d1.s1.
storage_group_level = 1
time_precision = "ms"
memtable_budget = "64MiB"
seal_size = "256MiB"
seal_age = "1h"
seal_idle = "10m"
# TsFile format 000002, which IoTDB 0.10 reads. For IoTDB 2.x (LOAD), set
# format_version = 4 (TsFile v4; see the README, "Loading into IoTDB 2.x").

# Types of new series are inferred on first sight (integers INT64, decimals DOUBLE). They
# start encoded INT64/INT32 TS_2DIFF, FLOAT/DOUBLE GORILLA, BOOLEAN RLE, TEXT PLAIN, all
# SNAPPY, and in format 2 get at their first flush of 256 points or more whichever lossless
# encoding and compression stores those points smallest (schema_defaults.choose_encoding).
# Pin series with rules such as:
#   [[pipeline.schema]]
#   pattern = "root.plant.**.status"
#   type = "INT32"
#   encoding = "RLE"

[[pipeline.source]]
# POST /ingest/iotdb-json (IoTDB JSON), POST /write, /api/v2/write (InfluxDB line protocol) and
# IoTDB's REST write API (POST /rest/v2/insertTablet, /rest/v2/insertRecords, /rest/v1/insertTablet).
type = "http"
name = "http"
# Line protocol `cpu,host=gw1 usage=0.5` becomes root.lp.cpu.gw1.usage.
path_prefix = "root.lp"
device_template = "{measurement}.{tags}"
"#;
