# the options table's parsing: --opt=VALUE, comma-separated choice lists,
# a list option with no value, "--" ending options, defaults
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 -q --columns=region,calls --sort=calls; echo "exit $?"
"$SP" inspect multi.h5 -q --columns region,calls total --sort name; echo "exit $?"
"$SP" inspect multi.h5 -q --columns; echo "exit $?"
"$SP" inspect multi.h5 -q --sort; echo "exit $?"
"$SP" inspect -q --columns region calls -- multi.h5; echo "exit $?"
"$SP" inspect multi.h5 -q --columns region,nope; echo "exit $?"
"$SP" diff multi.h5 multi.h5 --threshold=-1; echo "exit $?"
"$SP" check multi.h5 multi.h5 --max-regression inf; echo "exit $?"
"$SP" report multi.h5 -o out --width=600.5; echo "exit $?"
"$SP" report multi.h5 -o out --max-bars 99; echo "exit $?"
