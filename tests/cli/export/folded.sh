# folded stacks: self time per unique stack, merged over ranks
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" export folded multi.h5 -o - -q
"$SP" export folded multi.h5 -o - -q --ranks 0 --exclude solve
