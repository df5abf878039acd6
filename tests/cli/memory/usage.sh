# no capture, an unknown option, a bad --top: usage errors (exit 2)
"$SP" memory; echo "exit $?"
"$SP" memory x.bin --bogus; echo "exit $?"
"$SP" memory x.bin --top many; echo "exit $?"
