# a missing file: exit 2 with the reason
"$SP" inspect nothere.h5
