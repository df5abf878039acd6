/* settings.h - the single source of truth for scope-profiler's settings.
 *
 * One row per setting. Everything that knows about settings is generated from
 * this list: the sp_options struct and its group structs, the key setter, the
 * TOML and environment parsers, validation of types/enumerations/bounds, the
 * resolved configuration, the metadata attribute "settings" written to every
 * output file, `scope-profiler config --help` and docs/configuration.md.
 *
 * SP_SETTINGS(X) expands X once per setting:
 *
 *   X(name, GROUP, short_name, TYPE, default, lo, hi, choices, doc, STATUS)
 *
 *   name        flat name (the setup() keyword, the TOML key, the environment
 *               variable SCOPE_PROFILER_<NAME upper-cased>)
 *   GROUP       NONE, MEMRAY, GPU or HDF5: the option group that also spells it
 *   short_name  the field name inside that group ([profiling.hdf5] compression)
 *   TYPE        BOOL, INT, STR, ENUM (a string from `choices`) or LIST
 *               (comma-separated strings / a TOML array of strings)
 *   default     a C literal; NULL for "unset" strings, SP_INT_NONE for "unset" ints
 *   lo, hi      bounds for INT (inclusive)
 *   choices     "|"-separated allowed values for ENUM, else ""
 *   doc         one line for --help and the docs
 *   STATUS      READY, or PLANNED for a setting whose feature this build does
 *               not have: setup then prints one warning naming the setting
 *               when it is turned on (set to anything but its default), the
 *               docs and --help mark it, and nothing else changes. The
 *               change that makes the feature work flips its rows to READY.
 *
 * Rows are append-only within a major version: their position is the stable
 * setting number reported by sp_setting_count()/sp_setting_name().
 */
#ifndef SCOPE_PROFILER_SETTINGS_H
#define SCOPE_PROFILER_SETTINGS_H

#include <stdint.h>

/* Marks an integer setting that has no value (Python's None). */
#define SP_INT_NONE INT64_MIN

