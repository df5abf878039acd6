/* lsan_exit.c - leak checks for forked test cases under AddressSanitizer.
 *
 * The unit-test harness (tests/harness.h) runs each case in a forked child
 * that ends with _exit(), which skips the exit-time leak check, so a leak in
 * a passing case would go unseen. scripts/sanitize.sh links the ASan build's
 * executables with -Wl,--wrap=_exit and this file: a child that is about to
 * exit 0 runs LeakSanitizer first and exits 1 if anything leaked. Exits with
 * another status (a failed assert) are left alone; that case failed anyway.
 */
#include <sanitizer/lsan_interface.h>

void __real__exit(int code) __attribute__((noreturn));
void __wrap__exit(int code) __attribute__((noreturn));

void __wrap__exit(int code) {
  if (code == 0 && __lsan_do_recoverable_leak_check()) code = 1;
  __real__exit(code);
}
