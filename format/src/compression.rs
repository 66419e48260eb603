//! Page compression codecs: UNCOMPRESSED and raw-block SNAPPY (never the frame format).

use crate::basic::Compression;
use crate::errors::{Error, Result};

/// Compresses a whole page body, appending to `out`.
pub fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    match codec {
        Compression::UNCOMPRESSED => {
            out.extend_from_slice(input);
            Ok(())
        }
        Compression::SNAPPY => {
            let start = out.len();
            out.resize(start + snap::raw::max_compress_len(input.len()), 0);
            let n = snap::raw::Encoder::new()
                .compress(input, &mut out[start..])
                .map_err(|e| Error::invalid(format!("snappy compression failed: {e}")))?;
            out.truncate(start + n);
            Ok(())
        }
        other => other.check(),
    }
}

/// Decompresses a page body of `uncompressed_size` bytes.
///
/// `offset` is the absolute file offset of the compressed bytes, used in errors.
pub fn decompress(
    codec: Compression,
    input: &[u8],
    uncompressed_size: usize,
    offset: u64,
) -> Result<Vec<u8>> {
    match codec {
        Compression::UNCOMPRESSED => {
            if input.len() != uncompressed_size {
                return Err(Error::format(
                    offset,
                    format_args!(
                        "an uncompressed page body of {uncompressed_size} bytes, found {}",
                        input.len()
                    ),
                ));
            }
            Ok(input.to_vec())
        }
        Compression::SNAPPY => {
            let declared = snap::raw::decompress_len(input)
                .map_err(|e| Error::format(offset, format_args!("a raw Snappy block: {e}")))?;
            if declared != uncompressed_size {
                return Err(Error::format(
                    offset,
                    format_args!(
                        "a Snappy block of {uncompressed_size} bytes (page header), block says {declared}"
                    ),
                ));
            }
            let mut out = vec![0u8; declared];
            let n = snap::raw::Decoder::new()
                .decompress(input, &mut out)
                .map_err(|e| Error::format(offset, format_args!("a raw Snappy block: {e}")))?;
            out.truncate(n);
            Ok(out)
        }
        other => Err(Error::format(
            offset,
            format_args!("a supported compression, found {other}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_is_raw_and_round_trips() {
        let body: Vec<u8> = (0..49u8).map(|i| i % 7).collect();
        let mut c = Vec::new();
        compress(Compression::SNAPPY, &body, &mut c).unwrap();
        assert_eq!(c[0], 49, "raw block starts with the uvarint length");
        assert_eq!(decompress(Compression::SNAPPY, &c, 49, 0).unwrap(), body);
        assert!(decompress(Compression::SNAPPY, &c, 50, 0).is_err());
        assert!(decompress(Compression::SNAPPY, &[0xff, 0xff, 0xff], 3, 9).is_err());
    }

    #[test]
    fn java_snappy_vector_decompresses() {
        // Compressed page body of the spec's minimal SNAPPY file (§12.4).
        let c = [
            0x31, 0x14, 0x18, 0x00, 0x00, 0x00, 0x02, 0x00, 0x19, 0x01, 0x00, 0x01, 0x0d, 0x0b,
            0x11, 0x08, 0x00, 0x0a, 0x0d, 0x10, 0x20, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x1e,
        ];
        let d = decompress(Compression::SNAPPY, &c, 49, 0).unwrap();
        assert_eq!(d[0], 0x18);
        assert_eq!(d.len(), 49);
    }
}
