/* scope_profiler.hpp - the C++ front end of scope-profiler.
 *
 * RAII over the C API of scope_profiler.h, at the same cost per call:
 *
 *   SP_PROFILE_SCOPE("solve");   a region from here to the end of the enclosing
 *                                block, ended on every way out of it (return,
 *                                break, an exception). Its handle is cached in
 *                                a static per call site: after the first call
 *                                a begin/end pair is exactly what the C macro
 *                                SP_REGION costs (bench/overhead_cxx.cpp).
 *   SP_PROFILE_FUNCTION();       the same for the whole function, named after it.
 *   sp::Scope                    the object behind both: from an sp::Region, or
 *                                from a name built at run time (std::string_view
 *                                in C++17, std::string, pointer + length), which is
 *                                interned on every construction.
 *   sp::Region                   a handle: intern a name once, use it in hot loops.
 *   sp::Session                  setup in the constructor, finalize in the
 *                                destructor (SP_SESSION's counterpart); records
 *                                the root region "scope_profiler.session".
 *   sp::Manager                  an independent manager (own settings, regions
 *                                and output file); sp::setup()/sp::finalize()...
 *                                act on the process-wide default manager.
 *   sp::Settings                 settings by key for setup, the keys and value
 *                                syntax of the settings table (docs/configuration.md),
 *                                plus a TOML file: Settings().set("file_path", "run.h5").
 *
 * Scopes on one manager must close in the reverse order of opening on each
 * thread, which blocks and unwinding guarantee; threads record independently.
 *
 * Compiling with -DSP_DISABLE or -DSP_DISABLE_PROFILING makes it all vanish:
 * the macros expand to nothing (their argument is still type-checked), the
 * classes keep their interface with empty inline bodies, and the program does
 * not need the library to link.
 *
 * C++11 or newer; warning-free with -Wall -Wextra -Wpedantic (g++, clang++).
 */
#ifndef SCOPE_PROFILER_HPP
#define SCOPE_PROFILER_HPP

#if defined(SP_DISABLE_PROFILING) && !defined(SP_DISABLE)
#  define SP_DISABLE 1
#endif

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>
#if __cplusplus >= 201703L || (defined(_MSVC_LANG) && _MSVC_LANG >= 201703L)
#  include <string_view>
#  define SP_I_HAVE_STRING_VIEW 1
#endif

#include "scope_profiler.h"
#include "scope_profiler/results.h"

/* A scope's constructor and destructor are the hot path: inlined as the C
 * macros' begin and end are (left to itself, g++ -O2 calls them out of line,
 * 40 more instructions per pair). */
#if defined(__GNUC__)
#  define SP_I_CXX_HOT __attribute__((always_inline))
#else
#  define SP_I_CXX_HOT
#endif

namespace sp {

using Status = sp_status;

/** What a failed sp::Manager construction throws (the only throw in this header). */
class Error : public std::runtime_error {
 public:
  Error(sp_status status, const std::string &what) : std::runtime_error(what), status_(status) {}
  sp_status status() const noexcept { return status_; }

 private:
  sp_status status_;
};

/** Settings for setup, by key ("file_path", "hdf5.compression", ...) with the
 * value as text the way the environment and sp_options_set() take it; typed
 * overloads write booleans and integers in that syntax. They are the setup's
 * explicit overrides (the highest precedence: above the TOML file and the
 * SCOPE_PROFILER_* environment), and setup rejects an unknown key or a bad
 * value with a message that names it. */
class Settings {
 public:
  Settings() = default;

