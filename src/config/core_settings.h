/* core_settings.h - the settings of the core: the output file, the modes of
 * recording, the buffers, signals and what setup prints. One block of the
 * settings table (src/config/settings_table.h explains the columns).
 *
 * Macros only; included by the settings table and nothing else.
 */
#ifndef SP_CONFIG_CORE_SETTINGS_H
#define SP_CONFIG_CORE_SETTINGS_H

#define SP_GROUP_CORE(G) \
  G(core, 0, "General", "Where the profile goes, how calls are recorded, and what setup prints.")

#define SP__CHOICES_metadata_detail(C) \
  C(SP__METADATA_MINIMAL, "minimal") \
  C(SP__METADATA_FULL, "full")

#define SP_SETTINGS_CORE(X) \
  X(0, file_path, core, file_path, STR, "profiling_data.h5", 0, 0, \
    "Output HDF5 file. Relative paths are relative to the working directory.", READY) \
  X(1, label, core, label, STR, NULL, 0, 0, \
    "Short name for the run, stored as the `label` metadata attribute (default: the output file's stem).", READY) \
  X(10, deactivate_profiling, core, deactivate_profiling, BOOL, 0, 0, 1, \
    "Master off switch: every region becomes a no-op and no file is written.", READY) \
  X(15, deactivate_file_output, core, deactivate_file_output, BOOL, 0, 0, 1, \
    "Write no file at all; use with finalize returning results in memory.", READY) \
  X(17, aggregation_mode, core, aggregation_mode, BOOL, 0, 0, 1, \
    "Keep only count, total, min, max and exclusive total per region; no timeline. Excludes line, GPU, NVTX and LIKWID profiling.", READY) \
  X(19, track_threads, core, track_threads, BOOL, 0, 0, 1, \
    "Record the thread each call ran on and write a per-rank thread table.", READY) \
  X(20, track_async, core, track_async, BOOL, 0, 0, 1, \
    "Record user-level tasks (coroutines, fibers) announced with sp_task_switch(); implies track_threads.", READY) \
  X(21, capture_region_source, core, capture_region_source, BOOL, 0, 0, 1, \
    "Store the source text of each region's block or function, read once per file at finalize.", READY) \
  X(22, metadata_detail, core, metadata_detail, ENUM, SP__METADATA_MINIMAL, 0, 0, \
    "How much environment metadata is recorded: minimal (no user, host or environment) or full.", READY) \
  X(23, buffer_limit, core, buffer_limit, INT, 1024, 1, INT64_C(1) << 40, \
    "Initial per-thread event buffer capacity; buffers double beyond it as needed.", READY) \
  X(28, enable_tags, core, enable_tags, LIST, NULL, 0, 0, \
    "Opt-in region tags to record (comma list); \"*\" enables every opt-in tag.", READY) \
  X(29, signals, core, signals, LIST, "SIGTERM,SIGINT,SIGXCPU,SIGUSR1", 0, 0, \
    "Signals on which the run so far is written, its open calls ended there and marked cut short, before the signal takes effect (e.g. a batch system's time limit); a signal the program handles itself is left to it; empty disables.", READY) \
  X(30, crash_spill, core, crash_spill, BOOL, 1, 0, 1, \
    "On SIGSEGV, SIGBUS, SIGFPE, SIGABRT or SIGILL, write the raw buffers to <file_path>.spill for `scope-profiler recover`.", READY) \
  X(31, finalize_on_exit, core, finalize_on_exit, BOOL, 1, 0, 1, \
    "Write a run the program did not finalize when the process exits (not under MPI, where finalize is collective).", READY) \
  X(32, max_buffer_bytes, core, max_buffer_bytes, INT, INT64_C(1) << 30, INT64_C(1) << 20, INT64_MAX, \
    "Memory budget for recorded events: once growing a full buffer would take the live buffers past a quarter of it, the buffer is streamed to a staging file by a writer thread instead (merged at finalize); the rest holds buffers on their way to the writer.", READY) \
  X(34, quiet, core, quiet, BOOL, 0, 0, 1, \
    "Print nothing on stderr: no warning about a setting this build cannot honour, and no line saying why a setup failed (the status and sp_last_error() still do).", READY)

#define SP_RULES_CORE(R) \
  R(IMPLIES, track_async, track_threads, 0, 0, 0, "a task is recorded together with the thread it ran on")

#endif
