//! Checks every golden file against its `.meta.json` summary, and recomputes every
//! page, chunk and series statistics from the decoded points (bit-exact).

mod golden_common;

use golden_common::fixture;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};
use tsfile::basic::{Column, Value};
use tsfile::file::metadata::ChunkMetadata;
use tsfile::file::reader::{PageData, TsFileReader, WalkEvent};
use tsfile::statistics::Statistics;
use tsfile::tools::dump::value_text;
use tsfile::tools::javafmt::java_f64;

fn int(j: &Json, key: &str) -> i64 {
    j.get(key)
        .and_then(Json::as_i64)
        .unwrap_or_else(|| panic!("meta.json: integer {key:?} missing"))
}

/// What the sequential walk found, per file.
#[derive(Default)]
struct WalkSummary {
    chunk_groups: usize,
    chunks: usize,
    version_markers: usize,
    /// device -> number of chunk groups.
    groups_per_device: HashMap<String, i64>,
    /// chunk offset -> (pages, encoding, compression).
    chunk_pages: HashMap<u64, (i64, String, String)>,
    /// chunk offset -> statistics recomputed from the decoded points, per page merged.
    chunk_recomputed: HashMap<u64, Statistics>,
    points: usize,
}

fn update(stats: &mut Statistics, page: &PageData) {
    for i in 0..page.len() {
        let t = page.times[i];
        match &page.values {
            Column::Boolean(v) => stats.update_bool(t, v[i]),
            Column::Int32(v) => stats.update_i32(t, v[i]),
            Column::Int64(v) => stats.update_i64(t, v[i]),
            Column::Float(v) => stats.update_f32(t, v[i]),
            Column::Double(v) => stats.update_f64(t, v[i]),
            Column::Text(v) => stats.update_text(t, &v[i]),
        }
    }
}

fn walk(name: &str, reader: &TsFileReader<Vec<u8>>, decode: bool) -> WalkSummary {
    let mut s = WalkSummary::default();
    let mut walk = reader.walk();
    let mut current: Option<u64> = None;
    let mut page = PageData::new(tsfile::DataType::INT32);
    let mut separator = false;
    while let Some(ev) = walk.next() {
        let ev = ev.unwrap_or_else(|e| panic!("{name}: walk: {e}"));
        match ev {
            WalkEvent::ChunkHeader { offset, header, .. } => {
                s.chunks += 1;
                current = Some(offset);
                s.chunk_pages.insert(
                    offset,
                    (
                        0,
                        header.encoding.name().into(),
                        header.compression.name().into(),
                    ),
                );
                s.chunk_recomputed
                    .insert(offset, Statistics::new(header.data_type));
            }
            WalkEvent::Page(p) => {
                let c = current.expect("page inside a chunk");
                assert_eq!(p.chunk_offset, c);
                s.chunk_pages.get_mut(&c).unwrap().0 += 1;
                if decode {
                    walk.decode_page(&p, &mut page)
                        .unwrap_or_else(|e| panic!("{name}: page at {}: {e}", p.offset));
                    s.points += page.len();
                    let mut ps = Statistics::new(p.data_type);
                    update(&mut ps, &page);
                    assert!(
                        ps.bit_eq(&p.header.statistics),
                        "{name}: page at {}: recomputed {ps:?} != stored {:?}",
                        p.offset,
                        p.header.statistics
                    );
                    s.chunk_recomputed.get_mut(&c).unwrap().merge(&ps).unwrap();
                }
            }
            WalkEvent::ChunkGroupFooter { footer, .. } => {
                s.chunk_groups += 1;
                *s.groups_per_device.entry(footer.device).or_default() += 1;
            }
            WalkEvent::Version { .. } => s.version_markers += 1,
            WalkEvent::Separator { offset } => {
                assert_eq!(offset, reader.meta_offset());
                separator = true;
            }
        }
    }
    assert!(separator, "{name}: the walk ended at the separator");
    s
}

fn levels(reader: &TsFileReader<Vec<u8>>) -> Vec<(usize, usize, usize, BTreeMap<String, i64>)> {
    let tree = reader.index_tree().unwrap();
    let depth = tree.nodes.iter().map(|n| n.depth).max().unwrap_or(0);
    (0..=depth)
        .map(|d| {
            let nodes: Vec<_> = tree.nodes.iter().filter(|n| n.depth == d).collect();
            let mut types = BTreeMap::new();
            for n in &nodes {
                *types
                    .entry(n.node.node_type.name().to_string())
                    .or_insert(0) += 1;
            }
            (
                nodes.len(),
                nodes.iter().map(|n| n.node.children.len()).sum(),
                nodes
                    .iter()
                    .map(|n| n.node.children.len())
                    .max()
                    .unwrap_or(0),
                types,
            )
        })
        .collect()
}

