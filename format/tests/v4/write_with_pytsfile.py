#!/usr/bin/env python3
"""Writes a TsFile v4 of random data with the PyPI `tsfile` library (tree model,
non-aligned; the library's tree writer has no aligned registration) and prints the
canonical dump of the points it wrote, computed from its inputs, not read back.

Usage: write_with_pytsfile.py OUT.tsfile SEED ROWS SCHEMA...
SCHEMA is TYPE:ENCODING:COMPRESSION, e.g. INT32:TS_2DIFF:SNAPPY; each becomes a series
`<type>_<encoding>_<compression>` of devices root.py.d1 and root.py.x.y.d2.
"""
import datetime
import random
import sys

from tsfile import (Compressor, Field, RowRecord, TimeseriesSchema, TSDataType,
                    TSEncoding, TsFileWriter)

sys.path.insert(0, __import__("os").path.dirname(__file__))
from read_with_pytsfile import escape, text  # noqa: E402

PARTS = ["a", "Zz", "é", "温度", "\t", "x y", "\\", "😀"]


def value(rng, t, e):
    """A value the library keeps exactly under encoding e (FLOAT/DOUBLE under TS_2DIFF are
    stored with 2 decimal digits: multiples of 1/4 only)."""
    if e == TSEncoding.TS_2DIFF and t in (TSDataType.FLOAT, TSDataType.DOUBLE):
        return (rng.randrange(4000) - 2000) / 4.0
    return value_any(rng, t)


def value_any(rng, t):
    if t == TSDataType.BOOLEAN:
        return rng.random() < 0.5
    if t == TSDataType.INT32:
        return rng.choice([rng.randrange(100), rng.randrange(-2**31 + 1, 2**31), -rng.randrange(1 << 20)])
    if t in (TSDataType.INT64, TSDataType.TIMESTAMP):
        return rng.choice([rng.randrange(1000), rng.randrange(-2**63 + 1, 2**63), 1700000000000 + rng.randrange(1 << 30)])
    if t == TSDataType.FLOAT:
        return (rng.randrange(200000) - 100000) / 64.0
    if t == TSDataType.DOUBLE:
        return rng.choice([(rng.randrange(2000000) - 1000000) / 128.0, rng.uniform(-1e300, 1e300)])
    if t in (TSDataType.TEXT, TSDataType.STRING):
        return "".join(rng.choice(PARTS) for _ in range(rng.randrange(6)))
    if t == TSDataType.BLOB:
        return bytes(1 + rng.randrange(255) for _ in range(1 + rng.randrange(8)))
    if t == TSDataType.DATE:
        return datetime.date(1970 + rng.randrange(130), 1 + rng.randrange(12), 1 + rng.randrange(28))
    raise ValueError(t)


def main():
    out, seed, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    schemas = []
    for spec in sys.argv[4:]:
        t, e, c = spec.split(":")
        schemas.append(("%s_%s_%s" % (t.lower(), e.lower(), c.lower()), TSDataType[t], TSEncoding[e], Compressor[c]))
    w = TsFileWriter(out)
    devices = ["root.py.d1", "root.py.x.y.d2"]
    for d in devices:
        for name, t, e, c in schemas:
            w.register_timeseries(d, TimeseriesSchema(name, t, e, c))
    points = {}
    for d in devices:
        t = rng.randrange(-1000, 1000)
        for _ in range(rows):
            t += 1 + rng.randrange(50)
            fields = []
            for name, dt, enc, _ in schemas:
                if rng.random() < 0.2:
                    continue  # this series has no point at this time
                v = value(rng, dt, enc)
                prev = points.get((d, name, dt))
                while (enc == TSEncoding.SPRINTZ and dt in (TSDataType.FLOAT, TSDataType.DOUBLE)
                       and prev and v != 0 and v == -prev[-1][1]):
                    # the library's SPRINTZ loses a value that only flips the sign bit
                    # of the one before (library_limits.py: double_sprintz_negation)
                    v = value(rng, dt, enc)
                fields.append(Field(name, v, dt))
                points.setdefault((d, name, dt), []).append((t, v))
            if fields:
                w.write_row_record(RowRecord(d, t, fields))
    w.close()
    lines = []
    for (d, name, dt) in sorted(points, key=lambda k: (k[0].encode(), k[1].encode())):
        for t, v in points[(d, name, dt)]:
            lines.append("%s\t%s\t%s\t%d\t%s\n" % (escape(d), escape(name), dt.name, t, text(dt, v)))
    sys.stdout.write("".join(lines))


if __name__ == "__main__":
    main()
