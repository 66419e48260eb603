//! DICTIONARY encoding (format v4 only; TEXT and STRING).
//!
//! At flush the page holds its dictionary, then the entries' indices: zigzag var-int
//! entry count, each entry as a zigzag var-int length and its bytes (in first-seen
//! order), then one INT32 RLE frame (see [`super::rle`]) of the indices of the page's
//! values. Nothing reaches the column stream before flush.

use super::rle::{self, IntRleEncoder};
use super::Encoder;
use crate::errors::{Error, Result};
use crate::util::io::ByteReader;
use std::collections::HashMap;

/// Appends a zigzag var-int (Java `writeVarInt`).
pub(crate) fn put_varint(out: &mut Vec<u8>, v: i32) {
    crate::util::io::put_uvarint(out, ((v << 1) ^ (v >> 31)) as u32);
}

/// Reads a zigzag var-int (Java `readVarInt`).
pub(crate) fn read_varint(r: &mut ByteReader<'_>, what: &str) -> Result<i32> {
    let z = r.read_uvarint(what)?;
    Ok(((z >> 1) as i32) ^ -((z & 1) as i32))
}

/// DICTIONARY encoder for TEXT/STRING values.
#[derive(Debug, Default)]
pub struct DictionaryEncoder {
    index: HashMap<Vec<u8>, i32>,
    entries: Vec<Vec<u8>>,
    entry_bytes: usize,
    indices: IntRleEncoder,
}

impl DictionaryEncoder {
    /// An empty encoder.
    pub fn new() -> Self {
        DictionaryEncoder::default()
    }
}

impl Encoder for DictionaryEncoder {
    fn encode_binary(&mut self, v: &[u8], _out: &mut Vec<u8>) -> Result<()> {
        if i32::try_from(v.len()).is_err() {
            return Err(Error::invalid("a DICTIONARY entry longer than i32::MAX"));
        }
        let next = self.entries.len() as i32;
        let i = *self.index.entry(v.to_vec()).or_insert_with(|| {
            self.entries.push(v.to_vec());
            self.entry_bytes += v.len();
            next
        });
        self.indices.encode(i);
        Ok(())
    }
    fn flush(&mut self, out: &mut Vec<u8>) -> Result<()> {
        put_varint(out, self.entries.len() as i32);
        for e in &self.entries {
            put_varint(out, e.len() as i32);
            out.extend_from_slice(e);
        }
        Encoder::flush(&mut self.indices, out)?;
        self.index.clear();
        self.entries.clear();
        self.entry_bytes = 0;
        Ok(())
    }
    fn max_byte_size(&self) -> usize {
        4 + self.entry_bytes + self.indices.max_byte_size()
    }
}

const STREAM: &str = "DICTIONARY column";