/// Checks one file; `values` adds decoding, recomputed statistics and value columns.
fn check_file(name: &str, values: bool) {
    let bytes = fixture(name, "tsfile");
    let meta: Json = serde_json::from_slice(&fixture(name, "meta.json")).unwrap();
    let reader = TsFileReader::open(bytes.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let md = reader.metadata();

    assert_eq!(
        int(&meta, "file_length") as u64,
        reader.file_len(),
        "{name}"
    );
    assert_eq!(meta["magic"], "TsFile");
    assert_eq!(meta["version"], "000002");
    assert_eq!(
        int(&meta, "meta_offset") as u64,
        reader.meta_offset(),
        "{name}"
    );
    assert_eq!(
        int(&meta, "file_metadata_pos") as u64,
        reader.metadata_pos(),
        "{name}"
    );
    assert_eq!(
        int(&meta, "file_metadata_size") as u64,
        reader.metadata_size(),
        "{name}"
    );
    assert_eq!(
        int(&meta, "total_chunk_num"),
        md.total_chunk_num as i64,
        "{name}"
    );
    assert_eq!(
        int(&meta, "invalid_chunk_num"),
        md.invalid_chunk_num as i64,
        "{name}"
    );
    let vi: Vec<(i64, i64)> = meta["version_info"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_i64().unwrap(), p[1].as_i64().unwrap()))
        .collect();
    assert_eq!(vi, md.version_info, "{name}");
    let bf = reader.bloom_filter().expect("bloom filter");
    assert_eq!(
        int(&meta["bloom_filter"], "bytes") as usize,
        bf.serialized_bits_len()
    );
    assert_eq!(int(&meta["bloom_filter"], "size_bits") as usize, bf.size());
    assert_eq!(
        int(&meta["bloom_filter"], "hash_functions") as usize,
        bf.hash_count()
    );
    assert_eq!(
        meta["index_root_type"],
        md.metadata_index.node_type.name(),
        "{name}"
    );

    let lv = levels(&reader);
    let jl = meta["index_levels"].as_array().unwrap();
    assert_eq!(jl.len(), lv.len(), "{name}: index depth");
    for (j, (nodes, entries, max, types)) in jl.iter().zip(&lv) {
        assert_eq!(int(j, "nodes") as usize, *nodes, "{name} {j}");
        assert_eq!(int(j, "entries") as usize, *entries, "{name} {j}");
        assert_eq!(int(j, "max_entries") as usize, *max, "{name} {j}");
        let jt: BTreeMap<String, i64> = j["types"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_i64().unwrap()))
            .collect();
        assert_eq!(&jt, types, "{name} {j}");
    }

    let w = walk(name, &reader, values);
    assert_eq!(
        int(&meta, "chunk_groups") as usize,
        w.chunk_groups,
        "{name}"
    );
    assert_eq!(int(&meta, "chunks") as usize, w.chunks, "{name}");
    assert_eq!(w.chunks, md.total_chunk_num as usize, "{name}");
    assert_eq!(
        int(&meta, "version_markers") as usize,
        w.version_markers,
        "{name}"
    );

    let tree = reader.index_tree().unwrap();
    let mut devices: Vec<_> = tree.devices.iter().collect();
    devices.sort_by(|a, b| a.device.as_bytes().cmp(b.device.as_bytes()));
    assert_eq!(int(&meta, "device_count") as usize, devices.len(), "{name}");
    assert_eq!(
        int(&meta, "series_count") as usize,
        tree.series_count(),
        "{name}"
    );
    let jd = meta["devices"].as_array().unwrap();
    assert_eq!(jd.len(), devices.len());
    let mut referenced: HashMap<u64, usize> = HashMap::new();
    let mut total_points = 0i64;
    for (j, d) in jd.iter().zip(&devices) {
        assert_eq!(j["device"], d.device.as_str(), "{name}");
        assert_eq!(
            int(j, "chunk_groups"),
            w.groups_per_device.get(&d.device).copied().unwrap_or(0),
            "{name} {}",
            d.device
        );
        let mut series: Vec<_> = d.series.iter().map(|(_, ts)| ts).collect();
        series.sort_by(|a, b| a.measurement.as_bytes().cmp(b.measurement.as_bytes()));
        let rows = j["series"].as_array().unwrap();
        assert_eq!(rows.len(), series.len(), "{name} {}", d.device);
        for (row, ts) in rows.iter().zip(series) {
            let ctx = format!("{name} {}.{}", d.device, ts.measurement);
            // Path lookup through the index finds the same metadata.
            let found = reader
                .timeseries_metadata(&d.device, &ts.measurement)
                .unwrap()
                .unwrap_or_else(|| panic!("{ctx}: lookup"));
            assert_eq!(
                (
                    &found.measurement,
                    found.data_type,
                    found.chunk_metadata_offset,
                    found.chunk_metadata_size
                ),
                (
                    &ts.measurement,
                    ts.data_type,
                    ts.chunk_metadata_offset,
                    ts.chunk_metadata_size
                ),
                "{ctx}"
            );
            assert!(found.statistics.bit_eq(&ts.statistics), "{ctx}");
            assert!(reader
                .bloom_filter()
                .unwrap()
                .contains(&format!("{}.{}", d.device, ts.measurement)));
            assert_eq!(row[0], ts.measurement.as_str(), "{ctx}");
            assert_eq!(row[1], ts.data_type.name(), "{ctx}");
            let cms: Vec<ChunkMetadata> = reader.chunk_metadata_list(ts).unwrap();
            let mut encs = Vec::new();
            let mut comps = Vec::new();
            let mut pages = 0;
            let mut merged = Statistics::new(ts.data_type);
            let mut recomputed = Statistics::new(ts.data_type);
            for cm in &cms {
                let off = cm.offset_of_chunk_header as u64;
                *referenced.entry(off).or_default() += 1;
                let (p, e, c) = w.chunk_pages.get(&off).unwrap_or_else(|| {
                    panic!("{ctx}: chunk metadata points at {off}, where the walk found no chunk")
                });
                pages += p;
                if !encs.contains(e) {
                    encs.push(e.clone());
                }
                if !comps.contains(c) {
                    comps.push(c.clone());
                }
                merged.merge(&cm.statistics).unwrap();
                if values {
                    let rc = &w.chunk_recomputed[&off];
                    assert!(
                        rc.bit_eq(&cm.statistics),
                        "{ctx}: chunk at {off}: {rc:?} != {:?}",
                        cm.statistics
                    );
                    recomputed.merge(rc).unwrap();
                }
            }
            assert!(
                merged.bit_eq(&ts.statistics),
                "{ctx}: merged chunk statistics"
            );
            if values {
                assert!(
                    recomputed.bit_eq(&ts.statistics),
                    "{ctx}: recomputed series statistics"
                );
            }
            assert_eq!(row[2], encs.join("|").as_str(), "{ctx}");
            assert_eq!(row[3], comps.join("|").as_str(), "{ctx}");
            assert_eq!(row[4].as_i64().unwrap(), cms.len() as i64, "{ctx}");
            assert_eq!(row[5].as_i64().unwrap(), pages, "{ctx}");
            let st = &ts.statistics;
            assert_eq!(row[7].as_i64().unwrap(), st.count, "{ctx}");
            assert_eq!(row[8].as_i64().unwrap(), st.start_time, "{ctx}");
            assert_eq!(row[9].as_i64().unwrap(), st.end_time, "{ctx}");
            total_points += st.count;
            if values {
                let n = reader
                    .series_reader_for(&d.device, ts)
                    .unwrap()
                    .points()
                    .collect::<tsfile::Result<Vec<_>>>()
                    .unwrap()
                    .len();
                assert_eq!(row[6].as_i64().unwrap(), n as i64, "{ctx}: points");
                let (min, max, first, last, sum) = st.summary();
                let text = |v: Option<Value>| v.map(|v| value_text(&v));
                assert_eq!(
                    row[10].as_str().map(str::to_string),
                    text(min),
                    "{ctx}: min"
                );
                assert_eq!(
                    row[11].as_str().map(str::to_string),
                    text(max),
                    "{ctx}: max"
                );
                assert_eq!(
                    row[12].as_str().unwrap(),
                    value_text(&first),
                    "{ctx}: first"
                );
                assert_eq!(row[13].as_str().unwrap(), value_text(&last), "{ctx}: last");
                assert_eq!(
                    row[14].as_str().map(str::to_string),
                    sum.map(java_f64),
                    "{ctx}: sum"
                );
            }
        }
    }
    assert_eq!(int(&meta, "point_count"), total_points, "{name}");
    if values {
        assert_eq!(w.points as i64, total_points, "{name}: walk points");
    }
    assert_eq!(referenced.len(), w.chunks, "{name}: every chunk referenced");
    assert!(
        referenced.values().all(|n| *n == 1),
        "{name}: referenced once"
    );
}

#[test]
fn golden_meta_structure() {
    golden_common::for_all_golden("meta structure", |name| check_file(name, false));
}

#[test]
fn golden_meta_values_and_statistics() {
    golden_common::for_all_golden("meta values and statistics", |name| check_file(name, true));
}
