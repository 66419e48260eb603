//! The TsFile writer (spec §7): series registration, rows and tablets, pages sealed by
//! size and point count, chunk groups streamed out when the buffer budget is reached,
//! and the metadata section written by [`TsFileWriter::close`].
//!
//! (API fixed; implementation in progress.)

use crate::basic::{Column, Value};
use crate::errors::{Error, Result};
use crate::file::properties::{MeasurementSchema, WriterProperties};
use std::io::Write;

/// Time range of one device in a written file (what a `.resource` file records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceTimeRange {
    /// Device path.
    pub device: String,
    /// Smallest timestamp written for the device.
    pub start_time: i64,
    /// Largest timestamp written for the device.
    pub end_time: i64,
}

/// What [`TsFileWriter::close`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSummary {
    /// Total bytes written.
    pub file_size: u64,
    /// Points written.
    pub points: u64,
    /// Chunks written.
    pub chunks: u64,
    /// Chunk groups written.
    pub chunk_groups: u64,
    /// Per-device time ranges, sorted by device.
    pub devices: Vec<DeviceTimeRange>,
}

/// Writes one TsFile to `W`.
pub struct TsFileWriter<W: Write> {
    _out: W,
    _props: WriterProperties,
}

impl<W: Write> TsFileWriter<W> {
    /// Starts a file: writes magic and version.
    pub fn new(out: W, props: WriterProperties) -> Result<Self> {
        props.validate()?;
        Ok(TsFileWriter {
            _out: out,
            _props: props,
        })
    }

    /// Registers a series. Registering the same schema twice is a no-op; a different
    /// schema for a registered series is an error.
    pub fn register(&mut self, device: &str, schema: MeasurementSchema) -> Result<()> {
        let _ = (device, schema);
        Err(Error::unsupported("writer not implemented yet"))
    }

    /// Writes one row: `values` of registered measurements of `device` at `time`.
    pub fn write_record(
        &mut self,
        device: &str,
        time: i64,
        values: &[(&str, Value)],
    ) -> Result<()> {
        let _ = (device, time, values);
        Err(Error::unsupported("writer not implemented yet"))
    }

    /// Writes a tablet: `times` and one column per registered measurement, all of the
    /// same length.
    pub fn write_tablet(
        &mut self,
        device: &str,
        times: &[i64],
        columns: &[(&str, &Column)],
    ) -> Result<()> {
        let _ = (device, times, columns);
        Err(Error::unsupported("writer not implemented yet"))
    }

    /// Writes every buffered chunk group to the output.
    pub fn flush_chunk_groups(&mut self) -> Result<()> {
        Err(Error::unsupported("writer not implemented yet"))
    }

    /// Flushes buffered chunk groups, then writes a version record.
    pub fn write_version(&mut self, version: i64) -> Result<()> {
        let _ = version;
        Err(Error::unsupported("writer not implemented yet"))
    }

    /// Bytes currently buffered in memory (pages and encoders), Java's estimate.
    pub fn buffered_bytes(&self) -> usize {
        0
    }

    /// Bytes written to the output so far.
    pub fn position(&self) -> u64 {
        0
    }

    /// Flushes, writes the metadata section and the tail; returns the output and a summary.
    pub fn close(self) -> Result<(W, FileSummary)> {
        Err(Error::unsupported("writer not implemented yet"))
    }
}
