//! Opens arbitrary bytes as a TsFile and reads everything: metadata, the index tree,
//! every series (full and time-range queries), the sequential walk with every page
//! decoded, the canonical dump and the recovery scan. Any panic is a bug.
//!
//! Seed `fuzz/corpus/reader/` with the golden files under 16 KiB, then (from `fuzz/`):
//! `cargo +nightly fuzz run reader corpus/reader -- -max_len=32768 -malloc_limit_mb=512`

#![no_main]

use libfuzzer_sys::fuzz_target;
use tsfile::file::reader::{recover, PageData, SequentialWalk, TsFileReader, WalkEvent};

fuzz_target!(|data: &[u8]| {
    let mut page = PageData::new(tsfile::DataType::INT32);
    if let Ok(reader) = TsFileReader::open(data) {
        let _ = reader.timeseries_metadata("root.nope", "s1");
        let _ = reader.device_series("root.nope");
        if let Ok(tree) = reader.index_tree() {
            for d in &tree.devices {
                let _ = reader.device_series(&d.device);
                for (_, ts) in &d.series {
                    let _ = reader.timeseries_metadata(&d.device, &ts.measurement);
                    if let Ok(mut sr) = reader.series_reader_for(&d.device, ts) {
                        while let Ok(true) = sr.next_page(&mut page) {}
                    }
                    if let Ok(q) = reader.series_reader_for(&d.device, ts) {
                        let mid = ts.statistics.start_time / 2 + ts.statistics.end_time / 2;
                        q.with_time_range(mid, i64::MAX).points().for_each(drop);
                    }
                }
            }
        }
        let mut w = reader.walk();
        while let Some(Ok(ev)) = w.next() {
            if let WalkEvent::Page(p) = ev {
                let _ = w.decode_page(&p, &mut page);
            }
        }
        let mut out = Vec::new();
        let _ = tsfile::tools::dump::dump(&reader, &mut out);
    }
    let mut w = SequentialWalk::new(data);
    while let Some(Ok(ev)) = w.next() {
        if let WalkEvent::Page(p) = ev {
            let _ = w.decode_page(&p, &mut page);
        }
    }
    if let Ok(r) = recover(data) {
        assert!(r.truncate_at <= data.len() as u64);
        assert!(r.truncate_at >= 12);
    }
});
