# paths.cmake - writes the package's _paths.py from paths.py.in (cmake -P):
# -DIN=paths.py.in -DOUT=.../_paths.py -DMEMORY_LIBRARY=... -DWHERE=build|install
configure_file(${IN} ${OUT} @ONLY)
