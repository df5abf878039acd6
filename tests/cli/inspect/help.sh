"$SP" inspect --help
