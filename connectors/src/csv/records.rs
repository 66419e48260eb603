//! Splitting a byte stream into CSV records with exact byte offsets and line numbers.
//!
//! RFC 4180 with the usual leniency: a field that starts with `"` is quoted (`""` inside is one
//! quote, delimiters and line breaks inside are data); a quote elsewhere is a literal character;
//! text after a closing quote is appended to the field. Records end at LF or CRLF outside
//! quotes. Blank (or whitespace-only) lines are skipped but counted.
//!
//! Memory is bounded: a record longer than the configured limit is skipped without being
//! buffered and reported as [`Next::TooLarge`].

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use memchr::{memchr, memchr2};

/// The byte source under a [`RecordReader`]: reads, skips, and says at its end whether a final
/// line without a line break may be taken as complete.
pub trait Input: Read {
    /// Skips `n` bytes (default: reads and discards them). Returns the bytes skipped (fewer at
    /// the end of the input).
    fn skip_bytes(&mut self, n: u64) -> io::Result<u64> {
        let mut buf = [0u8; 8192];
        let mut left = n;
        while left > 0 {
            let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
            match self.read(&mut buf[..want]) {
                Ok(0) => break,
                Ok(k) => left -= k as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n - left)
    }

    /// Called at the end of the input when the last line has no line break: whether that line
    /// is complete (default: yes, the input is finished). A source watching a file that may
    /// still grow answers no when the file changed since reading started.
    fn complete_at_eof(&mut self) -> bool {
        true
    }
}

/// Any [`Read`] as an [`Input`] that skips by reading.
#[derive(Debug)]
pub struct Sequential<R>(pub R);

impl<R: Read> Read for Sequential<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl<R: Read> Input for Sequential<R> {}

impl Input for File {
    fn skip_bytes(&mut self, n: u64) -> io::Result<u64> {
        let here = self.stream_position()?;
        let len = self.metadata()?.len();
        let to = here.saturating_add(n).min(len.max(here));
        self.seek(SeekFrom::Start(to))?;
        Ok(to - here)
    }
}

impl<R: Input + io::BufRead> Input for flate2::bufread::MultiGzDecoder<R> {
    fn complete_at_eof(&mut self) -> bool {
        self.get_mut().complete_at_eof()
    }
}

impl<R: Input> Input for io::BufReader<R> {
    fn skip_bytes(&mut self, n: u64) -> io::Result<u64> {
        let buffered = self.buffer().len();
        if n <= buffered as u64 {
            io::BufRead::consume(self, n as usize);
            return Ok(n);
        }
        io::BufRead::consume(self, buffered);
        Ok(buffered as u64 + self.get_mut().skip_bytes(n - buffered as u64)?)
    }

    fn complete_at_eof(&mut self) -> bool {
        self.get_mut().complete_at_eof()
    }
}

/// Where a record lies in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordSpan {
    /// Byte offset of the record's first byte.
    pub offset: u64,
    /// Byte offset just past the record and its line break.
    pub end: u64,
    /// 1-based line number of the record's first byte.
    pub line: u64,
    /// 1-based line number of the next record (counts line breaks inside quoted fields).
    pub next_line: u64,
}

/// What [`RecordReader::next_record`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// A record; its fields are in [`RecordReader::fields`].
    Record(RecordSpan),
    /// A record longer than the limit (skipped).
    TooLarge(RecordSpan),
    /// The input ends inside a quoted field (the rest of the input is this record).
    Unterminated(RecordSpan),
    /// The input ends with a line that has no line break and the input said it is not complete
    /// ([`Input::complete_at_eof`]); nothing of it was consumed.
    Incomplete,
    /// End of input.
    End,
}

/// The fields of the current record: byte ranges into one buffer.
#[derive(Debug, Default)]
pub struct Fields {
    scratch: Vec<u8>,
    ranges: Vec<(usize, usize)>,
    quoted: bool,
}

/// A view of the current record's fields.
#[derive(Debug, Clone, Copy)]
pub struct FieldsRef<'a> {
    base: &'a [u8],
    ranges: &'a [(usize, usize)],
}

impl<'a> FieldsRef<'a> {
    /// Number of fields.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether there is no field.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Field `i` (unquoted, unescaped), if present.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&'a [u8]> {
        let &(a, b) = self.ranges.get(i)?;
        self.base.get(a..b)
    }

    /// All fields.
    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.ranges.iter().filter_map(|&(a, b)| self.base.get(a..b))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Q {
    FieldStart,
    Unquoted,
    Quoted,
    QuoteInQuoted,
}

