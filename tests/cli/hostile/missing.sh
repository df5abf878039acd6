# groups and datasets a schema-2 profile cannot do without, each left out
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE"/missing_*.h5 .
probe missing_*.h5
