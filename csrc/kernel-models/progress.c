/* Progress of the emulated HPL for the process that started the simulation.
 *
 * predict shows a progress bar: rank 0 writes one line "JA SIMULATED_TIME" each time HPL
 * initialises a panel (JA: the panel's first global column) to the file descriptor named
 * by HPLSIM_PROGRESS_FD (a pipe whose other end the parent reads). It only reads the
 * simulated clock and never injects time, so predictions are the same with and without.
 * The descriptor is non-blocking: a parent that reads too slowly loses a line of display,
 * the simulation never waits for it. */
#include <errno.h>
#include <fcntl.h>
#include <simgrid/engine.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fatal.h"
#include "progress.h"

static int progress_fd = -1; /* per rank (privatized globals): only rank 0's is set */

void hplsim_progress_init(int rank)
{
  const char *env = getenv("HPLSIM_PROGRESS_FD");
  if (rank != 0 || !env || !*env)
    return;
  char *end;
  long fd = strtol(env, &end, 10);
  if (*end || fd < 0 || fcntl((int)fd, F_GETFD) < 0)
    hplsim_fatal("HPLSIM_PROGRESS_FD=%s is not an open file descriptor", env);
  fcntl((int)fd, F_SETFL, fcntl((int)fd, F_GETFL) | O_NONBLOCK);
  progress_fd = (int)fd;
}

void hplsim_progress(int ja)
{
  if (progress_fd < 0)
    return;
  char line[64];
  int len = snprintf(line, sizeof line, "%d %.9g\n", ja, simgrid_get_clock());
  /* A full pipe (EAGAIN) drops the line. The parent keeps its end open until the
   * simulation has exited, so there is no SIGPIPE. */
  while (write(progress_fd, line, (size_t)len) < 0 && errno == EINTR)
    ;
}
