/* A check for the C programs of tests/ext (included by their sources):
 * expect(ok, ...) prints "FAIL: ..." when ok is false and counts it in
 * `fails`, which the program reports at its end. */
#pragma once
#include <stdarg.h>
#include <stdio.h>

static int fails;

static void expect(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void expect(int ok, const char *fmt, ...) {
  va_list ap;

  if (ok) return;
  va_start(ap, fmt);
  printf("FAIL: ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fails++;
}
