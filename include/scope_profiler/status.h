/* scope_profiler/status.h - status codes returned by every setup and I/O call.
 *
 * Zero is success; every error is a distinct negative value. A failing call
 * also leaves a message for the calling thread in sp_last_error() that says
 * what was wrong and how to fix it. Values are stable within a major version.
 */
#ifndef SCOPE_PROFILER_STATUS_H
#define SCOPE_PROFILER_STATUS_H

#include "scope_profiler/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SP_STATUS_MAP(X)                                                        \
  X(SP_OK, 0, "success")                                                        \
  X(SP_ERR_INACTIVE, -1, "the manager is not set up")                           \
  X(SP_ERR_NO_CLOCK, -2, "no usable monotonic clock")                           \
  X(SP_ERR_NO_MEMORY, -3, "out of memory")                                      \
  X(SP_ERR_IO, -4, "input/output error")                                        \
  X(SP_ERR_UNMATCHED_END, -5, "end does not match the innermost open region")   \
  X(SP_ERR_OPEN_SCOPES, -6, "regions were still open")                          \
  X(SP_ERR_UNSUPPORTED, -7, "not supported by this build")                      \
  X(SP_ERR_INVALID_ARGUMENT, -8, "invalid argument")                            \
  X(SP_ERR_ALREADY_ACTIVE, -9, "a run is already active")                       \
  X(SP_ERR_UNKNOWN_SETTING, -10, "unknown setting")                             \
  X(SP_ERR_INVALID_VALUE, -11, "invalid setting value")                         \
  X(SP_ERR_CONFLICT, -12, "conflicting settings")                               \
  X(SP_ERR_PARSE, -13, "syntax error")                                          \
  X(SP_ERR_FORMAT, -14, "not a valid scope-profiler file")                      \
  X(SP_ERR_NOT_FOUND, -15, "not found")                                         \
  X(SP_ERR_LIMIT, -16, "a limit was exceeded")                                  \
  X(SP_ERR_MPI, -17, "MPI error")

typedef enum sp_status {
#define SP_I_STATUS_ENUM(name, value, text) name = value,
  SP_STATUS_MAP(SP_I_STATUS_ENUM)
#undef SP_I_STATUS_ENUM
} sp_status;

/** Short description of a status; never NULL. */
SP_API const char *sp_strerror(int status);

/** Name of a status ("SP_ERR_IO"); never NULL. */
SP_API const char *sp_status_name(int status);

/** The calling thread's message for its last failing call ("" if none). The
 * text says what was wrong and how to fix it; valid until the thread's next
 * failing call. */
SP_API const char *sp_last_error(void);

/*====== Messages ======*/

/* The library prints only at setup and finalize, and only two kinds of line:
 * a warning (a setting this build or this machine cannot honour, which then
 * has no effect; at finalize, data a feature could not record, such as
 * calls without GPU time), and the reason a setup failed (profiling is then
 * off for the run). Both go to stderr as
 * one line each, "scope-profiler: warning: ..." / "scope-profiler: error:
 * ...", unless the setting `quiet` is on. Bindings and programs that keep
 * their own log can take them instead. */
typedef enum sp_message_level { SP_MESSAGE_WARNING = 1, SP_MESSAGE_ERROR = 2 } sp_message_level;
typedef void (*sp_message_fn)(sp_message_level level, const char *text, void *user);

/** Send the library's messages to fn(level, text, user) instead of stderr;
 * `text` has no prefix and no newline and is valid during the call. NULL
 * restores the stderr default. Thread-safe; messages are never produced on
 * the begin/end path. */
SP_API void sp_set_message_handler(sp_message_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