  Settings &set(const std::string &key, const std::string &value) {
    kv_.push_back(key + "=" + value);
    return *this;
  }
  Settings &set(const std::string &key, const char *value) { return set(key, std::string(value)); }
#if defined(SP_I_HAVE_STRING_VIEW)
  Settings &set(std::string_view key, std::string_view value) {
    return set(std::string(key), std::string(value));
  }
#endif
  Settings &set(const std::string &key, bool value) { return set(key, value ? "true" : "false"); }
  Settings &set(const std::string &key, int value) { return set(key, std::to_string(value)); }
  Settings &set(const std::string &key, long value) { return set(key, std::to_string(value)); }
  Settings &set(const std::string &key, long long value) { return set(key, std::to_string(value)); }
  Settings &set(const std::string &key, unsigned value) { return set(key, std::to_string(value)); }
  Settings &set(const std::string &key, unsigned long value) { return set(key, std::to_string(value)); }
  Settings &set(const std::string &key, unsigned long long value) {
    return set(key, std::to_string(value));
  }
  /** A TOML file with a [profiling] table (below the environment in precedence). */
  Settings &config_file(const std::string &path) {
    config_ = path;
    return *this;
  }
  /** Replace a run of the manager that is still active instead of failing. */
  Settings &replace(bool on = true) {
    replace_ = on;
    return *this;
  }
  /** Finalize at exit() if the program forgets to. */
  Settings &auto_finalize(bool on = true) {
    auto_finalize_ = on;
    return *this;
  }

  /** The C setup arguments; they point into this object and stay valid while
   * it lives unchanged. */
  sp_setup_args args() const {
    ptrs_.clear();
    for (const std::string &s : kv_) ptrs_.push_back(s.c_str());
    ptrs_.push_back(nullptr);
    sp_setup_args a = sp_setup_args();
    a.config_path = config_.empty() ? nullptr : config_.c_str();
    a.overrides = ptrs_.data();
    a.replace = replace_ ? 1 : 0;
    a.auto_finalize = auto_finalize_ ? 1 : 0;
    return a;
  }

 private:
  std::vector<std::string> kv_;
  std::string config_;
  bool replace_ = false, auto_finalize_ = false;
  mutable std::vector<const char *> ptrs_;
};

/** Arguments of finalize: Finalize().verbose() prints the per-region summary. */
class Finalize {
 public:
  Finalize() : a_(sp_finalize_args()) {}
  Finalize &verbose(bool on = true) {
    a_.verbose = on ? 1 : 0;
    return *this;
  }
  /** Where the summary goes (default stdout). */
  Finalize &summary_to(std::FILE *stream) {
    a_.summary_stream = stream;
    return *this;
  }
  const sp_finalize_args *args() const noexcept { return &a_; }

 private:
  sp_finalize_args a_;
};

/** Results handed back by finalize, freed on destruction; read them with the
 * C reader API (scope_profiler/reader.h) through get(). */
class Results {
 public:
  Results() noexcept : r_(nullptr) {}
  ~Results() { reset(); }
  Results(Results &&o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  Results &operator=(Results &&o) noexcept {
    if (this != &o) {
      reset();
      r_ = o.r_;
      o.r_ = nullptr;
    }
    return *this;
  }
  Results(const Results &) = delete;
  Results &operator=(const Results &) = delete;
  sp_results *get() const noexcept { return r_; }
  explicit operator bool() const noexcept { return r_ != nullptr; }
  /** Where finalize stores them (frees what was held). */
  sp_results **out() noexcept {
    reset();
    return &r_;
  }
  void reset() noexcept {
#if !defined(SP_DISABLE)
    sp_results_free(r_);
#endif
    r_ = nullptr;
  }

 private:
  sp_results *r_;
};

/** A region handle. Construction interns the name (any UTF-8, 1..1024 bytes;
 * a lookup of a known name takes no lock); an invalid name gives the invalid
 * handle 0, which begins and ends nothing (sp_last_error() says why). */
class Region {
 public:
  Region() noexcept : id_(0) {}
#if !defined(SP_DISABLE)
  explicit Region(const char *name) : id_(sp_region_intern(name)) {}
  Region(const char *name, std::size_t len) : id_(sp_region_intern_n(name, len)) {}
  explicit Region(const std::string &name) : id_(sp_region_intern_n(name.data(), name.size())) {}
#  if defined(SP_I_HAVE_STRING_VIEW)
  explicit Region(std::string_view name) : id_(sp_region_intern_n(name.data(), name.size())) {}
#  endif
  /** With a source location and comma-separated tags (the first definition
   * of a name wins). */
  Region(const char *name, const char *file, int line, const char *func, const char *tags)
      : id_(sp_region_intern_ex(name, file, line, func, tags)) {}
  const char *name() const noexcept { return sp_region_name(id_); }
#else
  explicit Region(const char *name) : id_(0) { (void)name; }
  Region(const char *name, std::size_t len) : id_(0) { (void)name, (void)len; }
  explicit Region(const std::string &name) : id_(0) { (void)name; }
#  if defined(SP_I_HAVE_STRING_VIEW)
  explicit Region(std::string_view name) : id_(0) { (void)name; }
#  endif
  Region(const char *name, const char *file, int line, const char *func, const char *tags) : id_(0) {
    (void)name, (void)file, (void)line, (void)func, (void)tags;
  }
  const char *name() const noexcept { return nullptr; }
#endif
  /** The handle of the C API (sp_region). */
  static Region from_id(sp_region id) noexcept {
    Region r;
    r.id_ = id;
    return r;
  }
  sp_region id() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ != 0; }

