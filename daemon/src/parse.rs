//! Payload parsers behind a small trait, so sources do not depend on which
//! implementation is in use. [`ConnectorParsers`] uses the connectors crate's parsers.

use tsfiled_connectors::{
    parse_iotdb_json, parse_line_protocol, parse_rest_request, Batch, DeviceTemplate, JsonOptions,
    LineProtocolOptions, RestOptions, RestRequest, TimeUnit,
};

/// The parsers a source uses.
pub trait Parsers: Send + Sync + 'static {
    /// IoTDB JSON: one record, the batch form, or an array of either. Times are in
    /// `unit` and converted to `stored`.
    fn iotdb_json(&self, body: &[u8], unit: TimeUnit, stored: TimeUnit) -> Batch;
    /// A body of IoTDB's REST write API. Times are in `unit` and converted to `stored`.
    fn iotdb_rest(
        &self,
        body: &[u8],
        request: RestRequest,
        unit: TimeUnit,
        stored: TimeUnit,
    ) -> Batch;
    /// InfluxDB line protocol with `precision`, converted to `stored`; lines without a
    /// timestamp get `now` (in `stored`).
    fn line_protocol(
        &self,
        body: &[u8],
        precision: TimeUnit,
        stored: TimeUnit,
        template: &DeviceTemplate,
        now: i64,
    ) -> Batch;
}

/// The connectors crate's parsers.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectorParsers;

impl Parsers for ConnectorParsers {
    fn iotdb_json(&self, body: &[u8], unit: TimeUnit, stored: TimeUnit) -> Batch {
        parse_iotdb_json(
            body,
            &JsonOptions {
                input_unit: unit,
                stored_unit: stored,
            },
        )
    }

    fn iotdb_rest(
        &self,
        body: &[u8],
        request: RestRequest,
        unit: TimeUnit,
        stored: TimeUnit,
    ) -> Batch {
        parse_rest_request(
            body,
            request,
            &RestOptions {
                input_unit: unit,
                stored_unit: stored,
            },
        )
    }

    fn line_protocol(
        &self,
        body: &[u8],
        precision: TimeUnit,
        stored: TimeUnit,
        template: &DeviceTemplate,
        now: i64,
    ) -> Batch {
        parse_line_protocol(
            body,
            &LineProtocolOptions {
                device_template: template,
                precision,
                stored_unit: stored,
                now,
            },
        )
    }
}
