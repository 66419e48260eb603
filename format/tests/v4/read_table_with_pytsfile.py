#!/usr/bin/env python3
"""Reads the tables of a TsFile v4 (table model) with the PyPI `tsfile` library
(`TsFileReader.get_all_table_schemas` + `query_table`) and prints the canonical table
dump: per table (by name) a line `#table NAME COL:CATEGORY:TYPE...` (TAG and FIELD
columns in schema order), then one line per row `NAME TIME TAGS... FIELDS...`
(tab-separated, values as in read_with_pytsfile.py, null as `\\N`), rows sorted by
their UTF-8 bytes.

Usage: read_table_with_pytsfile.py FILE. Exits non-zero if the library cannot read it.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_with_pytsfile import escape, text  # noqa: E402

from tsfile import ColumnCategory, TsFileReader  # noqa: E402

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
NULL = "\\N"


def dump(path, out):
    reader = TsFileReader(path)
    schemas = reader.get_all_table_schemas()
    for name in sorted(schemas, key=lambda n: n.encode("utf-8")):
        cols = [c for c in schemas[name].get_columns()
                if c.get_category() in (ColumnCategory.TAG, ColumnCategory.FIELD)]
        tags = [c for c in cols if c.get_category() == ColumnCategory.TAG]
        fields = [c for c in cols if c.get_category() == ColumnCategory.FIELD]
        ordered = tags + fields
        out.write("#table\t%s\t%s\n" % (escape(name), "\t".join(
            "%s:%s:%s" % (escape(c.get_column_name()), c.get_category().name,
                          c.get_data_type().name) for c in cols)))
        rs = reader.query_table(name, [c.get_column_name() for c in ordered],
                                I64_MIN, I64_MAX)
        lines = []
        while rs.next():
            vals = [escape(name), str(rs.get_value_by_index(1))]
            for i, c in enumerate(ordered):
                if rs.is_null_by_index(i + 2):
                    vals.append(NULL)
                else:
                    vals.append(text(c.get_data_type(), rs.get_value_by_index(i + 2)))
            lines.append("\t".join(vals) + "\n")
        rs.close()
        lines.sort(key=lambda s: s.encode("utf-8"))
        out.write("".join(lines))
    reader.close()


if __name__ == "__main__":
    dump(sys.argv[1], sys.stdout)
    sys.stdout.flush()
