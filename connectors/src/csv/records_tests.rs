//! Record splitting against RFC 4180's own examples (section 2) and the module's documented
//! leniencies, and the [`Input`] implementations (skipping by reading, seeking a file, a
//! buffered reader's buffer, a gzip stream's end). Offsets and line numbers are counted by hand
//! from the inputs.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};

use super::records::{Input, Next, RecordReader, RecordSpan, Sequential};

fn span(offset: u64, end: u64, line: u64, next_line: u64) -> RecordSpan {
    RecordSpan {
        offset,
        end,
        line,
        next_line,
    }
}

/// Every record of `input` as (what, fields).
fn all<R: Input>(r: &mut RecordReader<R>) -> Vec<(Next, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    loop {
        let n = r.next_record().unwrap();
        let fields = match &n {
            Next::Record(_) => r.fields().iter().map(<[u8]>::to_vec).collect(),
            _ => Vec::new(),
        };
        let end = n == Next::End;
        out.push((n, fields));
        if end {
            return out;
        }
    }
}

fn f(v: &[&[u8]]) -> Vec<Vec<u8>> {
    v.iter().map(|s| s.to_vec()).collect()
}

/// RFC 4180 section 2, rules 5 to 7: quoted fields with a line break and with `""` inside.
#[test]
fn rfc4180_examples() {
    for d in [b',', b';', b'\t'] {
        let text = "\"aaa\",\"b\r\nbb\",\"ccc\"\r\nzzz,yyy,xxx\r\n\"aaa\",\"b\"\"bb\",\"ccc\"\r\n"
            .replace(',', std::str::from_utf8(&[d]).unwrap());
        let mut r = RecordReader::new(Sequential(text.as_bytes()), d, 1000);
        assert_eq!(
            all(&mut r),
            vec![
                (
                    Next::Record(span(0, 21, 1, 3)),
                    f(&[b"aaa", b"b\r\nbb", b"ccc"])
                ),
                (
                    Next::Record(span(21, 34, 3, 4)),
                    f(&[b"zzz", b"yyy", b"xxx"])
                ),
                (
                    Next::Record(span(34, 55, 4, 5)),
                    f(&[b"aaa", b"b\"bb", b"ccc"])
                ),
                (Next::End, vec![]),
            ],
            "delimiter {d}"
        );
        assert_eq!((r.offset(), r.line()), (55, 5));
    }
}

#[test]
fn field_views() {
    // No record read yet: no field.
    let fresh = RecordReader::new(Sequential(&b"a\n"[..]), b',', 100);
    assert_eq!((fresh.fields().len(), fresh.fields().is_empty()), (0, true));
    assert_eq!(fresh.fields().get(0), None);
    let mut r = RecordReader::new(
        Sequential(&b"zzz,,\"y,\"\"y\"\"\"x\nplain,b\n"[..]),
        b',',
        100,
    );
    assert!(matches!(r.next_record().unwrap(), Next::Record(_)));
    let fields = r.fields();
    assert_eq!((fields.len(), fields.is_empty()), (3, false));
    assert_eq!(fields.get(0), Some(&b"zzz"[..]));
    assert_eq!(fields.get(1), Some(&b""[..]));
    // Text after a closing quote is appended to the field.
    assert_eq!(fields.get(2), Some(&b"y,\"y\"x"[..]));
    assert_eq!(fields.get(3), None);
    assert_eq!(r.raw(), &b"zzz,,\"y,\"\"y\"\"\"x"[..]);
    assert!(matches!(r.next_record().unwrap(), Next::Record(_)));
    let fields = r.fields();
    assert_eq!(fields.iter().collect::<Vec<_>>(), vec![&b"plain"[..], b"b"]);
    assert_eq!((fields.get(1), fields.get(2)), (Some(&b"b"[..]), None));
    assert_eq!(r.raw(), b"plain,b");
}

#[test]
fn blank_lines_and_carriage_returns() {
    // Blank and whitespace-only lines are skipped but counted; a CR inside a line is data;
    // a lone CR line is blank.
    let input = b"\n\r\n \t\r\n\r\na\rb,c\r\n\r\n\nd\r";
    let mut r = RecordReader::new(Sequential(&input[..]), b',', 100);
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(9, 16, 5, 6)), f(&[b"a\rb", b"c"])),
            (Next::Record(span(19, 21, 8, 8)), f(&[b"d"])),
            (Next::End, vec![]),
        ]
    );
}

