//! The one place where the v4 file layer meets the value codecs.
//!
//! The codecs are [`encoding::get_encoder_v4`] / [`encoding::decode_values_v4`] and
//! [`crate::compression::compress_v4`]; this module maps logical v4 types (DATE,
//! TIMESTAMP, STRING, BLOB) to their storage types and applies TsFile 2.x's table of
//! which encoding each logical type accepts.

use crate::basic::{Column, Compression, DataType, Encoding};
use crate::encoding::{self, Encoder};
use crate::errors::{Error, Result};

/// Whether this file layer writes and reads `encoding` for `data_type` (a logical type):
/// the TsFile 2.x table ([`crate::basic::v4_supports_logical`]).
pub fn supports(encoding: Encoding, data_type: DataType) -> bool {
    crate::basic::v4_supports_logical(encoding, data_type.code())
}

/// Whether this file layer can write and read `compression`.
pub fn supports_compression(compression: Compression) -> bool {
    compression.is_supported_v4()
}

/// Refuses what [`supports`] and [`supports_compression`] refuse, naming the pair.
pub fn check(encoding: Encoding, data_type: DataType, compression: Compression) -> Result<()> {
    if !supports(encoding, data_type) {
        return Err(Error::unsupported(format!(
            "format v4 has no encoding {} for {data_type}",
            encoding.v4_name()
        )));
    }
    if !supports_compression(compression) {
        return Err(Error::unsupported(format!(
            "format v4 compression {compression} is not implemented (UNCOMPRESSED, SNAPPY, GZIP, LZ4, ZSTD are)"
        )));
    }
    Ok(())
}

/// An encoder for `encoding` over values of `data_type`'s storage type.
pub fn encoder(encoding: Encoding, data_type: DataType) -> Result<Box<dyn Encoder>> {
    check(encoding, data_type, Compression::UNCOMPRESSED)?;
    encoding::get_encoder_v4(
        encoding,
        data_type.storage_type(),
        encoding::DEFAULT_FLOAT_PRECISION,
    )
}

/// Decodes `count` values of `data_type`'s storage type into `out`.
pub fn decode_values(
    encoding: Encoding,
    data_type: DataType,
    data: &[u8],
    count: usize,
    out: &mut Column,
) -> Result<()> {
    if !supports(encoding, data_type) {
        return Err(Error::unsupported(format!(
            "format v4 has no encoding {} for {data_type}",
            encoding.v4_name()
        )));
    }
    encoding::decode_values_v4(encoding, data_type.storage_type(), data, count, out)
}
