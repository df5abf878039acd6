"""site_dir.py - where `make install` puts the scope_profiler package.

Usage: python3 site_dir.py PREFIX

Prints "DIR;SEARCHED": DIR is a site directory of this interpreter under
PREFIX when it has one (Debian's /usr/local/lib/python3.X/dist-packages for
/usr/local, /usr/lib/python3/dist-packages for /usr), else the standard
<PREFIX>/lib/python3.X/site-packages layout; SEARCHED is 1 when the
interpreter looks in DIR without PYTHONPATH.
"""
import os
import sys
import sysconfig

prefix = os.path.abspath(sys.argv[1])
for entry in sys.path:
    if not entry or not entry.endswith(("site-packages", "dist-packages")):
        continue
    rel = os.path.relpath(os.path.abspath(entry), prefix)
    if rel.startswith("lib" + os.sep) or rel.startswith("lib64" + os.sep):
        print(f"{entry};1")
        break
else:
    scheme = "posix_prefix" if "posix_prefix" in sysconfig.get_scheme_names() else None
    path = sysconfig.get_path("platlib", scheme, vars={"base": prefix, "platbase": prefix})
    print(f"{path};{1 if path in sys.path else 0}")