/// Runs the quote-aware state machine over `window`, counting newlines inside quotes;
/// returns the index of the first newline that ends the record, if any.
#[inline]
fn scan_quoted(window: &[u8], delimiter: u8, state: &mut Q, newlines: &mut u64) -> Option<usize> {
    for (i, &b) in window.iter().enumerate() {
        *state = match (*state, b) {
            (Q::FieldStart, b'"') => Q::Quoted,
            (Q::Quoted, b'"') => Q::QuoteInQuoted,
            (Q::QuoteInQuoted, b'"') => Q::Quoted,
            (Q::Quoted, b'\n') => {
                *newlines += 1;
                Q::Quoted
            }
            (Q::Quoted, _) => Q::Quoted,
            (_, b'\n') => return Some(i),
            (_, b) if b == delimiter => Q::FieldStart,
            (_, _) => Q::Unquoted,
        };
    }
    None
}

/// Reads records from an [`Input`].
#[derive(Debug)]
pub struct RecordReader<R> {
    inner: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    offset: u64,
    line: u64,
    max_record: usize,
    delimiter: u8,
    fields: Fields,
    record: (usize, usize),
    /// The scan of the last record saw no quote in it.
    quote_free: bool,
}

const INITIAL_BUFFER: usize = 256 * 1024;

impl<R: Input> RecordReader<R> {
    /// A reader at offset 0, line 1. Records longer than `max_record` bytes are skipped.
    pub fn new(inner: R, delimiter: u8, max_record: usize) -> Self {
        RecordReader {
            inner,
            buf: vec![0; INITIAL_BUFFER.min(max_record.max(4096) + 1)],
            start: 0,
            end: 0,
            eof: false,
            offset: 0,
            line: 1,
            max_record: max_record.max(1),
            delimiter,
            fields: Fields::default(),
            record: (0, 0),
            quote_free: false,
        }
    }

    /// Byte offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Line number of the next unread byte.
    pub fn line(&self) -> u64 {
        self.line
    }

    /// The input.
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    fn advance(&mut self, n: usize) {
        self.start += n;
        self.offset += n as u64;
    }

