# A spill written while finalize cleared the buffers of the calls it had
# written holds none of them: `recover` says partial and how many calls were
# lost, writes recovery_complete 0 and keeps the spill (it was reported as
# complete, and the spill removed). rewritten.spill: a real crash (SIGABRT)
# of a process that was rank 1 to a stand-in MPI ops table (file_path=job.h5,
# 5000 calls), after finalize compacted its buffers
# (tests/unit/test-watchspill.c,
# crash_spill_after_finalize_compacted_the_buffers_is_partial).
cp "$SP_SRC/tests/cli/recover/rewritten.spill" job.h5.spill
"$SP" recover job.h5.spill -o rec.h5; echo "exit $?"
ls job.h5.spill
"$SP" inspect rec.h5 --metadata-only | grep -E '^ *recover'
