//! Page compression codecs. Format 000002 has UNCOMPRESSED and raw-block SNAPPY (never
//! the frame format). Format v4 adds, framed as Apache TsFile 2.x frames them (Java and
//! C++ agree): GZIP as one gzip member (RFC 1952 header and trailer; zlib `windowBits`
//! 31, Java `GZIPOutputStream`), LZ4 as one raw LZ4 block (no frame, no size prefix:
//! the page header carries the uncompressed size) and ZSTD as one Zstandard frame that
//! records its content size (C++ `ZSTD_compress` at level 3; the C++ reader refuses a
//! frame without it).

use crate::basic::Compression;
use crate::errors::{Error, Result};
use std::io::{Read, Write};

/// Zstandard level TsFile 2.x writes with (`ZSTD_CLEVEL_DEFAULT`).
const ZSTD_LEVEL: i32 = 3;

/// Compresses a whole page body of format 000002, appending to `out`. Codecs 0.10
/// does not implement give [`Error::Unsupported`].
pub fn compress(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    codec.check()?;
    compress_any(codec, input, out)
}

/// The size of `input` compressed with `codec` in format 000002, as [`compress`] would
/// append it (SNAPPY without copying its output).
pub fn compressed_len(codec: Compression, input: &[u8]) -> Result<usize> {
    codec.check()?;
    if codec == Compression::SNAPPY {
        return with_snappy(input, |z| z.len());
    }
    let mut out = Vec::new();
    compress_any(codec, input, &mut out)?;
    Ok(out.len())
}

/// Fewest bytes any raw Snappy block of an `n`-byte input takes: one byte of length, and
/// each element covers at most 64 bytes for at least 3 bytes (a copy with a 2-byte offset;
/// a copy with a 1-byte offset covers at most 11 for 2, a literal of `k` takes `k + 1`).
pub fn snappy_len_at_least(n: usize) -> usize {
    1 + n / 64 * 3 + (n % 64) * 3 / 64
}

thread_local! {
    /// The thread's Snappy compressor and output room: the compressor's hash table is
    /// allocated once, and the room only grows, so it is not zeroed for every input.
    static SNAPPY: std::cell::RefCell<(snap::raw::Encoder, Vec<u8>)> =
        std::cell::RefCell::new((snap::raw::Encoder::new(), Vec::new()));
}

