# the summary works without /events; percentiles read the corrupt events
cp "$SP_SRC/tests/golden/hostile_events.h5" .
"$SP" inspect hostile_events.h5 -q; echo "exit $?"
"$SP" inspect hostile_events.h5 -q --columns region p50
