"$SP" check --help