/// Delivers its data in reads of the given sizes.
struct Sized<'a> {
    data: &'a [u8],
    sizes: Vec<usize>,
}

impl Read for Sized<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        let n = if self.sizes.is_empty() {
            usize::MAX
        } else {
            self.sizes.remove(0)
        };
        let k = n.min(b.len()).min(self.data.len());
        b[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

impl Input for Sized<'_> {}

#[test]
fn a_carriage_return_alone_is_data() {
    // Only LF or CR LF end a record: a CR before other bytes is data.
    let mut r = RecordReader::new(Sequential(&b"x\n\rab,c\n\r\n1\n"[..]), b',', 100);
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(0, 2, 1, 2)), f(&[b"x"])),
            (Next::Record(span(2, 8, 2, 3)), f(&[b"\rab", b"c"])),
            (Next::Record(span(10, 12, 4, 5)), f(&[b"1"])),
            (Next::End, vec![]),
        ]
    );
    // A CR LF blank line whose CR ends one read: the LF comes with the next one.
    let mut r = RecordReader::new(
        Sized {
            data: b"abc\nd\n\r\ne\n",
            sizes: vec![4, 3],
        },
        b',',
        100,
    );
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(0, 4, 1, 2)), f(&[b"abc"])),
            (Next::Record(span(4, 6, 2, 3)), f(&[b"d"])),
            (Next::Record(span(8, 10, 4, 5)), f(&[b"e"])),
            (Next::End, vec![]),
        ]
    );
}

#[test]
fn a_long_record_starting_with_a_carriage_return() {
    let mut input = b"x\n\r".to_vec();
    input.extend(vec![b'y'; 5000]);
    input.extend(b"\n2\n");
    let mut r = RecordReader::new(Sequential(&input[..]), b',', 100);
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(0, 2, 1, 2)), f(&[b"x"])),
            (Next::TooLarge(span(2, 5004, 2, 3)), vec![]),
            (Next::Record(span(5004, 5006, 3, 4)), f(&[b"2"])),
            (Next::End, vec![]),
        ]
    );
}

/// Delivers at most `n` bytes a read and an `Interrupted` error before every other read.
struct Choppy<'a> {
    data: &'a [u8],
    n: usize,
    interrupt: bool,
}

impl Read for Choppy<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        self.interrupt = !self.interrupt;
        if self.interrupt {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "signal"));
        }
        let k = self.n.min(b.len()).min(self.data.len());
        b[..k].copy_from_slice(&self.data[..k]);
        self.data = &self.data[k..];
        Ok(k)
    }
}

impl Input for Choppy<'_> {}

/// `count` rows `00000\n`, `00001\n`, …: row `i` starts at byte `6 * i`, on line `i + 1`.
fn numbered(count: usize) -> Vec<u8> {
    (0..count)
        .flat_map(|i| format!("{i:05}\n").into_bytes())
        .collect()
}

fn record_at<R: Input>(r: &mut RecordReader<R>) -> (Next, Vec<u8>) {
    let n = r.next_record().unwrap();
    let raw = r.raw().to_vec();
    (n, raw)
}

/// Moves past the reader's buffer (4 KiB + 1 with a small record limit) into the input: the
/// `Input` skips the rest.
fn skip_past_the_buffer<R: Input>(mut r: RecordReader<R>) {
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(0, 6, 1, 2)), b"00000".to_vec())
    );
    r.skip_to(12_000, 2001).unwrap();
    assert_eq!((r.offset(), r.line()), (12_000, 2001));
    assert_eq!(
        record_at(&mut r),
        (
            Next::Record(span(12_000, 12_006, 2001, 2002)),
            b"02000".to_vec()
        )
    );
    // Within the buffer.
    r.skip_to(12_600, 2101).unwrap();
    assert_eq!(
        record_at(&mut r),
        (
            Next::Record(span(12_600, 12_606, 2101, 2102)),
            b"02100".to_vec()
        )
    );
    let back = r.skip_to(6, 2).unwrap_err();
    assert_eq!(back.kind(), io::ErrorKind::InvalidInput);
    assert!(
        back.to_string().contains("from byte 12606 to byte 6"),
        "{back}"
    );
    let past = r.skip_to(18_010, 3003).unwrap_err();
    assert_eq!(past.kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(
        past.to_string(),
        "input ends at byte 18000 before byte 18010"
    );
    assert_eq!(r.offset(), 18_000);
}