 private:
  sp_region id_;
};

class Manager;

/** One call of a region, from construction to destruction (or end()). It
 * never throws: a begin the manager refuses (not set up, deactivated, an
 * invalid handle) leaves the scope closed and its end does nothing. */
class Scope {
 public:
#if !defined(SP_DISABLE)
  SP_I_CXX_HOT explicit Scope(sp_region r) noexcept : s_(sp_scope_begin(SP_DEFAULT, r)) {}
  SP_I_CXX_HOT Scope(sp_manager *m, sp_region r) noexcept : s_(sp_scope_begin(m, r)) {}
  SP_I_CXX_HOT explicit Scope(const Region &r) noexcept : s_(sp_scope_begin(SP_DEFAULT, r.id())) {}
  SP_I_CXX_HOT Scope(sp_manager *m, const Region &r) noexcept : s_(sp_scope_begin(m, r.id())) {}
  SP_I_CXX_HOT inline Scope(Manager &m, const Region &r) noexcept;
  /** A call site's scope (the macros): see sp_i_site_begin. */
  SP_I_CXX_HOT Scope(sp_manager *m, ::sp_site *site) noexcept : s_(sp_i_site_begin(m, site)) {}
  /** A name built at run time: interned here, on every construction. */
  explicit Scope(const char *name) : s_(sp_scope_begin(SP_DEFAULT, sp_region_intern(name))) {}
  explicit Scope(const std::string &name)
      : s_(sp_scope_begin(SP_DEFAULT, sp_region_intern_n(name.data(), name.size()))) {}
#  if defined(SP_I_HAVE_STRING_VIEW)
  explicit Scope(std::string_view name)
      : s_(sp_scope_begin(SP_DEFAULT, sp_region_intern_n(name.data(), name.size()))) {}
  Scope(sp_manager *m, std::string_view name)
      : s_(sp_scope_begin(m, sp_region_intern_n(name.data(), name.size()))) {}
#  endif
  SP_I_CXX_HOT ~Scope() { (void)sp_scope_end(&s_); }
  /** End the call now; the destructor then does nothing. 0 or a negative
   * sp_status (SP_ERR_UNMATCHED_END when scopes were crossed). */
  SP_I_CXX_HOT int end() noexcept { return sp_scope_end(&s_); }
  bool is_open() const noexcept { return s_.open != 0; }
#else
  explicit Scope(sp_region r) noexcept { (void)r; }
  Scope(sp_manager *m, sp_region r) noexcept { (void)m, (void)r; }
  explicit Scope(const Region &r) noexcept { (void)r; }
  Scope(sp_manager *m, const Region &r) noexcept { (void)m, (void)r; }
  Scope(Manager &m, const Region &r) noexcept { (void)m, (void)r; }
  explicit Scope(const char *name) { (void)name; }
  explicit Scope(const std::string &name) { (void)name; }
#  if defined(SP_I_HAVE_STRING_VIEW)
  explicit Scope(std::string_view name) { (void)name; }
  Scope(sp_manager *m, std::string_view name) { (void)m, (void)name; }
#  endif
  ~Scope() {}
  int end() noexcept { return 0; }
  bool is_open() const noexcept { return false; }
#endif
  Scope(const Scope &) = delete;
  Scope &operator=(const Scope &) = delete;

