//! Writer settings (`TSFileConfig` knobs) and per-series schemas.

use crate::basic::{Compression, DataType, Encoding};
use crate::encoding::DEFAULT_FLOAT_PRECISION;
use crate::errors::{Error, Result};
use crate::file::bloom::DEFAULT_ERROR_RATE;

/// Writer settings. Defaults are the 0.10 defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct WriterProperties {
    /// `page_size_in_byte` (default 65536).
    pub page_size_bytes: usize,
    /// `max_number_of_points_in_page` (default 1048576).
    pub max_points_per_page: usize,
    /// `group_size_in_byte`: buffered bytes that trigger a chunk-group flush (default 128 MiB).
    pub group_size_bytes: usize,
    /// `max_degree_of_index_node` (default 1024).
    pub max_degree: usize,
    /// Bloom filter false-positive rate (default 0.05).
    pub bloom_error_rate: f64,
    /// `float_precision` for FLOAT/DOUBLE under RLE/TS_2DIFF (default 2).
    pub float_precision: u32,
}

impl Default for WriterProperties {
    fn default() -> Self {
        WriterProperties {
            page_size_bytes: 65536,
            max_points_per_page: 1_048_576,
            group_size_bytes: 128 * 1024 * 1024,
            max_degree: 1024,
            bloom_error_rate: DEFAULT_ERROR_RATE,
            float_precision: DEFAULT_FLOAT_PRECISION,
        }
    }
}

impl WriterProperties {
    /// Checks that every knob is usable.
    pub fn validate(&self) -> Result<()> {
        if self.page_size_bytes == 0 || self.max_points_per_page == 0 || self.group_size_bytes == 0
        {
            return Err(Error::invalid(
                "page size, points per page and group size must be > 0",
            ));
        }
        if self.max_degree < 2 {
            return Err(Error::invalid("the index max degree must be at least 2"));
        }
        if !(self.bloom_error_rate > 0.0 && self.bloom_error_rate < 1.0) {
            return Err(Error::invalid(
                "the bloom filter error rate must be in (0, 1)",
            ));
        }
        Ok(())
    }
}

/// The schema of one measurement.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MeasurementSchema {
    /// Measurement name (no device).
    pub measurement: String,
    /// Data type.
    pub data_type: DataType,
    /// Value encoding.
    pub encoding: Encoding,
    /// Page compression.
    pub compression: Compression,
}

impl MeasurementSchema {
    /// A schema; checked by [`MeasurementSchema::validate`].
    pub fn new(
        measurement: impl Into<String>,
        data_type: DataType,
        encoding: Encoding,
        compression: Compression,
    ) -> Self {
        MeasurementSchema {
            measurement: measurement.into(),
            data_type,
            encoding,
            compression,
        }
    }

    /// Refuses what the 0.10 writer refuses.
    pub fn validate(&self) -> Result<()> {
        if self.measurement.is_empty() {
            return Err(Error::invalid("empty measurement name"));
        }
        self.encoding.check(self.data_type)?;
        self.compression.check()
    }
}
