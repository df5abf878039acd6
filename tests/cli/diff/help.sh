"$SP" diff --help