 private:
#if !defined(SP_DISABLE)
  sp_scope s_;
#endif
};

/** An independent manager: its own settings, regions' calls and output file.
 * Up to SP_I_MAX_MANAGERS (16) live at once, the default one included;
 * construction throws sp::Error when none is left or memory ran out. Destroy
 * it only when no thread records on it any more. */
class Manager {
 public:
#if !defined(SP_DISABLE)
  Manager() : m_(sp_manager_create()) {
    if (!m_) throw Error(SP_ERR_LIMIT, std::string("scope-profiler: ") + sp_last_error());
  }
  ~Manager() { sp_manager_destroy(m_); }
  sp_status setup(const Settings &s = Settings()) {
    sp_setup_args a = s.args();
    return sp_manager_setup(m_, &a);
  }
  sp_status finalize(const Finalize &f = Finalize()) { return sp_manager_finalize(m_, f.args(), nullptr); }
  /** Finalize and hand the results back in memory. */
  sp_status finalize(Results &out, const Finalize &f = Finalize()) {
    sp_finalize_args a = *f.args();
    a.return_results = 1;
    return sp_manager_finalize(m_, &a, out.out());
  }
  void pause() noexcept { sp_manager_pause(m_); }
  void resume() noexcept { sp_manager_resume(m_); }
  bool is_active() const noexcept { return sp_manager_is_active(m_) != 0; }
  bool is_configured() const noexcept { return sp_manager_is_configured(m_) != 0; }
  const char *output_path() const noexcept { return sp_manager_output_path(m_); }
  sp_problem_counts problems() const noexcept { return sp_manager_problems(m_); }
  std::uint64_t num_calls(const Region &r) const noexcept { return sp_manager_num_calls(m_, r.id()); }
#else
  Manager() : m_(nullptr) {}
  ~Manager() {}
  sp_status setup(const Settings &s = Settings()) { return (void)s, SP_OK; }
  sp_status finalize(const Finalize &f = Finalize()) { return (void)f, SP_OK; }
  sp_status finalize(Results &out, const Finalize &f = Finalize()) { return (void)out, (void)f, SP_OK; }
  void pause() noexcept {}
  void resume() noexcept {}
  bool is_active() const noexcept { return false; }
  bool is_configured() const noexcept { return false; }
  const char *output_path() const noexcept { return nullptr; }
  sp_problem_counts problems() const noexcept { return sp_problem_counts(); }
  std::uint64_t num_calls(const Region &r) const noexcept { return (void)r, 0; }
#endif
  /** The C handle, for the C API and the macros' _M forms. */
  sp_manager *get() const noexcept { return m_; }
  Manager(const Manager &) = delete;
  Manager &operator=(const Manager &) = delete;

 private:
  sp_manager *m_;
};

#if !defined(SP_DISABLE)
inline Scope::Scope(Manager &m, const Region &r) noexcept : s_(sp_scope_begin(m.get(), r.id())) {}
#endif

/** Setup in the constructor, finalize in the destructor, on every way out of
 * the block: the C++ SP_SESSION. The body runs even when setup fails
 * (profiling never stops the program): status() says how it went. */
class Session {
 public:
#if !defined(SP_DISABLE)
  explicit Session(const Settings &s = Settings(), const Finalize &f = Finalize())
      : fin_(*f.args()) {
    begin(SP_DEFAULT, s);
  }
  Session(Manager &m, const Settings &s = Settings(), const Finalize &f = Finalize())
      : fin_(*f.args()) {
    begin(m.get(), s);
  }
  Session(sp_manager *m, const Settings &s = Settings(), const Finalize &f = Finalize())
      : fin_(*f.args()) {
    begin(m, s);
  }
  ~Session() { (void)sp_session_end(&s_); }
  /** Of setup, then (after end()) of finalize. */
  sp_status status() const noexcept { return s_.status; }
  /** Finalize now (idempotent); the destructor then does nothing. */
  sp_status end() noexcept { return sp_session_end(&s_); }
#else
  explicit Session(const Settings &s = Settings(), const Finalize &f = Finalize()) { (void)s, (void)f; }
  Session(Manager &m, const Settings &s = Settings(), const Finalize &f = Finalize()) {
    (void)m, (void)s, (void)f;
  }
  Session(sp_manager *m, const Settings &s = Settings(), const Finalize &f = Finalize()) {
    (void)m, (void)s, (void)f;
  }
  ~Session() {}
  sp_status status() const noexcept { return SP_OK; }
  sp_status end() noexcept { return SP_OK; }
#endif
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

