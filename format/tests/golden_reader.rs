//! Reader behaviour on golden files: path lookups read only the nodes on the path,
//! missing names never resolve to neighbours, time-range queries skip what their
//! statistics exclude, walk events tile the data section, and the recovery scan
//! rebuilds the stored chunk metadata.

mod golden_common;

use golden_common::fixture;
use std::cell::RefCell;
use tsfile::basic::Value;
use tsfile::file::reader::{recover, PageData, Source, TsFileReader, WalkEvent};
use tsfile::Result;

/// An in-memory source that records every read.
struct Recording {
    bytes: Vec<u8>,
    reads: RefCell<Vec<(u64, usize)>>,
}

impl Source for Recording {
    fn size(&self) -> Result<u64> {
        Ok(self.bytes.len() as u64)
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.reads.borrow_mut().push((offset, buf.len()));
        self.bytes.as_slice().read_exact_at(offset, buf)
    }
}

fn recording(name: &str) -> TsFileReader<Recording> {
    TsFileReader::open(Recording {
        bytes: fixture(name, "tsfile"),
        reads: RefCell::new(Vec::new()),
    })
    .unwrap()
}

fn take_reads(r: &TsFileReader<Recording>) -> Vec<(u64, usize)> {
    std::mem::take(&mut *r.source().reads.borrow_mut())
}

#[test]
fn lookup_reads_only_the_path() {
    // 22 500 series under a 5-level index (degree 10).
    let r = recording("index_150dev_150meas_deg10");
    take_reads(&r);
    let ts = r
        .timeseries_metadata("root.idx.d123", "s077")
        .unwrap()
        .expect("series exists");
    assert_eq!(ts.measurement, "s077");
    let reads = take_reads(&r);
    // Root is in memory; then INTERNAL_DEVICE, LEAF_DEVICE, device top
    // (INTERNAL_MEASUREMENT), LEAF_MEASUREMENT and one run of TimeseriesMetadata.
    assert_eq!(reads.len(), 5, "{reads:?}");
    let bytes: usize = reads.iter().map(|(_, n)| n).sum();
    assert!(bytes < 2000, "read {bytes} bytes for one lookup");
    // Every series of the file is found, and each lookup agrees with the full walk.
    let tree = r.index_tree().unwrap();
    assert_eq!(tree.series_count(), 22_500);
    for d in tree.devices.iter().step_by(7) {
        for (_, ts) in d.series.iter().step_by(11) {
            let found = r
                .timeseries_metadata(&d.device, &ts.measurement)
                .unwrap()
                .unwrap();
            assert_eq!(found.chunk_metadata_offset, ts.chunk_metadata_offset);
        }
    }
}

#[test]
fn missing_names_do_not_resolve_to_neighbours() {
    for name in [
        "sensor_typical",
        "index_150dev_1meas_deg10",
        "index_1100dev_3meas_deg1024",
    ] {
        let r = TsFileReader::open(fixture(name, "tsfile")).unwrap();
        let tree = r.index_tree().unwrap();
        for d in tree.devices.iter().take(20) {
            let m = &d.series[0].1.measurement;
            // Java's floor lookup would descend into `d` for these device names.
            for missing in [format!("{}x", d.device), format!("{}.zz", d.device)] {
                assert_eq!(r.device_series(&missing).unwrap(), None, "{name} {missing}");
                assert_eq!(r.timeseries_metadata(&missing, m).unwrap(), None, "{name}");
            }
            assert!(r
                .timeseries_metadata(&d.device, &format!("{m}_"))
                .unwrap()
                .is_none());
            assert!(r.timeseries_metadata(&d.device, "").unwrap().is_none());
            let series = r.device_series(&d.device).unwrap().unwrap();
            assert_eq!(series.len(), d.series.len());
        }
        assert!(r.timeseries_metadata("", "").unwrap().is_none());
        assert!(r.timeseries_metadata("zzzz", "s000").unwrap().is_none());
    }
}

#[test]
fn time_range_query_skips_chunks_and_pages() {
    let r = recording("struct_many_pages");
    let dev = "root.pages.d1";
    let tree = r.index_tree().unwrap();
    for (_, ts) in &tree.devices[0].series {
        let all: Vec<(i64, Value)> = r
            .series_reader(dev, &ts.measurement)
            .unwrap()
            .unwrap()
            .points()
            .map(|p| p.unwrap())
            .collect();
        let (s, e) = (ts.statistics.start_time, ts.statistics.end_time);
        let lo = s + (e - s) / 3;
        let hi = s + (e - s) / 2;
        let q: Vec<(i64, Value)> = r
            .query(dev, &ts.measurement, lo, hi)
            .unwrap()
            .unwrap()
            .points()
            .map(|p| p.unwrap())
            .collect();
        let want: Vec<_> = all
            .iter()
            .filter(|(t, _)| (lo..=hi).contains(t))
            .cloned()
            .collect();
        assert!(!want.is_empty());
        assert_eq!(q.len(), want.len());
        assert!(q
            .iter()
            .zip(&want)
            .all(|(a, b)| a.0 == b.0 && a.1.bit_eq(&b.1)));
        // Pages outside the range are not decoded: count pages returned.
        let mut sr = r.query(dev, &ts.measurement, lo, hi).unwrap().unwrap();
        let mut page = PageData::new(ts.data_type);
        let mut pages = 0;
        while sr.next_page(&mut page).unwrap() {
            pages += 1;
            assert!(page.times.iter().all(|t| (lo..=hi).contains(t)));
        }
        let total = ts.statistics.count as usize;
        if total > 10 {
            assert!(
                pages < total.div_ceil(10),
                "{}: {pages} pages decoded",
                ts.measurement
            );
        }
        // A range outside the series reads no chunk at all.
        take_reads(&r);
        let mut sr = r
            .query(dev, &ts.measurement, e + 1, i64::MAX)
            .unwrap()
            .unwrap();
        let before = take_reads(&r).len();
        assert!(!sr.next_page(&mut page).unwrap());
        assert_eq!(
            take_reads(&r).len(),
            0,
            "no chunk read (lookup took {before} reads)"
        );
    }
}