/// Decodes exactly `count` DICTIONARY values, appending to `out`.
pub fn decode(data: &[u8], count: usize, out: &mut Vec<Vec<u8>>) -> Result<()> {
    let mut r = ByteReader::new(data, 0);
    let err = |r: &ByteReader<'_>, e: Error| Error::decode(STREAM, r.position(), e);
    let n = read_varint(&mut r, "dictionary size").map_err(|e| err(&r, e))?;
    if n < 0 || n as usize > r.remaining() {
        return Err(Error::decode(
            STREAM,
            0,
            format_args!("a dictionary of {n} entries"),
        ));
    }
    let mut entries = Vec::with_capacity(n as usize);
    for i in 0..n {
        let at = r.position();
        let len = read_varint(&mut r, "entry length").map_err(|e| err(&r, e))?;
        if len < 0 {
            return Err(Error::decode(
                STREAM,
                at,
                format_args!("entry {i}: length {len}"),
            ));
        }
        let b = r
            .take(len as usize, "dictionary entry")
            .map_err(|e| err(&r, e))?;
        entries.push(b);
    }
    let base = r.position();
    let mut idx = Vec::new();
    rle::decode_into::<i32>("DICTIONARY index RLE", r.rest(), count, &mut idx)?;
    out.reserve(count);
    for (k, i) in idx.into_iter().enumerate() {
        let Some(e) = usize::try_from(i).ok().and_then(|i| entries.get(i)) else {
            return Err(Error::decode(
                STREAM,
                base,
                format_args!("value {k}: index {i} outside a dictionary of {n}"),
            ));
        };
        out.push(e.to_vec());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_round_trip() {
        let mut e = DictionaryEncoder::new();
        let mut out = Vec::new();
        for v in [&b"on"[..], b"off", b"on", b"on"] {
            e.encode_binary(v, &mut out).unwrap();
        }
        assert!(out.is_empty());
        e.flush(&mut out).unwrap();
        // 2 entries (zigzag 4), "on" (len zigzag 4), "off" (len zigzag 6), then RLE.
        assert_eq!(&out[..8], &[4, 4, b'o', b'n', 6, b'o', b'f', b'f']);
        let mut back = Vec::new();
        decode(&out, 4, &mut back).unwrap();
        assert_eq!(
            back,
            [
                b"on".to_vec(),
                b"off".to_vec(),
                b"on".to_vec(),
                b"on".to_vec()
            ]
        );
        // The next page starts with an empty dictionary.
        let mut out2 = Vec::new();
        e.encode_binary(b"x", &mut out2).unwrap();
        e.flush(&mut out2).unwrap();
        assert_eq!(&out2[..3], &[2, 2, b'x']);
        for cut in 0..out.len() {
            let _ = decode(&out[..cut], 4, &mut Vec::new());
        }
        assert!(decode(&out[..5], 4, &mut Vec::new()).is_err());
    }

    /// Hand-built streams (module docs' layout): the dictionary size check takes
    /// exactly the entries the stream can hold (an entry is at least its length byte).
    #[test]
    fn dictionary_size_bounds() {
        // No entries, no values: nothing to read.
        let mut back = Vec::new();
        decode(&[0x00], 0, &mut back).unwrap();
        assert!(back.is_empty());
        // One empty entry (zigzag 2, length zigzag 0): one entry in one remaining byte.
        decode(&[0x02, 0x00], 0, &mut back).unwrap();
        assert!(back.is_empty());
        // One empty entry, index 0 once: the RLE frame the Java writer makes of [0]
        // (spec §6.2: length 4, bit-width 1, one bit-packed group `03 01 00`).
        decode(&[0x02, 0x00, 0x04, 0x01, 0x03, 0x01, 0x00], 1, &mut back).unwrap();
        assert_eq!(back, [Vec::<u8>::new()]);
        // Two entries claimed, one byte left; a negative size (zigzag 1 = -1).
        for bad in [&[0x04, 0x00][..], &[0x01, 0x00]] {
            let e = decode(bad, 0, &mut Vec::new()).unwrap_err().to_string();
            assert!(e.contains("a dictionary of"), "{e}");
        }
        // An entry whose length is negative.
        let e = decode(&[0x02, 0x01], 0, &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(e.contains("entry 0: length -1"), "{e}");
    }

    /// The page-sealing estimate of TsFile 2.x's Java `DictionaryEncoder.getMaxByteSize`:
    /// `4 + mapSize + valuesEncoder.getMaxByteSize()`, where `mapSize` sums the lengths of
    /// the distinct entries and the index encoder is an `IntRleEncoder` (spec §6.8:
    /// `8 + groupNum*5 + n*4`, `groupNum = (n/8 + 1)/63 + 1`); flush resets it.
    #[test]
    fn max_byte_size_follows_java() {
        let mut e = DictionaryEncoder::new();
        let mut out = Vec::new();
        // n = 0: 4 + 0 + (8 + 5 + 0).
        assert_eq!(e.max_byte_size(), 17);
        for v in [&b"on"[..], b"off", b"on", b"on"] {
            e.encode_binary(v, &mut out).unwrap();
        }
        // mapSize = 2 + 3 (the repeated "on" is counted once), n = 4: 4 + 5 + (8 + 5 + 16).
        assert_eq!(e.max_byte_size(), 38);
        e.encode_binary(b"sixsix", &mut out).unwrap();
        // mapSize = 11, n = 5: 4 + 11 + (8 + 5 + 20).
        assert_eq!(e.max_byte_size(), 48);
        e.flush(&mut out).unwrap();
        assert_eq!(e.max_byte_size(), 17);
    }
}
