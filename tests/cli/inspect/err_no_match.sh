# a glob that matches nothing
"$SP" inspect "runs/*.h5"
