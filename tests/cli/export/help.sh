"$SP" export --help
