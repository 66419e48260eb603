//! `[pipeline.storage]`.

use std::path::Path;
use std::time::Duration;

use tsfiled_core::{
    format_duration, ByteSize, LineProtocolModel, TimeUnit, Validator as V, PRECISIONS,
};

use crate::error::KeyPath;
use crate::model::{FormatVersion, HttpConfig, StorageConfig};
use crate::raw::RawStorage;

pub(super) fn validate_storage(
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
        TimeUnit::Millis,
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
    let line_protocol_model = v.choice(
        &rs.line_protocol_model,
        &sp.key("line_protocol_model"),
        LineProtocolModel::Tree,
        LineProtocolModel::CHOICES,
    );
    if line_protocol_model == LineProtocolModel::Table && format_version != FormatVersion::V4 {
        v.err(
            &sp.key("line_protocol_model"),
            "the table model is written in TsFile v4 only: set format_version = 4 (IoTDB 2.x)",
        );
    }
    StorageConfig {
        line_protocol_model,
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
