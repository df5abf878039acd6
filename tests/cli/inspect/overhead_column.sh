# Files written by the library carry the measured cost of one begin/end
# pair; inspect shows each region's overhead share and flags regions whose
# calls are too short to measure (halo: two stores), not long ones (step).
OMP_NUM_THREADS=2 "$SP_BUILD/examples/sim" --steps 5 --quiet || exit 3
out=$("$SP" inspect profiling_data.h5 -q) || exit 4
echo "$out" | head -1 | grep -c 'ovh %'
echo "$out" | awk '$1 == "halo" { print "halo flagged:", ($NF ~ /!$/) }
                   $1 == "step" { print "step flagged:", ($NF ~ /!$/) }' | sort
"$SP" inspect profiling_data.h5 -q --columns region calls | head -1 | grep -c "ovh" || true
