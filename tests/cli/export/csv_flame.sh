# flame plot data: depth from the call tree, absolute seconds (as upstream)
cp "$SP_SRC/tests/golden/hier_nested.h5" .
"$SP" export csv hier_nested.h5 --kind flame -o - -q | tr -d "\r"
"$SP" export csv hier_nested.h5 --kind flame -o - -q --ranks 1 | tr -d "\r"
