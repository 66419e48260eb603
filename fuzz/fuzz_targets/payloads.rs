//! Feeds arbitrary bytes to every payload parser of the connectors: IoTDB JSON, IoTDB's
//! REST write bodies (both tablet namings and insertRecords), InfluxDB line protocol and the
//! MQTT plain-value form (first line = topic). A parser
//! must return a batch (records and rejections) for any input; any panic is a bug.
//! The points it reports must add up: every rejection counts its points.
//!
//! From `fuzz/`: `cargo +nightly fuzz run payloads -- -max_len=65536`

#![no_main]

use libfuzzer_sys::fuzz_target;
use tsfiled_connectors::iotdb_rest::{parse_rest_request, RestOptions, RestRequest, TabletNames};
use tsfiled_connectors::{iotdb_json, line_protocol, topic_value};

fuzz_target!(|data: &[u8]| {
    for batch in [
        iotdb_json::parse_iotdb_json_default(data),
        line_protocol::parse_line_protocol_default(data),
        topic_value::parse_topic_value_default(data),
        parse_rest_request(
            data,
            RestRequest::InsertTablet(TabletNames::V2),
            &RestOptions::default(),
        ),
        parse_rest_request(
            data,
            RestRequest::InsertTablet(TabletNames::V1),
            &RestOptions::default(),
        ),
        parse_rest_request(data, RestRequest::InsertRecords, &RestOptions::default()),
    ] {
        for r in &batch.records {
            assert!(!r.fields.is_empty(), "a record without fields");
        }
        let _ = batch.point_count() + batch.rejected_points();
    }
});