#[test]
fn skip_to_reads_past_the_buffer() {
    let data = numbered(3000);
    skip_past_the_buffer(RecordReader::new(Sequential(&data[..]), b',', 100));
    skip_past_the_buffer(RecordReader::new(
        Choppy {
            data: &data,
            n: 1000,
            interrupt: false,
        },
        b',',
        100,
    ));
    // Records are the same through interrupted short reads.
    let mut a = RecordReader::new(Sequential(&data[..]), b',', 100);
    let mut b = RecordReader::new(
        Choppy {
            data: &data,
            n: 7,
            interrupt: false,
        },
        b',',
        100,
    );
    assert_eq!(all(&mut a), all(&mut b));
}

#[test]
fn skip_to_seeks_a_file() {
    let data = numbered(3000);
    let mut tmp = tempfile::tempfile().unwrap();
    tmp.write_all(&data).unwrap();
    io::Seek::rewind(&mut tmp).unwrap();
    skip_past_the_buffer(RecordReader::new(tmp, b',', 100));
}

#[test]
fn file_skip_bytes_stops_at_the_end() {
    let mut tmp: File = tempfile::tempfile().unwrap();
    tmp.write_all(b"0123456789").unwrap();
    io::Seek::rewind(&mut tmp).unwrap();
    assert_eq!(tmp.skip_bytes(3).unwrap(), 3);
    assert_eq!(tmp.skip_bytes(4).unwrap(), 4);
    let mut rest = Vec::new();
    let mut t2 = tmp.try_clone().unwrap();
    assert_eq!(t2.skip_bytes(100).unwrap(), 3);
    assert_eq!(tmp.skip_bytes(1).unwrap(), 0);
    tmp.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty());
}

#[test]
fn default_skip_bytes() {
    let data = numbered(3000);
    let mut s = Sequential(&data[..]);
    assert_eq!(s.skip_bytes(0).unwrap(), 0);
    assert_eq!(s.skip_bytes(10_002).unwrap(), 10_002);
    let mut next = [0u8; 6];
    s.read_exact(&mut next).unwrap();
    assert_eq!(&next, b"01667\n");
    assert_eq!(s.skip_bytes(9_000).unwrap(), 18_000 - 10_008);

    /// Fails after its data.
    struct Broken<'a>(&'a [u8]);
    impl Read for Broken<'_> {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::Error::other("disk gone"));
            }
            self.0.read(b)
        }
    }
    impl Input for Broken<'_> {}
    // Skipping exactly what the input holds reads no further.
    assert_eq!(Broken(&data[..10]).skip_bytes(10).unwrap(), 10);
    let err = Broken(&data[..10]).skip_bytes(100).unwrap_err();
    assert_eq!(err.to_string(), "disk gone");
    let mut r = RecordReader::new(Broken(&data[..10]), b',', 100);
    assert!(matches!(r.next_record().unwrap(), Next::Record(_)));
    assert_eq!(r.next_record().unwrap_err().to_string(), "disk gone");
}

#[test]
fn buffered_reader_skips_its_buffer_first() {
    let data = numbered(100);
    let mut b = BufReader::with_capacity(16, Sequential(&data[..]));
    assert_eq!(b.fill_buf().unwrap().len(), 16);
    b.consume(3);
    assert_eq!(b.skip_bytes(5).unwrap(), 5);
    let mut x = [0u8; 4];
    b.read_exact(&mut x).unwrap();
    assert_eq!(&x, &data[8..12]);
    // 4 bytes left in the buffer, 96 more from the input.
    assert_eq!(b.skip_bytes(100).unwrap(), 100);
    b.read_exact(&mut x).unwrap();
    assert_eq!(&x, &data[112..116]);
    assert_eq!(b.skip_bytes(1000).unwrap(), 600 - 116);
    assert!(b.complete_at_eof());
}

/// An input still being written: its last line is not complete.
struct Growing<'a>(&'a [u8]);

impl Read for Growing<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        self.0.read(b)
    }
}

impl Input for Growing<'_> {
    fn complete_at_eof(&mut self) -> bool {
        false
    }
}