/// Compresses `input` into a raw Snappy block and gives it to `f`.
fn with_snappy<R>(input: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<R> {
    SNAPPY.with(|s| {
        let (encoder, room) = &mut *s.borrow_mut();
        // 0 for an input too large, which `compress` refuses.
        let need = snap::raw::max_compress_len(input.len());
        if room.len() < need {
            room.resize(need, 0);
        }
        let n = encoder
            .compress(input, room)
            .map_err(|e| Error::invalid(format!("snappy compression failed: {e}")))?;
        Ok(f(&room[..n]))
    })
}

/// Compresses a whole page body of format v4, appending to `out`; codecs not
/// implemented for v4 give [`Error::Unsupported`].
pub fn compress_v4(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    v4_check(codec)?;
    compress_any(codec, input, out)
}

fn v4_check(codec: Compression) -> Result<()> {
    if codec.is_supported_v4() {
        Ok(())
    } else {
        Err(Error::unsupported(format!(
            "compression {codec} is not implemented for format v4 \
             (use UNCOMPRESSED, SNAPPY, GZIP, LZ4 or ZSTD)"
        )))
    }
}

fn compress_any(codec: Compression, input: &[u8], out: &mut Vec<u8>) -> Result<()> {
    match codec {
        Compression::UNCOMPRESSED => {
            out.extend_from_slice(input);
            Ok(())
        }
        Compression::SNAPPY => with_snappy(input, |z| out.extend_from_slice(z)),
        Compression::GZIP => {
            // OS byte 3 (Unix) and mtime 0, as zlib's deflateInit2(.., 31, ..) writes.
            let mut e = flate2::GzBuilder::new()
                .operating_system(3)
                .write(std::mem::take(out), flate2::Compression::default());
            e.write_all(input)?;
            *out = e.finish()?;
            Ok(())
        }
        Compression::LZ4 => {
            let start = out.len();
            out.resize(
                start + lz4_flex::block::get_maximum_output_size(input.len()),
                0,
            );
            let n = lz4_flex::block::compress_into(input, &mut out[start..])
                .map_err(|e| Error::invalid(format!("LZ4 compression failed: {e}")))?;
            out.truncate(start + n);
            Ok(())
        }
        Compression::ZSTD => {
            let c = zstd::bulk::compress(input, ZSTD_LEVEL)?;
            out.extend_from_slice(&c);
            Ok(())
        }
        other => other.check(),
    }
}

fn sized(out: Vec<u8>, uncompressed_size: usize, what: &str, offset: u64) -> Result<Vec<u8>> {
    if out.len() != uncompressed_size {
        return Err(Error::format(
            offset,
            format_args!(
                "{what} of {uncompressed_size} bytes (page header), it holds {}",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// Decompresses a page body of format 000002 of `uncompressed_size` bytes (codecs 0.10
/// does not implement are malformed input).
///
/// `offset` is the absolute file offset of the compressed bytes, used in errors.
pub fn decompress(
    codec: Compression,
    input: &[u8],
    uncompressed_size: usize,
    offset: u64,
) -> Result<Vec<u8>> {
    if !codec.is_supported() {
        return Err(Error::format(
            offset,
            format_args!("a compression TsFile 0.10 supports, found {codec}"),
        ));
    }
    decompress_any(codec, input, uncompressed_size, offset)
}

/// Decompresses a page body of format v4 of `uncompressed_size` bytes (the page
/// header's value), checking that the codec's own framing agrees with it.
///
/// `offset` is the absolute file offset of the compressed bytes, used in errors.
/// Memory is bounded by each codec's maximum expansion of `input`, whatever
/// `uncompressed_size` claims.
pub fn decompress_v4(
    codec: Compression,
    input: &[u8],
    uncompressed_size: usize,
    offset: u64,
) -> Result<Vec<u8>> {
    if !codec.is_supported_v4() {
        return Err(Error::format(
            offset,
            format_args!("a compression format v4 implements here, found {codec}"),
        ));
    }
    decompress_any(codec, input, uncompressed_size, offset)
}

/// Reads at most `uncompressed_size + 1` bytes from a streaming decoder.
fn read_bounded(
    r: impl Read,
    uncompressed_size: usize,
    prealloc: usize,
    what: &str,
    offset: u64,
) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(uncompressed_size.min(prealloc));
    r.take(uncompressed_size as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::format(offset, format_args!("{what}: {e}")))?;
    sized(out, uncompressed_size, what, offset)
}

fn decompress_any(
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
        Compression::GZIP => read_bounded(
            flate2::read::GzDecoder::new(input),
            uncompressed_size,
            input.len().saturating_mul(1032),
            "a gzip member",
            offset,
        ),
        Compression::LZ4 => {
            // An LZ4 block expands at most ~255 times.
            if uncompressed_size as u64 > 255 * input.len() as u64 + 16 {
                return Err(Error::format(
                    offset,
                    format_args!(
                        "a raw LZ4 block that can expand {} bytes to {uncompressed_size} (page header)",
                        input.len()
                    ),
                ));
            }
            let mut out = vec![0u8; uncompressed_size];
            let n = lz4_flex::block::decompress_into(input, &mut out)
                .map_err(|e| Error::format(offset, format_args!("a raw LZ4 block: {e}")))?;
            out.truncate(n);
            sized(out, uncompressed_size, "a raw LZ4 block", offset)
        }
        Compression::ZSTD => {
            match zstd::zstd_safe::get_frame_content_size(input) {
                Ok(Some(n)) if n == uncompressed_size as u64 => {}
                Ok(Some(n)) => {
                    return Err(Error::format(
                        offset,
                        format_args!(
                            "a Zstandard frame of {uncompressed_size} bytes (page header), \
                             frame says {n}"
                        ),
                    ))
                }
                _ => {
                    return Err(Error::format(
                        offset,
                        "a Zstandard frame that records its content size",
                    ))
                }
            }
            let d = zstd::stream::read::Decoder::with_buffer(input)
                .map_err(|e| Error::format(offset, format_args!("a Zstandard frame: {e}")))?;
            read_bounded(
                d,
                uncompressed_size,
                input.len().saturating_mul(64),
                "a Zstandard frame",
                offset,
            )
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

    /// `compressed_len` is the length `compress` appends, never below the fewest bytes the
    /// Snappy format allows; 64,000 zero bytes (a 3-byte length, a 1-byte literal, then
    /// copies of 64 bytes at 3 bytes each, 3,000 bytes) come within a few bytes of it.
    #[test]
    fn snappy_length_and_its_floor() {
        let mut x = 7u32;
        let noise: Vec<u8> = (0..70_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (x >> 16) as u8
            })
            .collect();
        let ramp: Vec<u8> = (0..100_000u32).map(|i| (i / 3) as u8).collect();
        let zeros = vec![0u8; 64_000];
        for input in [&[][..], &b"abc"[..], &noise, &ramp, &zeros, &noise[..64]] {
            let mut c = Vec::new();
            compress(Compression::SNAPPY, input, &mut c).unwrap();
            let n = compressed_len(Compression::SNAPPY, input).unwrap();
            assert_eq!(n, c.len(), "{} bytes", input.len());
            assert!(
                n >= snappy_len_at_least(input.len()),
                "{} bytes",
                input.len()
            );
        }
        assert_eq!(snappy_len_at_least(64_000), 3001);
        let z = compressed_len(Compression::SNAPPY, &zeros).unwrap();
        assert!((3001..3030).contains(&z), "{z}");
        // Incompressible bytes: a literal costs more than its bytes.
        assert!(compressed_len(Compression::SNAPPY, &noise).unwrap() > 70_000);
        assert_eq!(
            compressed_len(Compression::UNCOMPRESSED, &noise).unwrap(),
            70_000
        );
        assert!(
            compressed_len(Compression::LZ4, &noise).is_err(),
            "not in format 000002"
        );
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

#[cfg(test)]
mod mutant_gaps_tests;