 private:
#if !defined(SP_DISABLE)
  void begin(sp_manager *m, const Settings &s) {
    sp_setup_args a = s.args();
    s_ = sp_session_begin(m, &a, &fin_, nullptr);
  }
  sp_finalize_args fin_; /* sp_session keeps a pointer to it */
  sp_session s_;
#endif
};

/*====== The default manager ======*/

#if !defined(SP_DISABLE)
inline sp_status setup(const Settings &s = Settings()) {
  sp_setup_args a = s.args();
  return sp_setup(&a);
}
inline sp_status finalize(const Finalize &f = Finalize()) { return sp_finalize(f.args(), nullptr); }
inline sp_status finalize(Results &out, const Finalize &f = Finalize()) {
  sp_finalize_args a = *f.args();
  a.return_results = 1;
  return sp_finalize(&a, out.out());
}
inline void pause() noexcept { sp_pause(); }
inline void resume() noexcept { sp_resume(); }
inline bool is_active() noexcept { return sp_is_active() != 0; }
/** The calling thread's message for its last failing call. */
inline const char *last_error() noexcept { return sp_last_error(); }
#else
inline sp_status setup(const Settings &s = Settings()) { return (void)s, SP_OK; }
inline sp_status finalize(const Finalize &f = Finalize()) { return (void)f, SP_OK; }
inline sp_status finalize(Results &out, const Finalize &f = Finalize()) { return (void)out, (void)f, SP_OK; }
inline void pause() noexcept {}
inline void resume() noexcept {}
inline bool is_active() noexcept { return false; }
inline const char *last_error() noexcept { return ""; }
#endif

} // namespace sp

/*====== Macros ======*/

#if !defined(SP_DISABLE)
/* A static site per use (constant-initialised: no guard, no constructor) and
 * a scope on its cached handle; __COUNTER__ keeps two uses on one line apart. */
#  define SP_I_PROFILE_IMPL(mgr, name, tags, kind, n)                                            \
     static ::sp_site SP_I_CAT(sp_i_site_, n) = {(name), __FILE__, __func__, __LINE__, (kind),   \
                                                  (tags), 0, 0};                                  \
     ::sp::Scope SP_I_CAT(sp_i_scope_, n)((mgr), &SP_I_CAT(sp_i_site_, n))
/** A region from here to the end of the enclosing block, on `mgr` (an
 * sp_manager *, e.g. manager.get()). The name is read on the site's first
 * execution: for names that change, construct an sp::Scope from the name. */
#  define SP_PROFILE_SCOPE_M(mgr, name) SP_I_PROFILE_IMPL(mgr, name, nullptr, SP_SITE_BLOCK, __COUNTER__)
#  define SP_PROFILE_SCOPE_TAGS_M(mgr, name, tags) \
     SP_I_PROFILE_IMPL(mgr, name, tags, SP_SITE_BLOCK, __COUNTER__)
/** The rest of the function, under the function's name. */
#  define SP_PROFILE_FUNCTION_M(mgr) SP_I_PROFILE_IMPL(mgr, __func__, nullptr, SP_SITE_FUNCTION, __COUNTER__)
#else
#  define SP_PROFILE_SCOPE_M(mgr, name) static_cast<void>(sizeof(mgr) + sizeof(name))
#  define SP_PROFILE_SCOPE_TAGS_M(mgr, name, tags) static_cast<void>(sizeof(mgr) + sizeof(name) + sizeof(tags))
#  define SP_PROFILE_FUNCTION_M(mgr) static_cast<void>(sizeof(mgr))
#endif
#define SP_PROFILE_SCOPE(name) SP_PROFILE_SCOPE_M(SP_DEFAULT, name)
#define SP_PROFILE_SCOPE_TAGS(name, tags) SP_PROFILE_SCOPE_TAGS_M(SP_DEFAULT, name, tags)
#define SP_PROFILE_FUNCTION() SP_PROFILE_FUNCTION_M(SP_DEFAULT)

#endif
