# The flame chart and flame graph come from the reader's walk of a rank's
# calls (nothing held per call), and so do the Gantt lanes and the time
# series; a file whose rows are out of start order is refused by the walk
# and takes the sorted path (and the Gantt pass of its own) instead. Each X_rev.h5 holds
# the calls of X.h5 with every row backwards: both must draw byte for byte
# alike (threads under a parent on another thread, virtual lanes of an
# unrecorded thread, containment without ids, a child outliving its parent,
# calls deeper than drawn, a row merged per pixel column, region filters,
# ranks without a chart, a rank refused part way).
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" --walk . || exit
same() { # name, then report options
  local x=$1 v
  shift
  for v in "$x" "${x}_rev"; do "$SP" report "$v.h5" -o "out_$v" -q "$@" 2>/dev/null || exit; done
  for c in flame_chart flame_graph; do
    if sed "s/${x}_rev/${x}/g" "out_${x}_rev/$c.svg" | cmp -s - "out_$x/$c.svg"; then
      echo "$x $*: $c same"
    else
      echo "$x $*: $c DIFFERS"
    fi
  done
  # the Gantt pass of its own reads a reversed row backwards: the same marks,
  # each lane's in the opposite order
  for c in gantt timeseries; do
    if sed "s/${x}_rev/${x}/g" "out_${x}_rev/$c.svg" | tr '<' '\n' | sort |
      cmp -s - <(tr '<' '\n' <"out_$x/$c.svg" | sort); then
      echo "$x $*: $c same marks"
    else
      echo "$x $*: $c DIFFERS"
    fi
  done
}
same threads --flame-ranks all
same threads
same threads --flame-ranks all --exclude solve step
same threads --flame-ranks 1 --include scope worker kernel
same unrec --flame-ranks all
same noids
same noids --exclude outer deep
# refused part way: what the walk took for the Gantt chart is dropped, and the
# pass of its own draws every lane once
same late --flame-ranks all
"$SP" report threads.h5 -o t -q --flame-ranks all || exit
"$SP_PYTHON" "$SP_SRC/tests/report/check_report.py" t threads.h5 --flame-ranks all | grep -E 'flame|FAIL'
# a worker's calls hang under the step another thread opened
grep -o '[a-z_.]* › [a-z]* › worker — [0-9]* calls' t/flame_graph.svg
grep -o '>worker — [0-9]* calls' t/flame_graph.svg
grep -o 'data-rank="[0-9]*" transform' t/flame_chart.svg | sort | uniq -c
"$SP" report unrec.h5 -o u -q || exit
"$SP_PYTHON" "$SP_SRC/tests/report/check_report.py" u unrec.h5 | grep -E 'flame|FAIL'
grep -o '>calls[a-z0-9 ()]* ▸' u/flame_chart.svg
"$SP" report noids.h5 -o n -q
grep -o 'deeper than [0-9]* levels not drawn\|[0-9]* calls merged into [0-9]* bars' n/flame_chart.svg
grep -o '[0-9]* calls merged into [0-9]* [a-z ]*' n/gantt.svg n/timeseries.svg
# past 64 threads a row's further lanes are dropped, as the Gantt pass drops them
"$SP" report lanes.h5 -o l -q || exit
grep -o '[0-9]* calls on threads past the lane limit not drawn' l/gantt.svg
