//! Random-access byte sources the reader works on.

use crate::errors::{Error, Result};
use std::sync::Arc;

/// A random-access, read-only byte source: a file or bytes in memory.
///
/// Implementations must either fill `buf` completely or fail; the reader checks every
/// range against [`Source::size`] before it asks, so a short read means the source
/// changed underneath it.
pub trait Source {
    /// Total number of bytes.
    fn size(&self) -> Result<u64>;
    /// Reads exactly `buf.len()` bytes starting at `offset`.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()>;

    /// Replaces the contents of `buf` with the `len` bytes at `offset`. The reader
    /// calls this only for ranges it has checked against [`Source::size`].
    fn read_to_vec(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        buf.resize(len, 0);
        self.read_exact_at(offset, buf)
    }
}

impl Source for std::fs::File {
    fn size(&self) -> Result<u64> {
        Ok(self.metadata()?.len())
    }

    #[cfg(unix)]
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(self, buf, offset)?;
        Ok(())
    }

    #[cfg(windows)]
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                self,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof).into());
            }
            done += n;
        }
        Ok(())
    }
}

impl Source for [u8] {
    fn size(&self) -> Result<u64> {
        Ok(self.len() as u64)
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = usize::try_from(offset).ok();
        let src = start
            .and_then(|s| s.checked_add(buf.len()).map(|e| (s, e)))
            .and_then(|(s, e)| self.get(s..e))
            .ok_or_else(|| {
                Error::format(
                    offset,
                    format_args!(
                        "{} bytes, but the buffer holds only {} bytes",
                        buf.len(),
                        self.len()
                    ),
                )
            })?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn read_to_vec(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|s| self.get(s..s.checked_add(len)?))
            .ok_or_else(|| {
                Error::format(
                    offset,
                    format_args!(
                        "{len} bytes, but the buffer holds only {} bytes",
                        self.len()
                    ),
                )
            })?;
        buf.clear();
        buf.extend_from_slice(src);
        Ok(())
    }
}

impl Source for Vec<u8> {
    fn size(&self) -> Result<u64> {
        self.as_slice().size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.as_slice().read_exact_at(offset, buf)
    }

    fn read_to_vec(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        self.as_slice().read_to_vec(offset, len, buf)
    }
}

impl<S: Source + ?Sized> Source for &S {
    fn size(&self) -> Result<u64> {
        (**self).size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read_exact_at(offset, buf)
    }

    fn read_to_vec(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        (**self).read_to_vec(offset, len, buf)
    }
}

impl<S: Source + ?Sized> Source for Box<S> {
    fn size(&self) -> Result<u64> {
        (**self).size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read_exact_at(offset, buf)
    }

    fn read_to_vec(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        (**self).read_to_vec(offset, len, buf)
    }
}

impl<S: Source + ?Sized> Source for Arc<S> {
    fn size(&self) -> Result<u64> {
        (**self).size()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        (**self).read_exact_at(offset, buf)
    }

    fn read_to_vec(&self, offset: u64, len: usize, buf: &mut Vec<u8>) -> Result<()> {
        (**self).read_to_vec(offset, len, buf)
    }
}

/// Reads `[offset, offset + len)` into `buf` (resized), after checking that the range
/// lies inside `[0, limit)`. `what` names the structure for the error.
///
/// This is the only place the reader sizes a buffer by a length read from the file,
/// and it does so only after the range check.
pub(crate) fn read_range_into<S: Source + ?Sized>(
    src: &S,
    offset: u64,
    len: u64,
    limit: u64,
    what: &str,
    buf: &mut Vec<u8>,
) -> Result<()> {
    let end = offset.checked_add(len);
    match end {
        Some(end) if end <= limit => {}
        _ => {
            return Err(Error::format(
                offset,
                format_args!(
                "{what}: {len} bytes ending at or before byte {limit}, but they would end at {}",
                offset as u128 + len as u128
            ),
            ))
        }
    }
    // `len <= limit <= file size`: the allocation is bounded by the file.
    let n = usize::try_from(len)
        .map_err(|_| Error::format(offset, format_args!("{what}: a range that fits in memory")))?;
    src.read_to_vec(offset, n, buf)
        .map_err(|e| Error::format(offset, format_args!("{what}: {n} readable bytes ({e})")))
}

/// Like [`read_range_into`], returning a fresh buffer.
pub(crate) fn read_range<S: Source + ?Sized>(
    src: &S,
    offset: u64,
    len: u64,
    limit: u64,
    what: &str,
) -> Result<Vec<u8>> {
    let mut v = Vec::new();
    read_range_into(src, offset, len, limit, what, &mut v)?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_checked_before_reading() {
        let data = vec![1u8, 2, 3, 4, 5];
        assert_eq!(read_range(&data, 1, 3, 5, "x").unwrap(), vec![2, 3, 4]);
        let e = read_range(&data, 3, 3, 5, "chunk").unwrap_err().to_string();
        assert!(e.contains("byte 3") && e.contains("chunk"), "{e}");
        assert!(read_range(&data, u64::MAX, 2, 5, "x").is_err());
        let mut b = [0u8; 2];
        assert!(data.as_slice().read_exact_at(4, &mut b).is_err());
        assert!(data.as_slice().read_exact_at(u64::MAX, &mut b).is_err());
    }
}
