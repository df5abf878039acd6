# --metadata-only --full does not clip long values
cp "$SP_SRC/tests/golden/multi.h5" .
"$SP" inspect multi.h5 --metadata-only --full
