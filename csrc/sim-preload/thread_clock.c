/* Preloaded into the simulation process (LD_PRELOAD of smpirun): a free per-thread CPU clock.
 *
 * SMPI brackets every MPI call with smpi_bench_end / smpi_bench_begin, which stop and start
 * a per-thread CPU timer: two clock_gettime(CLOCK_THREAD_CPUTIME_ID) calls. That clock is
 * not in the vDSO, so each read is a system call (and a run-queue lock in the kernel): at
 * 16x16 ranks it was 18 % of the simulation's CPU time. The emulation runs with
 * smpi/simulate-computation:no, so SMPI never uses what the timer measures (only its
 * "benched time" statistic, which then reads 0); the simulated times are unchanged (a test
 * checks bit-identical predictions with and without this library).
 *
 * Every other clock goes to the C library. HPL's own CPU-time reads use clock() or
 * getrusage(), which glibc does not route through this symbol.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <time.h>

static int (*next_clock_gettime)(clockid_t, struct timespec *);

int clock_gettime(clockid_t id, struct timespec *tp)
{
  if (id == CLOCK_THREAD_CPUTIME_ID) {
    if (!tp) {
      errno = EFAULT;
      return -1;
    }
    tp->tv_sec = 0;
    tp->tv_nsec = 0;
    return 0;
  }
  if (!next_clock_gettime)
    next_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  return next_clock_gettime(id, tp);
}
