//! The one place where the v4 file layer meets the value codecs.
//!
//! v4 PLAIN differs from 0.10 for INT32 (zigzag var-int instead of 4 bytes) and for
//! byte strings (zigzag var-int length instead of an i32). RLE and TS_2DIFF of integers
//! keep the 0.10 bytes; the time column is TS_2DIFF INT64 as in 0.10. Types are passed
//! as their storage type ([`DataType::storage_type`]).

use crate::basic::{Column, Compression, DataType, Encoding};
use crate::encoding::{self, Encoder};
use crate::errors::{Error, Result};
use crate::util::io::ByteReader;

/// Whether this file layer can write `encoding` for `data_type` (a logical type).
pub fn supports(encoding: Encoding, data_type: DataType) -> bool {
    use DataType::*;
    matches!(
        (encoding, data_type),
        (Encoding::PLAIN, _)
            | (
                Encoding::RLE | Encoding::TS_2DIFF,
                INT32 | INT64 | DATE | TIMESTAMP
            )
    )
}

/// Whether this file layer can write and read `compression`.
pub fn supports_compression(compression: Compression) -> bool {
    matches!(compression, Compression::UNCOMPRESSED | Compression::SNAPPY)
}

/// Refuses what [`supports`] and [`supports_compression`] refuse, naming the pair.
pub fn check(encoding: Encoding, data_type: DataType, compression: Compression) -> Result<()> {
    if !supports(encoding, data_type) {
        return Err(Error::unsupported(format!(
            "v4 writer: encoding {encoding} for {data_type} (supported: PLAIN for every type, RLE and TS_2DIFF for INT32, INT64, DATE, TIMESTAMP)"
        )));
    }
    if !supports_compression(compression) {
        return Err(Error::unsupported(format!(
            "v4 writer: compression {compression} (supported: UNCOMPRESSED, SNAPPY)"
        )));
    }
    Ok(())
}

/// An encoder for `encoding` over values of `data_type`'s storage type.
pub fn encoder(encoding: Encoding, data_type: DataType) -> Result<Box<dyn Encoder>> {
    let st = data_type.storage_type();
    if !supports(encoding, data_type) {
        return check(encoding, data_type, Compression::UNCOMPRESSED).map(|_| unreachable!());
    }
    match (encoding, st) {
        (Encoding::PLAIN, DataType::INT32 | DataType::TEXT) => {
            Ok(Box::new(PlainV4 { data_type: st }))
        }
        _ => encoding::get_encoder(encoding, st, encoding::DEFAULT_FLOAT_PRECISION),
    }
}

/// Decodes `count` values of `data_type`'s storage type into `out`.
pub fn decode_values(
    encoding: Encoding,
    data_type: DataType,
    data: &[u8],
    count: usize,
    out: &mut Column,
) -> Result<()> {
    let st = data_type.storage_type();
    match (encoding, st, out) {
        (Encoding::PLAIN, DataType::INT32, Column::Int32(v)) => {
            let mut r = ByteReader::new(data, 0);
            for _ in 0..count {
                v.push(super::read_varint(&mut r, "PLAIN INT32 value").map_err(stream_err)?);
            }
            Ok(())
        }
        (Encoding::PLAIN, DataType::TEXT, Column::Text(v)) => {
            let mut r = ByteReader::new(data, 0);
            for _ in 0..count {
                let b = super::read_var_bytes(&mut r, "PLAIN byte-string value")
                    .map_err(stream_err)?
                    .ok_or_else(|| Error::decode(PLAIN_STREAM, r.position(), "a null value"))?;
                v.push(b.to_vec());
            }
            Ok(())
        }
        (e, _, out) => {
            if !supports(e, data_type) {
                return Err(Error::unsupported(format!(
                    "v4 reader: encoding {e} for {data_type}"
                )));
            }
            encoding::decode_values(e, st, data, count, out)
        }
    }
}

const PLAIN_STREAM: &str = "v4 PLAIN value column";

fn stream_err(e: Error) -> Error {
    match e {
        Error::Format { offset, expected } => {
            Error::decode(PLAIN_STREAM, offset as usize, expected)
        }
        e => e,
    }
}

/// v4 PLAIN for INT32 (zigzag var-int) and byte strings (zigzag var-int length).
struct PlainV4 {
    data_type: DataType,
}

impl Encoder for PlainV4 {
    fn encode_i32(&mut self, v: i32, out: &mut Vec<u8>) -> Result<()> {
        if self.data_type != DataType::INT32 {
            return Err(Error::unsupported(
                "this v4 PLAIN encoder takes byte strings",
            ));
        }
        super::put_varint(out, v);
        Ok(())
    }
    fn encode_binary(&mut self, v: &[u8], out: &mut Vec<u8>) -> Result<()> {
        if self.data_type != DataType::TEXT {
            return Err(Error::unsupported(
                "this v4 PLAIN encoder takes INT32 values",
            ));
        }
        if v.len() > i32::MAX as usize {
            return Err(Error::invalid("a byte string longer than i32::MAX"));
        }
        super::put_var_str(out, Some(v));
        Ok(())
    }
    fn flush(&mut self, _out: &mut Vec<u8>) -> Result<()> {
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        0
    }
}
