/* scope_profiler/export.h - symbol visibility for the public API.
 *
 * The library is built with hidden visibility; SP_API marks what is exported.
 * BUILDING_SP_SHARED is defined while compiling the shared library itself.
 */
#ifndef SCOPE_PROFILER_EXPORT_H
#define SCOPE_PROFILER_EXPORT_H

#if defined(_WIN32)
#  if defined(BUILDING_SP_SHARED)
#    define SP_API __declspec(dllexport)
#  elif defined(USING_SP_SHARED)
#    define SP_API __declspec(dllimport)
#  else
#    define SP_API
#  endif
#elif defined(__GNUC__)
#  define SP_API __attribute__((visibility("default")))
#else
#  define SP_API
#endif

#endif
