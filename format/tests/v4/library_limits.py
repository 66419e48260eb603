#!/usr/bin/env python3
"""Minimal reproductions of limits of the PyPI `tsfile` library on files it writes itself.
Writes one small file per case into DIR and prints one line per case:
`CASE <TAB> FILE <TAB> what the library reads back (or the error)`."""
import os
import sys

from tsfile import (Compressor, Field, RowRecord, TimeseriesSchema, TSDataType,
                    TSEncoding, TsFileReader, TsFileWriter)


def case(dirname, name, dtype, enc, values):
    path = os.path.join(dirname, name + ".tsfile")
    try:
        w = TsFileWriter(path)
        w.register_timeseries("root.sg.d", TimeseriesSchema("s", dtype, enc, Compressor.UNCOMPRESSED))
        for i, v in enumerate(values):
            w.write_row_record(RowRecord("root.sg.d", i, [Field("s", v, dtype)]))
        w.close()
    except Exception as e:  # the library refuses to write
        return "%s\t%s\twrite error: %s" % (name, path, type(e).__name__)
    r = TsFileReader(path)
    rs = r.query_timeseries("root.sg.d", ["s"], 0, 1 << 40)
    got = []
    while rs.next():
        got.append(rs.get_value_by_index(2))
    r.close()
    return "%s\t%s\t%r" % (name, path, got)


def main():
    d = sys.argv[1]
    print(case(d, "blob_nul", TSDataType.BLOB, TSEncoding.PLAIN, [b"\x01\x00\x02", b"\x01\x02"]))
    print(case(d, "text_nul", TSDataType.TEXT, TSEncoding.PLAIN, ["a\x00b", "ab"]))
    print(case(d, "boolean_rle", TSDataType.BOOLEAN, TSEncoding.RLE, [True, False, True]))
    print(case(d, "double_nan_inf_plain", TSDataType.DOUBLE, TSEncoding.PLAIN,
               [1.5, float("nan"), float("inf"), -float("inf")]))
    # SPRINTZ packs prediction errors of 2^30 and more in a form its reader maps back
    # with the wrong sign (a jump of 2e9 within one block of nine values).
    print(case(d, "int32_sprintz_big_jump", TSDataType.INT32, TSEncoding.SPRINTZ,
               [0, 2000000000, 0, 0, 0, 0, 0, 0, 0]))
    # A prediction error of exactly -2^63 (here: a value followed by its negation, whose
    # bits differ in the sign bit only) is packed as 0: the value is lost when writing.
    print(case(d, "double_sprintz_negation", TSDataType.DOUBLE, TSEncoding.SPRINTZ,
               [-2.5, 2.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]))


if __name__ == "__main__":
    main()