    /// Reads more input; returns false at the end of input. Keeps `buf[start..end]`.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let cap = (self.max_record + 2).max(self.buf.len());
            if self.buf.len() >= cap {
                return Ok(true); // full: the caller handles an over-long record
            }
            let new_len = (self.buf.len() * 2).min(cap);
            self.buf.resize(new_len, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Skips `n` physical lines (quotes are not interpreted). Returns the lines skipped.
    pub fn skip_lines(&mut self, n: u64) -> io::Result<u64> {
        let mut done = 0;
        let mut partial = false;
        while done < n {
            if let Some(i) = memchr(b'\n', &self.buf[self.start..self.end]) {
                self.advance(i + 1);
                self.line += 1;
                done += 1;
                partial = false;
                continue;
            }
            // Drop what we have of this line and read on.
            let pending = self.end - self.start;
            partial |= pending > 0;
            self.advance(pending);
            if !self.fill()? {
                if partial {
                    done += 1;
                }
                break;
            }
        }
        Ok(done)
    }

    /// Moves forward to byte `offset`, which must start a record (a checkpoint), whose line
    /// number is `line`.
    pub fn skip_to(&mut self, offset: u64, line: u64) -> io::Result<()> {
        if offset < self.offset {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "cannot move back from byte {} to byte {offset}",
                    self.offset
                ),
            ));
        }
        let delta = offset - self.offset;
        let buffered = (self.end - self.start) as u64;
        if delta <= buffered {
            self.advance(delta as usize);
        } else {
            let rest = delta - buffered;
            self.advance(buffered as usize);
            let skipped = self.inner.skip_bytes(rest)?;
            self.offset += skipped;
            if skipped < rest {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("input ends at byte {} before byte {offset}", self.offset),
                ));
            }
        }
        self.line = line;
        Ok(())
    }

    /// The fields of the last [`Next::Record`].
    pub fn fields(&self) -> FieldsRef<'_> {
        let base: &[u8] = if self.fields.quoted {
            &self.fields.scratch
        } else {
            self.buf.get(self.record.0..self.record.1).unwrap_or(&[])
        };
        FieldsRef {
            base,
            ranges: &self.fields.ranges,
        }
    }

    /// The raw bytes of the last [`Next::Record`] (without its line break).
    pub fn raw(&self) -> &[u8] {
        self.buf.get(self.record.0..self.record.1).unwrap_or(&[])
    }

    /// Reads the next record.
    pub fn next_record(&mut self) -> io::Result<Next> {
        loop {
            let next = self.scan()?;
            if let Next::Record(_) = next {
                if self.raw().iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                    // A blank or whitespace-only line (its line break counted): skip.
                    continue;
                }
                self.split();
            }
            return Ok(next);
        }
    }

    /// Finds the end of the record at `start`, refilling as needed.
    fn scan(&mut self) -> io::Result<Next> {
        let line = self.line;
        let offset = self.offset;
        let mut pos = 0usize; // relative to start
        let mut state = Q::FieldStart;
        let mut newlines = 0u64;
        let mut slow = false;
        loop {
            let window = &self.buf[self.start + pos..self.end];
            if !slow {
                match memchr2(b'\n', b'"', window) {
                    Some(i) if window[i] == b'\n' => {
                        let len = pos + i;
                        self.quote_free = true;
                        return Ok(self.finish(offset, line, len, len + 1, 0));
                    }
                    Some(_) => {
                        // A quote: rescan this record byte by byte from its start.
                        slow = true;
                        pos = 0;
                        continue;
                    }
                    None => pos += window.len(),
                }
            } else {
                if let Some(i) = scan_quoted(window, self.delimiter, &mut state, &mut newlines) {
                    let len = pos + i;
                    self.quote_free = false;
                    return Ok(self.finish(offset, line, len, len + 1, newlines));
                }
                pos += window.len();
            }
            // Need more input. The limit is on the record without its line break: `pos`
            // bytes without a line end may still be the limit's bytes and a CR.
            if pos > self.max_record + 1 {
                return self.skip_long(offset, line, pos, state, slow, newlines);
            }
            if !self.fill()? {
                if pos == 0 {
                    return Ok(Next::End);
                }
                if state == Q::Quoted {
                    let span = self.consume(offset, line, pos, newlines);
                    return Ok(Next::Unterminated(span));
                }
                if !self.inner.complete_at_eof() {
                    return Ok(Next::Incomplete);
                }
                self.quote_free = !slow;
                return Ok(self.finish(offset, line, pos, pos, newlines));
            }
        }
    }

    fn consume(&mut self, offset: u64, line: u64, total: usize, newlines: u64) -> RecordSpan {
        self.advance(total);
        let next_line = line + newlines;
        self.line = next_line;
        RecordSpan {
            offset,
            end: offset + total as u64,
            line,
            next_line,
        }
    }

    /// Takes the record `buf[start..start+len]` whose terminator ends at `start+total`
    /// ([`Next::TooLarge`] when it is longer than the limit without its line break).
    fn finish(&mut self, offset: u64, line: u64, len: usize, total: usize, nl: u64) -> Next {
        let mut rec_end = self.start + len;
        if rec_end > self.start && self.buf[rec_end - 1] == b'\r' {
            rec_end -= 1;
        }
        self.record = (self.start, rec_end);
        let terminated = total > len;
        // Longer than the limit but within the buffer (which holds at least 4 KiB).
        let too_large = rec_end - self.start > self.max_record;
        self.advance(total);
        let next_line = line + nl + u64::from(terminated);
        self.line = next_line;
        let span = RecordSpan {
            offset,
            end: offset + total as u64,
            line,
            next_line,
        };
        if too_large {
            Next::TooLarge(span)
        } else {
            Next::Record(span)
        }
    }

    /// Skips the rest of an over-long record.
    fn skip_long(
        &mut self,
        offset: u64,
        line: u64,
        mut pos: usize,
        mut state: Q,
        slow: bool,
        mut newlines: u64,
    ) -> io::Result<Next> {
        // Re-derive the quote state from the buffered part if we were on the fast path (no
        // quote seen so far: the state is "not in quotes").
        if !slow {
            state = Q::Unquoted;
        }
        let d = self.delimiter;
        let mut total = 0u64;
        loop {
            let window = &self.buf[self.start + pos..self.end];
            if let Some(i) = scan_quoted(window, d, &mut state, &mut newlines) {
                let n = pos + i + 1;
                total += n as u64;
                self.advance(n);
                let next_line = line + newlines + 1;
                self.line = next_line;
                return Ok(Next::TooLarge(RecordSpan {
                    offset,
                    end: offset + total,
                    line,
                    next_line,
                }));
            }
            let n = self.end - self.start;
            total += n as u64;
            self.advance(n);
            pos = 0;
            if !self.fill()? {
                let next_line = line + newlines;
                self.line = next_line;
                return Ok(Next::TooLarge(RecordSpan {
                    offset,
                    end: offset + total,
                    line,
                    next_line,
                }));
            }
        }
    }

    /// Splits the current record into fields.
    fn split(&mut self) {
        let (a, b) = self.record;
        let rec = &self.buf[a..b];
        let d = self.delimiter;
        self.fields.ranges.clear();
        if self.quote_free || memchr(b'"', rec).is_none() {
            self.fields.quoted = false;
            // Cells are short: a byte loop beats a search call per cell.
            let mut s = 0;
            for (i, &c) in rec.iter().enumerate() {
                if c == d {
                    self.fields.ranges.push((s, i));
                    s = i + 1;
                }
            }
            self.fields.ranges.push((s, rec.len()));
            return;
        }
        self.fields.quoted = true;
        let out = &mut self.fields.scratch;
        out.clear();
        let mut state = Q::FieldStart;
        let mut field_start = 0;
        for &c in rec {
            state = match (state, c) {
                (Q::FieldStart, b'"') => Q::Quoted,
                (Q::Quoted, b'"') => Q::QuoteInQuoted,
                (Q::QuoteInQuoted, b'"') => {
                    out.push(b'"');
                    Q::Quoted
                }
                (Q::Quoted, c) => {
                    out.push(c);
                    Q::Quoted
                }
                (_, c) if c == d => {
                    self.fields.ranges.push((field_start, out.len()));
                    field_start = out.len();
                    Q::FieldStart
                }
                (_, c) => {
                    out.push(c);
                    Q::Unquoted
                }
            };
        }
        self.fields.ranges.push((field_start, out.len()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<(Next, Vec<Vec<u8>>)> {
        let mut r = RecordReader::new(Sequential(input), b',', max);
        let mut out = Vec::new();
        loop {
            let n = r.next_record().unwrap();
            let fields = match &n {
                Next::Record(_) => r.fields().iter().map(|f| f.to_vec()).collect(),
                _ => Vec::new(),
            };
            let end = n == Next::End;
            out.push((n, fields));
            if end {
                break;
            }
        }
        out
    }

    /// RFC 4180: a quoted field keeps its delimiter, also in a last record that the input ends
    /// without a line break (the scan saw its quote, so the split must not take the fast path);
    /// an unquoted record before and after it splits at every delimiter.
    #[test]
    fn a_quoted_last_record_without_a_line_break_splits_by_its_quotes() {
        let fields = |input: &[u8]| -> Vec<Vec<Vec<u8>>> {
            all(input, 64)
                .into_iter()
                .filter(|(n, _)| matches!(n, Next::Record(_)))
                .map(|(_, f)| f)
                .collect()
        };
        let v = |cells: &[&str]| -> Vec<Vec<u8>> {
            cells.iter().map(|c| c.as_bytes().to_vec()).collect()
        };
        assert_eq!(
            fields(b"x,y\na,\"b,c\""),
            vec![v(&["x", "y"]), v(&["a", "b,c"])]
        );
        assert_eq!(
            fields(b"a,\"b,c\"\nx,y"),
            vec![v(&["a", "b,c"]), v(&["x", "y"])]
        );
    }

    fn span(offset: u64, end: u64, line: u64, next_line: u64) -> RecordSpan {
        RecordSpan {
            offset,
            end,
            line,
            next_line,
        }
    }

    fn f(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn offsets_lines_quotes_crlf_blank_lines() {
        let input = b"a,b\n\n1,\"x\ny\"\r\n  \n2,\"q\"\"q\",\n3";
        let got = all(input, 1000);
        assert_eq!(
            got,
            vec![
                (Next::Record(span(0, 4, 1, 2)), f(&["a", "b"])),
                (Next::Record(span(5, 14, 3, 5)), f(&["1", "x\ny"])),
                (Next::Record(span(17, 27, 6, 7)), f(&["2", "q\"q", ""])),
                (Next::Record(span(27, 28, 7, 7)), f(&["3"])),
                (Next::End, vec![]),
            ]
        );
    }

    #[test]
    fn literal_quote_inside_unquoted_field() {
        let got = all(b"5\" pipe,b\nnext\n", 1000);
        assert_eq!(
            got[0],
            (Next::Record(span(0, 10, 1, 2)), f(&["5\" pipe", "b"]))
        );
        assert_eq!(got[1], (Next::Record(span(10, 15, 2, 3)), f(&["next"])));
    }

    #[test]
    fn unterminated_quote_at_end() {
        let got = all(b"1,2\n3,\"abc\n", 1000);
        assert_eq!(got[1].0, Next::Unterminated(span(4, 11, 2, 3)));
        assert_eq!(got[2].0, Next::End);
    }

    #[test]
    fn too_large_record_is_skipped_with_bounded_buffer() {
        let mut input = b"1,2\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 100_000));
        input.extend(b"\n3,4\n");
        let mut r = RecordReader::new(Sequential(&input[..]), b',', 1000);
        assert!(matches!(r.next_record().unwrap(), Next::Record(_)));
        assert_eq!(
            r.next_record().unwrap(),
            Next::TooLarge(span(4, 100_005, 2, 3))
        );
        assert!(r.buf.len() <= 4096 + 1);
        assert_eq!(
            r.next_record().unwrap(),
            Next::Record(span(100_005, 100_009, 3, 4))
        );
        assert_eq!(r.fields().iter().collect::<Vec<_>>(), vec![b"3", b"4"]);
    }

    #[test]
    fn incomplete_last_line_when_input_says_so() {
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
        let mut r = RecordReader::new(Growing(b"1,2\n3,2"), b',', 100);
        assert!(matches!(r.next_record().unwrap(), Next::Record(_)));
        assert_eq!(r.next_record().unwrap(), Next::Incomplete);
        assert_eq!(r.offset(), 4);
    }

    #[test]
    fn skip_lines_and_skip_to() {
        let input = b"meta \"x\n# more\nh1,h2\n1,2\n3,4\n";
        let mut r = RecordReader::new(Sequential(&input[..]), b',', 100);
        assert_eq!(r.skip_lines(2).unwrap(), 2);
        assert_eq!((r.offset(), r.line()), (15, 3));
        assert!(matches!(r.next_record().unwrap(), Next::Record(_)));
        r.skip_to(25, 5).unwrap();
        assert_eq!(r.next_record().unwrap(), Next::Record(span(25, 29, 5, 6)));
        assert_eq!(r.next_record().unwrap(), Next::End);
    }

    /// One-byte reads exercise every refill boundary.
    #[test]
    fn tiny_reads_give_the_same_records() {
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
                if self.0.is_empty() || b.is_empty() {
                    return Ok(0);
                }
                b[0] = self.0[0];
                self.0 = &self.0[1..];
                Ok(1)
            }
        }
        impl Input for OneByte<'_> {}
        let input: &[u8] = b"a,b\r\n\r\n1,\"x\r\ny\"\r\n2,\"q\"\"q\",\n3\r";
        let mut a = RecordReader::new(Sequential(input), b',', 1000);
        let mut b = RecordReader::new(OneByte(input), b',', 1000);
        loop {
            let (x, y) = (a.next_record().unwrap(), b.next_record().unwrap());
            assert_eq!(x, y);
            if x == Next::End {
                break;
            }
            assert_eq!(
                a.fields().iter().collect::<Vec<_>>(),
                b.fields().iter().collect::<Vec<_>>()
            );
        }
    }

    proptest::proptest! {
        /// Agrees with the csv crate on fields for well-formed input.
        #[test]
        fn matches_csv_crate(rows in proptest::collection::vec(
            proptest::collection::vec("[a-c,\" \n]{0,6}", 1..5), 1..20)) {
            let mut w = csv::WriterBuilder::new().flexible(true).from_writer(Vec::new());
            // A lone field of spaces is a blank line to us and a record to the csv crate.
            for row in rows.iter().filter(|r| !(r.len() == 1 && !r[0].is_empty() && r[0].trim_matches(' ').is_empty())) {
                w.write_record(row).unwrap();
            }
            let data = w.into_inner().unwrap();
            let mut oracle = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(&data[..]);
            let mut expected = Vec::new();
            for rec in oracle.byte_records() {
                let rec = rec.unwrap();
                expected.push(rec.iter().map(|f| f.to_vec()).collect::<Vec<_>>());
            }
            let mut r = RecordReader::new(Sequential(&data[..]), b',', 1 << 16);
            let mut got = Vec::new();
            loop {
                match r.next_record().unwrap() {
                    Next::Record(_) => got.push(r.fields().iter().map(|f| f.to_vec()).collect::<Vec<_>>()),
                    Next::End => break,
                    other => panic!("unexpected {other:?}"),
                }
            }
            proptest::prop_assert_eq!(got, expected);
        }
    }
}