#[test]
fn unsorted_points_keep_file_order_and_duplicates() {
    let r = TsFileReader::open(fixture("struct_unsorted", "tsfile")).unwrap();
    let times: Vec<i64> = r
        .series_reader("root.unsorted.d1", "l")
        .unwrap()
        .unwrap()
        .points()
        .map(|p| p.unwrap().0)
        .collect();
    assert_eq!(&times[..9], &[100, 50, 200, 150, 150, 300, 10, 300, 250]);
    assert_eq!(&times[9..], &[120, 120, 400, 5, 160]);
    let q: Vec<i64> = r
        .query("root.unsorted.d1", "l", 120, 150)
        .unwrap()
        .unwrap()
        .points()
        .map(|p| p.unwrap().0)
        .collect();
    assert_eq!(q, [150, 150, 120, 120]);
}

#[test]
fn walk_events_tile_the_data_section() {
    for name in [
        "struct_versions",
        "sensor_typical",
        "struct_groups_auto",
        "struct_empty",
    ] {
        let r = TsFileReader::open(fixture(name, "tsfile")).unwrap();
        let mut pos = 12u64;
        let mut chunk_end = None;
        for ev in r.walk() {
            let ev = ev.unwrap();
            assert_eq!(ev.offset(), pos, "{name}: {ev:?}");
            pos += ev.size();
            match &ev {
                WalkEvent::ChunkHeader {
                    offset,
                    header_size,
                    header,
                } => {
                    chunk_end = Some(offset + header_size + header.data_size as u64);
                }
                WalkEvent::Page(p) => {
                    assert_eq!(p.body_offset, p.offset + p.header_size);
                    assert!(pos <= chunk_end.unwrap());
                }
                WalkEvent::ChunkGroupFooter {
                    offset,
                    group_offset,
                    footer,
                    ..
                } => {
                    assert_eq!(footer.data_size as u64, offset - group_offset);
                }
                WalkEvent::Version { .. } => {}
                WalkEvent::Separator { offset } => assert_eq!(*offset, r.meta_offset()),
            }
        }
        assert_eq!(pos, r.meta_offset() + 1, "{name}");
    }
}

#[test]
fn recovery_rebuilds_the_stored_chunk_metadata() {
    for name in [
        "struct_versions",
        "struct_groups_explicit",
        "sensor_typical",
        "struct_tablet",
    ] {
        let bytes = fixture(name, "tsfile");
        let r = TsFileReader::open(&bytes[..]).unwrap();
        let rec = recover(&bytes[..]).unwrap();
        assert!(rec.has_tail_magic);
        assert_eq!(rec.separator_at, Some(r.meta_offset()));
        assert_eq!(rec.truncate_at, r.meta_offset());
        assert!(rec.stopped_by.is_none());
        assert_eq!(rec.chunk_count(), r.metadata().total_chunk_num as usize);
        // Recovered version info equals the stored one (unless it is the default).
        if rec.version_info.is_empty() {
            assert_eq!(r.metadata().version_info, [(i64::MAX, 0)]);
        } else {
            assert_eq!(rec.version_info, r.metadata().version_info);
        }
        for g in &rec.chunk_groups {
            let series = r.device_series(&g.device).unwrap().unwrap();
            for c in &g.chunks {
                let ts = series
                    .iter()
                    .find(|t| t.measurement == c.metadata.measurement)
                    .unwrap();
                let stored = r.chunk_metadata_list(ts).unwrap();
                let cm = stored
                    .iter()
                    .find(|m| m.offset_of_chunk_header == c.metadata.offset_of_chunk_header)
                    .unwrap();
                assert_eq!(cm.measurement, c.metadata.measurement);
                assert!(cm.statistics.bit_eq(&c.metadata.statistics), "{name}");
            }
        }
        // Without its tail the file recovers to the end of the data section's last
        // chunk group (the separator is gone).
        let cut = r.meta_offset() as usize;
        let rec2 = recover(&bytes[..cut]).unwrap();
        assert_eq!(rec2.truncate_at, r.meta_offset());
        assert_eq!(rec2.chunk_groups, rec.chunk_groups);
        assert!(rec2.stopped_by.is_some());
    }
}

#[test]
fn struct_versions_versions_apply_to_earlier_chunks() {
    let r = TsFileReader::open(fixture("struct_versions", "tsfile")).unwrap();
    let vi = r.metadata().version_info.clone();
    assert_eq!(vi, [(887, 10), (1225, 20), (2103, 30)]);
    assert_eq!(r.chunk_version(12), 10);
    assert_eq!(r.chunk_version(886), 10);
    assert_eq!(r.chunk_version(887), 20);
    assert_eq!(r.chunk_version(2103), 0);
}

#[test]
fn open_from_a_file() {
    let dir = golden_common::fixture_dir();
    let r = TsFileReader::open_path(dir.join("struct_names.tsfile")).unwrap();
    let devices = r.devices().unwrap();
    assert_eq!(devices.len(), 7);
    assert!(devices.contains(&"root.sg.设备".to_string()));
    let n: usize = devices
        .iter()
        .map(|d| {
            r.series_reader(d, "温度")
                .unwrap()
                .unwrap()
                .points()
                .collect::<tsfile::Result<Vec<_>>>()
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(n, 21);
}
