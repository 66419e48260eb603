#!/usr/bin/env python3
"""Reads a TsFile v4 with the PyPI `tsfile` library (Apache TsFile's C++ reader) and
prints the canonical point dump (format: shared conformance README; v4 types: DATE as
YYYY-MM-DD, BLOB as 0x + lower-case hex, TIMESTAMP as int64).

Usage: read_with_pytsfile.py FILE [FILE...]   (one dump per file, separated by a line
"== FILE"). Exits non-zero if the library cannot read a file.
"""
import math
from decimal import Decimal
import sys

import numpy as np
import tsfile
from tsfile import TSDataType, TsFileReader

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1


def escape(s):
    out = []
    for ch in s:
        o = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif o < 0x20 or o == 0x7F:
            out.append("\\u%04X" % o)
        else:
            out.append(ch)
    return "".join(out)


def two_digit_rule(x, d, exp, single):
    """Java's rule for a 1-digit shortest decimal: of all decimals of 1 or 2 digits that
    read back as x, take the one closest to x (ties: even last digit)."""
    exact = Decimal(float(x))
    parse = (lambda t: np.float32(t)) if single else (lambda t: np.float64(t))
    best = None
    for m in range(10, 100):
        cand = Decimal(m).scaleb(exp - 1)
        if parse(str(cand)) != x:
            continue
        key = (abs(cand - exact), m % 2)
        if best is None or key < best[0]:
            best = (key, m)
    if best is None:
        return str(d), exp
    m = str(best[1]).rstrip("0")
    return m, exp


def java_float(v, single):
    """Java's Float/Double.toString under the shortest-decimal rule."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    x = np.float32(v) if single else np.float64(v)
    sci = np.format_float_scientific(abs(x), unique=True, trim="-")
    mant, exp = sci.split("e")
    exp = int(exp)
    digits = mant.replace(".", "")
    digits = digits.rstrip("0") or "0"
    if len(digits) == 1:
        digits, exp = two_digit_rule(abs(x), int(digits), exp, single)
    sign = "-" if v < 0 else ""
    if -3 <= exp < 7:
        if exp >= 0:
            ip = digits[: exp + 1].ljust(exp + 1, "0")
            fp = digits[exp + 1 :] or "0"
        else:
            ip = "0"
            fp = "0" * (-exp - 1) + digits
        return sign + ip + "." + fp
    return sign + digits[0] + "." + (digits[1:] or "0") + "E" + str(exp)


def text(dtype, v):
    if dtype == TSDataType.BOOLEAN:
        return "true" if v else "false"
    if dtype in (TSDataType.INT32, TSDataType.INT64, TSDataType.TIMESTAMP):
        return str(int(v))
    if dtype == TSDataType.FLOAT:
        return java_float(float(v), True)
    if dtype == TSDataType.DOUBLE:
        return java_float(float(v), False)
    if dtype == TSDataType.DATE:
        return "%04d-%02d-%02d" % (v.year, v.month, v.day)
    if dtype == TSDataType.BLOB:
        return "0x" + bytes(v).hex()
    if isinstance(v, bytes):
        v = v.decode("utf-8", "replace")
    return escape(v)


def dump(path, out):
    reader = TsFileReader(path)
    schemas = reader.get_all_timeseries_schemas()
    lines = []
    for device in sorted(schemas, key=lambda d: d.encode("utf-8")):
        ts_list = sorted(
            schemas[device].get_timeseries_list(),
            key=lambda t: t.get_timeseries_name().encode("utf-8"),
        )
        for ts in ts_list:
            name = ts.get_timeseries_name()
            dtype = ts.get_data_type()
            rs = reader.query_timeseries(device, [name], I64_MIN, I64_MAX)
            points = []
            while rs.next():
                if rs.is_null_by_index(2):
                    continue
                points.append((rs.get_value_by_index(1), rs.get_value_by_index(2)))
            rs.close()
            points.sort(key=lambda p: p[0])
            prefix = "%s\t%s\t%s\t" % (escape(device), escape(name), dtype.name)
            for t, v in points:
                lines.append("%s%d\t%s\n" % (prefix, t, text(dtype, v)))
    reader.close()
    out.write("".join(lines))


def main():
    out = sys.stdout
    for path in sys.argv[1:]:
        if len(sys.argv) > 2:
            out.write("== %s\n" % path)
        dump(path, out)
    out.flush()


if __name__ == "__main__":
    main()