#define SP_SETTINGS(X) \
  X(file_path, NONE, file_path, STR, "profiling_data.h5", 0, 0, "", \
    "Output HDF5 file. Relative paths are relative to the working directory.", READY) \
  X(label, NONE, label, STR, NULL, 0, 0, "", \
    "Short name for the run, stored as the `label` metadata attribute (default: the output file's stem).", READY) \
  X(use_likwid, NONE, use_likwid, BOOL, 0, 0, 1, "", \
    "Bracket every region with LIKWID marker regions and store LIKWID's counter results (rank<N>/likwid); takes effect under likwid-perfctr -m or likwid-mpirun -marker, and warns otherwise.", LIKWID_BUILD) \
  X(perf_events, NONE, perf_events, LIST, NULL, 0, 0, "", \
    "Events counted per region call: perf(1)'s names (cycles, instructions, task-clock, page-faults, ...), PMU names through libpfm4, PAPI_* or papi:<native> through PAPI; a list or a comma string; empty means off.", PERF_BUILD) \
  X(use_line_profiler, NONE, use_line_profiler, BOOL, 0, 0, 1, "", \
    "Line-level profiling of profiled functions (Python upstream: line_profiler).", PLANNED) \
  X(use_memray, MEMRAY, enabled, BOOL, 0, 0, 1, "", \
    "Record process-wide allocations through libscope_profiler_memory.so (preloaded or linked): per-call memory columns and a capture file (C counterpart of upstream's Memray capture).", READY) \
  X(memory_profile_path, MEMRAY, path, STR, NULL, 0, 0, "", \
    "Allocation capture path, used while use_memray is on; default: file_path with its suffix replaced by .memray.bin.", READY) \
  X(memray_native_traces, MEMRAY, native_traces, BOOL, 0, 0, 1, "", \
    "Capture native stack frames with each allocation (libunwind; symbolised when read).", READY) \
  X(memray_trace_python_allocators, MEMRAY, trace_python_allocators, BOOL, 0, 0, 1, "", \
    "Trace the language runtime's own allocators (the Python package hooks Python's; a C program has none and says so once).", READY) \
  X(memray_follow_fork, MEMRAY, follow_fork, BOOL, 0, 0, 1, "", \
    "Keep tracking allocations across fork(): a child captures into <memory_profile_path>.<pid>; off, it stops capturing.", READY) \
  X(deactivate_profiling, NONE, deactivate_profiling, BOOL, 0, 0, 1, "", \
    "Master off switch: every region becomes a no-op and no file is written.", READY) \
  X(use_nvtx, GPU, nvtx, BOOL, 0, 0, 1, "", \
    "Emit NVTX ranges for NVIDIA Nsight tools around every region.", PLANNED) \
  X(use_gpu_timing, GPU, timing, BOOL, 0, 0, 1, "", \
    "Record CUDA-event elapsed device time per region call.", PLANNED) \
  X(gpu_timing_backend, GPU, backend, ENUM, "auto", 0, 0, "auto|cuda|callbacks", \
    "CUDA-event backend: auto, cuda (runtime API) or callbacks (user-registered record/elapsed functions).", PLANNED) \
  X(gpu_sync_on_exit, GPU, sync_on_exit, BOOL, 0, 0, 1, "", \
    "Synchronize the device at region exit (requires use_gpu_timing; removes CPU/GPU overlap).", PLANNED) \
  X(deactivate_file_output, NONE, deactivate_file_output, BOOL, 0, 0, 1, "", \
    "Write no file at all; use with finalize returning results in memory.", READY) \
  X(recursive_profile, NONE, recursive_profile, BOOL, 0, 0, 1, "", \
    "Default for function-wrapping regions: also profile the functions they call.", PLANNED) \
  X(aggregation_mode, NONE, aggregation_mode, BOOL, 0, 0, 1, "", \
    "Keep only count, total, min, max and exclusive total per region; no timeline. Excludes line, GPU, NVTX and LIKWID profiling.", READY) \
  X(profile_mpi_calls, NONE, profile_mpi_calls, BOOL, 0, 0, 1, "", \
    "Record MPI calls as regions through the PMPI wrappers of libscope_profiler_mpi.", READY) \
  X(track_threads, NONE, track_threads, BOOL, 0, 0, 1, "", \
    "Record the thread each call ran on and write a per-rank thread table.", READY) \
  X(track_async, NONE, track_async, BOOL, 0, 0, 1, "", \
    "Record user-level tasks (coroutines, fibers) announced with sp_task_switch(); implies track_threads.", READY) \
  X(capture_region_source, NONE, capture_region_source, BOOL, 0, 0, 1, "", \
    "Store the source text of each region's block or function, read once per file at finalize.", READY) \
  X(metadata_detail, NONE, metadata_detail, ENUM, "minimal", 0, 0, "minimal|full", \
    "How much environment metadata is recorded: minimal (no user, host or environment) or full.", READY) \
  X(buffer_limit, NONE, buffer_limit, INT, 1024, 1, INT64_C(1) << 40, "", \
    "Initial per-thread event buffer capacity; buffers double beyond it as needed.", READY) \
  X(output_mode, NONE, output_mode, ENUM, "auto", 0, 0, "auto|direct|parallel", \
    "MPI writer: direct (ownership token, serial HDF5), parallel (collective parallel HDF5) or auto.", READY) \
  X(hdf5_compression, HDF5, compression, ENUM, NULL, 0, 0, "none|auto|gzip|lzf|zstd", \
    "Compression filter for event datasets: none (same as unset), gzip, lzf, zstd, or auto (only runs big enough to repay it).", READY) \
  X(hdf5_compression_level, HDF5, compression_level, INT, SP_INT_NONE, 0, 22, "", \
    "Compression level, only with hdf5_compression: gzip 0-9, zstd 1-22, auto 1-9; lzf takes none.", READY) \
  X(hdf5_chunk_size, HDF5, chunk_size, INT, SP_INT_NONE, 1, INT64_C(1) << 32, "", \
    "Maximum events per dataset chunk; enables chunked partial reads even uncompressed.", READY) \
  X(enable_tags, NONE, enable_tags, LIST, NULL, 0, 0, "", \
    "Opt-in region tags to record (comma list); \"*\" enables every opt-in tag.", READY) \
  X(signals, NONE, signals, LIST, "SIGTERM,SIGINT,SIGXCPU,SIGUSR1", 0, 0, "", \
    "Signals on which the run so far is written, its open calls ended there and marked cut short, before the signal takes effect (e.g. a batch system's time limit); a signal the program handles itself is left to it; empty disables.", READY) \
  X(crash_spill, NONE, crash_spill, BOOL, 1, 0, 1, "", \
    "On SIGSEGV, SIGBUS, SIGFPE, SIGABRT or SIGILL, write the raw buffers to <file_path>.spill for `scope-profiler recover`.", READY) \
  X(finalize_on_exit, NONE, finalize_on_exit, BOOL, 1, 0, 1, "", \
    "Write a run the program did not finalize when the process exits (not under MPI, where finalize is collective).", READY) \
  X(max_buffer_bytes, NONE, max_buffer_bytes, INT, INT64_C(1) << 30, INT64_C(1) << 20, INT64_MAX, "", \
    "Memory budget for recorded events: once growing a full buffer would take the live buffers past a quarter of it, the buffer is streamed to a staging file by a writer thread instead (merged at finalize); the rest holds buffers on their way to the writer.", READY) \
  X(hdf5_schema, HDF5, schema, INT, 3, 2, 3, "", \
    "File schema: 3 stores each call as row-relative deltas in narrow integers (about a quarter of the bytes; 4-byte ones, half, for a run that streamed past max_buffer_bytes); 2 stores four int64 per call, for readers of schema 2.", READY) \
  X(quiet, NONE, quiet, BOOL, 0, 0, 1, "", \
    "Print nothing on stderr: no warning about a setting this build cannot honour, and no line saying why a setup failed (the status and sp_last_error() still do).", READY) \
  X(likwid_library, NONE, likwid_library, STR, NULL, 0, 0, "", \
    "LIKWID's library for use_likwid, loaded at setup (default: liblikwid.so.5 from the loader's search path, e.g. the LD_LIBRARY_PATH of a LIKWID module).", LIKWID_BUILD)

#endif
