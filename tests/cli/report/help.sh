# report --help: usage, charts, options and examples
"$SP" report --help
