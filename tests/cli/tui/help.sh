"$SP" tui --help