#[test]
fn wrappers_ask_the_input_whether_it_is_complete() {
    assert!(!BufReader::new(Growing(b"")).complete_at_eof());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"1,2\n3,4").unwrap();
    let gz = gz.finish().unwrap();
    let growing = flate2::bufread::MultiGzDecoder::new(BufReader::new(Growing(&gz)));
    let mut r = RecordReader::new(growing, b',', 100);
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(0, 4, 1, 2)), b"1,2".to_vec())
    );
    assert_eq!(r.next_record().unwrap(), Next::Incomplete);
    // Nothing of the last line was consumed.
    assert_eq!((r.offset(), r.line()), (4, 2));
    // The same stream, finished.
    let done = flate2::bufread::MultiGzDecoder::new(BufReader::new(Sequential(&gz[..])));
    let mut r = RecordReader::new(done, b',', 100);
    assert!(matches!(r.next_record().unwrap(), Next::Record(_)));
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(4, 7, 2, 2)), b"3,4".to_vec())
    );
}

#[test]
fn skip_lines_counts_a_last_line_without_break() {
    for (input, n, skipped, offset, line) in [
        (&b"a\nb"[..], 5, 2, 3, 2),
        (b"a\nb\n", 5, 2, 4, 3),
        (b"a\nb\nc\n", 2, 2, 4, 3),
        (b"", 1, 0, 0, 1),
    ] {
        let mut r = RecordReader::new(Sequential(input), b',', 100);
        assert_eq!(r.skip_lines(n).unwrap(), skipped, "{input:?}");
        assert_eq!((r.offset(), r.line()), (offset, line), "{input:?}");
    }
    // A skipped line longer than the buffer.
    let mut long = vec![b'#'; 10_000];
    long.extend(b"\n\"h\n1\n");
    let mut r = RecordReader::new(Sequential(&long[..]), b',', 100);
    assert_eq!(r.skip_lines(2).unwrap(), 2);
    assert_eq!((r.offset(), r.line()), (10_004, 3));
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(10_004, 10_006, 3, 4)), b"1".to_vec())
    );
}

#[test]
fn too_large_records_with_quotes() {
    // A quoted line break inside the long record: counted, not a record end.
    let mut a = b"1,\"".to_vec();
    a.extend(vec![b'x'; 5000]);
    a.extend(b"\nyyyyyyyyyy\"\n2,3\n");
    let mut r = RecordReader::new(Sequential(&a[..]), b',', 100);
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(0, 5016, 1, 3))
    );
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(5016, 5020, 3, 4)), b"2,3".to_vec())
    );

    // A quote that opens a field after the buffered part.
    let mut b = vec![b'x'; 5000];
    b.extend(b",\"a\nb\"\n2\n");
    let mut r = RecordReader::new(Sequential(&b[..]), b',', 100);
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(0, 5007, 1, 3))
    );
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(5007, 5009, 3, 4)), b"2".to_vec())
    );

    // A quote inside an unquoted field (the first byte after the 4097 buffered ones) is a
    // literal: the next line break ends the record.
    let mut c = vec![b'x'; 4097];
    c.extend(b"\"a\nb\"\n2\n");
    let mut r = RecordReader::new(Sequential(&c[..]), b',', 100);
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(0, 4100, 1, 2))
    );
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(4100, 4103, 2, 3)), f(&[b"b\""])),
            (Next::Record(span(4103, 4105, 3, 4)), f(&[b"2"])),
            (Next::End, vec![]),
        ]
    );

    // Too long up to the end of the input, with no line break.
    let d = vec![b'x'; 5000];
    let mut r = RecordReader::new(Sequential(&d[..]), b',', 100);
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(0, 5000, 1, 1))
    );
    assert_eq!(r.next_record().unwrap(), Next::End);

    // Too long up to the end of the input, with a quoted line break and no line break after
    // it: the input ends on the record's second line (line 3 of the input).
    let mut e = b"1\n\"".to_vec();
    e.extend(vec![b'x'; 5000]);
    e.extend(b"\nyy\"");
    let mut r = RecordReader::new(Sequential(&e[..]), b',', 100);
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(0, 2, 1, 2)), b"1".to_vec())
    );
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(2, 5007, 2, 3))
    );
    assert_eq!(r.next_record().unwrap(), Next::End);
    assert_eq!((r.offset(), r.line()), (5007, 3));
}

