# --help, and the usage errors (exit 2, nothing written)
"$SP" import-native --help; echo "exit $?"
"$SP" import-native; echo "exit $?"
"$SP" import-native x.spt; echo "exit $?"
"$SP" import-native x.spt -o out.h5 --frobnicate; echo "exit $?"
"$SP" import-native missing.spt -o out.h5; echo "exit $?"
ls
