# profiles that point outside themselves: an external link to another (valid)
# profile and one to itself, a soft link whose target crosses an external
# link, the per-rank groups (or a rank group) behind external links, and a
# dataset whose bytes are stored in a local file. Nothing outside the profile
# may be opened or printed.
source "$SP_SRC/tests/cli/hostile/common.bash"
cp "$HOSTILE"/external_*.h5 "$HOSTILE/valid.h5" .
echo "PRIVATE KEY MATERIAL" > secret.txt
probe external_link.h5 external_link_self.h5 external_storage.h5 external_storage_memory.h5
# a soft link into an external link, the other file a FIFO: opening it
# would block (a hang shows as exit 124)
mkdir fifo
mkfifo fifo/valid.h5
cp "$HOSTILE/soft_to_external.h5" "$HOSTILE"/external_{rank,memory,line_profile,likwid}.h5 fifo/
(cd fifo && probe soft_to_external.h5 external_rank.h5 external_memory.h5 external_likwid.h5)
# line profiles are read by report
(cd fifo && timeout 60 "$SP" report external_line_profile.h5 -o r.html > /dev/null 2>&1
 echo "report external_line_profile.h5: exit $?")
if "$SP" inspect external_storage.h5 2>&1 | grep -q PRIVATE; then
  echo "secret.txt was read and printed"
else
  echo "secret.txt was not read"
fi
