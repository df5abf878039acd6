# names that need escaping (<, &, quotes, tab, a control character, invalid
# UTF-8) stay well-formed XML; 25 regions get 25 different colours in every
# palette
"$SP_PYTHON" "$SP_SRC/tests/report/make_inputs.py" . || exit
for p in tab20 tab10 hues; do
  "$SP" report names.h5 -o "$p" -q --palette "$p" || exit
  echo "== $p"
  "$SP_PYTHON" "$SP_SRC/tests/report/check_report.py" "$p" names.h5 | grep -E 'gantt|json|FAIL'
done
grep -o 'data-region="&lt;b&gt;bold&lt;/b&gt; &amp; co"' tab20/gantt.svg | head -1
grep -o 'data-region="say &quot;hi&quot;"' tab20/gantt.svg | head -1
grep -o '\.r2[0-4]{fill:#[0-9a-f]*}' tab20/gantt.svg | wc -l
