//! Feeds arbitrary bytes to the CSV parser as a whole file, in each format (IoTDB wide, IoTDB
//! by device, generic with a device column) and each time format. Parsing must end in a
//! summary or a file-level error, never a panic, and the rows and points it reports must add
//! up to what the chunks carried. The first byte picks the delimiter and time format.
//!
//! From `fuzz/`: `cargo +nightly fuzz run csv -- -max_len=65536`

#![no_main]

use libfuzzer_sys::fuzz_target;
use tsfiled_connectors::csv::{
    parse_reader, ColumnRef, CsvDevice, CsvFormat, CsvParseOptions, CsvRows, FileContext,
    GenericCsv, TimeFormat,
};

fuzz_target!(|data: &[u8]| {
    let Some((&knob, body)) = data.split_first() else {
        return;
    };
    let formats = [
        CsvFormat::IotdbWide,
        CsvFormat::IotdbDevice,
        CsvFormat::Generic(GenericCsv {
            header_rows: u32::from(knob & 1),
            time_column: ColumnRef::Index(0),
            device: CsvDevice::Column {
                column: ColumnRef::Index(1),
                path_prefix: Some("root.fz".to_string()),
            },
            value_columns: Vec::new(),
        }),
    ];
    let time_formats = [
        TimeFormat::Auto,
        TimeFormat::EpochS,
        TimeFormat::EpochNs,
        TimeFormat::Rfc3339,
        TimeFormat::Strftime("%Y-%m-%d %H:%M:%S%.f".to_string()),
    ];
    for format in formats {
        let opts = CsvParseOptions {
            rows: CsvRows {
                format,
                time_format: time_formats[usize::from(knob >> 1) % time_formats.len()].clone(),
                timezone: if knob & 0x40 != 0 {
                    "Europe/Berlin"
                } else {
                    "UTC"
                }
                .to_string(),
                delimiter: if knob & 0x80 != 0 { b';' } else { b',' },
                ..CsvRows::default()
            },
            max_batch_points: 64,
            max_record_bytes: 4096,
            ..CsvParseOptions::default()
        };
        let (mut rows, mut rejected_rows, mut points) = (0u64, 0u64, 0u64);
        let result = parse_reader(body, &opts, &FileContext::default(), |chunk| {
            assert_eq!(chunk.record_lines.len(), chunk.batch.records.len());
            assert_eq!(chunk.points, chunk.batch.point_count() as u64);
            rows += chunk.rows;
            rejected_rows += chunk.rejected_rows();
            points += chunk.points;
            Ok::<(), tsfiled_connectors::Error>(())
        });
        if let Ok(summary) = result {
            assert_eq!(summary.rows, rows);
            assert_eq!(summary.rejected_rows, rejected_rows);
            assert_eq!(summary.points, points);
        }
    }
});
