#!/usr/bin/env python3
"""tomllib_dump.py - the expected dumps of the TOML reader's test corpus,
produced by an independent parser (Python's tomllib), in the format of
sp__toml_dump(): one `dotted.key = value` line per leaf in document order,
tables inside arrays written inline, empty tables as `{}`, strings JSON-escaped
(plus U+007F), floats as Python's repr.

    python3 tests/config/tomllib_dump.py FILE.toml        # print the dump
    python3 tests/config/tomllib_dump.py --update         # rewrite valid/*.expect
    python3 tests/config/tomllib_dump.py --check-invalid  # which invalid/ files tomllib accepts

Files our reader accepts beyond TOML 1.0 (a byte order mark) are not in the
corpus; files it refuses although they are TOML (dates, [[x]]) are in invalid/.
"""
import glob
import json
import math
import os
import re
import sys
import tomllib

BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def jstr(s):
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def key(k):
    return k if BARE.match(k) else jstr(k)


def fl(x):
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "-inf" if x < 0 else "inf"
    return repr(x)


def inline(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return fl(v)
    if isinstance(v, str):
        return jstr(v)
    if isinstance(v, list):
        return "[" + ", ".join(inline(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{key(k)} = {inline(x)}" for k, x in v.items()) + "}"
    return f"<{type(v).__name__} {v}>"  # dates and times: our reader refuses them


def dump(t, prefix, out):
    if not t and prefix:
        out.append(f"{prefix} = {{}}")
        return
    for k, v in t.items():
        p = f"{prefix}.{key(k)}" if prefix else key(k)
        if isinstance(v, dict):
            dump(v, p, out)
        else:
            out.append(f"{p} = {inline(v)}")


def dump_file(path):
    with open(path, "rb") as f:
        data = tomllib.load(f)
    out = []
    dump(data, "", out)
    return "".join(line + "\n" for line in out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:] == ["--update"]:
        for path in sorted(glob.glob(os.path.join(here, "valid", "*.toml"))):
            with open(path[:-5] + ".expect", "w", encoding="utf-8", newline="\n") as f:
                f.write(dump_file(path))
        return 0
    if sys.argv[1:] == ["--check-invalid"]:
        for path in sorted(glob.glob(os.path.join(here, "invalid", "*.toml"))):
            try:
                dump_file(path)
                print("accepted by tomllib:", os.path.basename(path))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
                print("rejected by tomllib:", os.path.basename(path), "-", e)
        return 0
    sys.stdout.write(dump_file(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