/// The limit holds for records that fit the reader's buffer too: a record longer than
/// `max_record` bytes (without its line break) is `TooLarge`.
#[test]
fn the_limit_holds_below_the_buffer_size() {
    let x = |n: usize| vec![b'x'; n];
    let mut input = x(100);
    input.extend(b"\r\n");
    input.extend(x(101));
    input.extend(b"\n\"");
    input.extend(x(70));
    input.extend(b"\n");
    input.extend(x(77));
    input.extend(b"\"\n1\n");
    input.extend(x(101));
    let mut r = RecordReader::new(Sequential(&input[..]), b',', 100);
    assert_eq!(r.next_record().unwrap(), Next::Record(span(0, 102, 1, 2)));
    assert_eq!(r.raw(), &x(100)[..]);
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(102, 204, 2, 3))
    );
    // 150 bytes with a quoted line break.
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(204, 355, 3, 5))
    );
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(355, 357, 5, 6)), b"1".to_vec())
    );
    // The last line, without a line break.
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(357, 458, 6, 6))
    );
    assert_eq!(r.next_record().unwrap(), Next::End);
}

#[test]
fn long_records_grow_the_buffer_up_to_the_limit() {
    // Over the initial 256 KiB buffer but within the limit: one record.
    let limit = 300_000;
    let mut a = vec![b'7'; 270_000];
    a.extend(b",8\n9\n");
    let mut r = RecordReader::new(Sequential(&a[..]), b',', limit);
    assert_eq!(
        r.next_record().unwrap(),
        Next::Record(span(0, 270_003, 1, 2))
    );
    assert_eq!(r.fields().len(), 2);
    assert_eq!(r.fields().get(1), Some(&b"8"[..]));
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(270_003, 270_005, 2, 3)), b"9".to_vec())
    );
    // Over the limit.
    let mut b = vec![b'7'; 310_000];
    b.extend(b"\n9\n");
    let mut r = RecordReader::new(Sequential(&b[..]), b',', limit);
    assert_eq!(
        r.next_record().unwrap(),
        Next::TooLarge(span(0, 310_001, 1, 2))
    );
    assert_eq!(
        record_at(&mut r),
        (Next::Record(span(310_001, 310_003, 2, 3)), b"9".to_vec())
    );
}

#[test]
fn quoted_record_across_reads() {
    // A quoted field with line breaks that spans several refills of the buffer.
    let mut a = b"1;\"".to_vec();
    a.extend(vec![b'q'; 3000]);
    a.extend(b"\n;\n");
    a.extend(vec![b'r'; 3000]);
    a.extend(b"\";2\n3;4");
    let mut r = RecordReader::new(
        Choppy {
            data: &a,
            n: 1000,
            interrupt: false,
        },
        b';',
        10_000,
    );
    let n = r.next_record().unwrap();
    assert_eq!(n, Next::Record(span(0, 6010, 1, 4)));
    let fields: Vec<Vec<u8>> = r.fields().iter().map(<[u8]>::to_vec).collect();
    let mut mid = vec![b'q'; 3000];
    mid.extend(b"\n;\n");
    mid.extend(vec![b'r'; 3000]);
    assert_eq!(fields, vec![b"1".to_vec(), mid, b"2".to_vec()]);
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(6010, 6013, 4, 4)), f(&[b"3", b"4"])),
            (Next::End, vec![]),
        ]
    );
}

/// A record of exactly `max_record` bytes without its line break (LF or RFC 4180's CR LF,
/// quoted or not) is a record however the input is cut into reads; one byte more is
/// `TooLarge`. Here every read delivers one byte, so the reader sees the record's last byte
/// before its line break.
#[test]
fn records_of_exactly_the_limit_in_one_byte_reads() {
    let one_byte = |data: &'static [u8]| Sized {
        data,
        sizes: vec![1; data.len()],
    };
    let mut r = RecordReader::new(one_byte(b"abcde\nfg\n"), b',', 5);
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(0, 6, 1, 2)), f(&[b"abcde"])),
            (Next::Record(span(6, 9, 2, 3)), f(&[b"fg"])),
            (Next::End, vec![]),
        ]
    );
    let mut r = RecordReader::new(one_byte(b"abcde\r\nabcdef\r\n\"b,d\"\r\nfg\r\n"), b',', 5);
    assert_eq!(
        all(&mut r),
        vec![
            (Next::Record(span(0, 7, 1, 2)), f(&[b"abcde"])),
            (Next::TooLarge(span(7, 15, 2, 3)), vec![]),
            (Next::Record(span(15, 22, 3, 4)), f(&[b"b,d"])),
            (Next::Record(span(22, 26, 4, 5)), f(&[b"fg"])),
            (Next::End, vec![]),
        ]
    );
}
