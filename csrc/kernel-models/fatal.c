/* The runtime's one way to fail: a line on stderr, then the whole simulation ends. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "fatal.h"

void hplsim_fatal(const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  fputs("hplsim-runtime: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
  fflush(stdout);
  /* All simulated ranks share this process: end the whole simulation at once. */
  _exit(3);
}
