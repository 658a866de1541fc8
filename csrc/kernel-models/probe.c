/* MPI_Iprobe for HPL's panel broadcasts.
 *
 * HPL polls for a panel with MPI_Iprobe between pieces of work (chunks of its update,
 * steps of its row swaps) and, when it has nothing left to do, in a busy loop that only
 * probes until the message is there and then receives it with a blocking MPI_Recv. On a
 * real machine the busy loop notices the message within one probe (~0.2 µs). In SMPI a
 * failed probe only advances the simulated clock by smpi/iprobe: exact, but a long wait
 * costs millions of simulation events. (SimGrid's shortcut, smpi/grow-injected-times,
 * multiplies the delay by a counter that every rank's failed probe increments — a
 * function-level static in 3.32 — so with many ranks the loops oversleep; we turn it off.)
 *
 * A busy-wait is recognised as a run of failed probes of the same message (source, tag,
 * communicator) with nothing in between that advanced the rank's simulated clock. HPL's
 * non-busy probe sites can follow each other without intervening time (a swap step whose
 * kernel has nothing to do), but only a few in a row; a busy loop repeats forever. After
 * BUSY_PROBES such probes the message is reported as present, and HPL's MPI_Recv then
 * blocks until it really arrives: when the real busy loop would have seen it, give or take
 * the BUSY_PROBES probe delays already spent. HPLSIM_BUSY_WAIT=poll keeps every probe real.
 *
 * The busiest loop says so itself: HPL_pdupdate* updates in chunks while polling for the
 * next panel, and once its columns are done its loop only polls (the patch calls
 * hplsim_busy_wait there). A probe that fails right after that hint, with nothing in
 * between, is the real loop's first failed probe: the message is reported present at once.
 *
 * What a probe can see depends on the MPI library (the platform's `mpi: iprobe_reports`,
 * passed as HPLSIM_IPROBE_REPORTS). SMPI's own MPI_Iprobe finds any message already sent
 * ("arrived"). Open MPI's (ob1) looks in the queue of messages its progress engine has
 * already taken in and, when the message is not there, runs the progress engine and
 * returns false: a message that arrived while the rank computed is reported by the
 * second probe, not the first (docs/validation.md, E17). In HPL's chunked update that is
 * one more chunk of work before the panel is received, while its sender blocks in
 * MPI_Send. "progressed" reproduces it: the probe reports what had arrived by the end of
 * the rank's previous MPI call, which is the simulated clock before the compute done since
 * then is injected (runtime.c injects compute lazily, at the next MPI call). So the SMPI
 * probe runs first and the pending compute after it: the same total time, in the other
 * order.
 */
#include <mpi.h>
#include <simgrid/engine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hplsim_runtime.h"

/* Idle probes before a busy-wait is recognised (HPLSIM_BUSY_PROBES overrides, for
 * experiments). */
#define BUSY_PROBES 16
static int busy_probes = BUSY_PROBES;

typedef struct {
  int source, tag;
  MPI_Comm comm;
  double clock; /* simulated time when the last failed probe returned */
  int idle_failures; /* consecutive failed probes of this message with the clock unmoved */
} probe_state;

static probe_state last;
/* 1: busy-waits become receives, hinted or counted; 2: counted only (HPLSIM_BUSY_WAIT=count,
 * for experiments); 0: every probe is real (HPLSIM_BUSY_WAIT=poll) */
static int mode = -1;

/* What the probes did, for the run's report: real MPI_Iprobe calls, how many failed, and
 * busy-waits ended by a hint or by counting. */
static long probes_real, probes_failed, waits_hinted, waits_counted;

/* The last hplsim_busy_wait: the message the loop polls for, and when. */
static struct {
  int set, tag;
  MPI_Comm comm;
  double clock;
} hint;

/* 1: a probe reports only messages that had arrived by the rank's previous MPI call
 * (HPLSIM_IPROBE_REPORTS=progressed); 0: any message already sent (arrived, SMPI's). */
static int progressed = -1;

void hplsim_busy_wait(int tag, MPI_Comm comm)
{
  hplsim_flush();
  hint.set = 1;
  hint.tag = tag;
  hint.comm = comm;
  hint.clock = simgrid_get_clock();
}

static int report_present(int source, int tag, int *flag, MPI_Status *status)
{
  last.idle_failures = 0;
  *flag = 1;
  if (status != MPI_STATUS_IGNORE) {
    status->MPI_SOURCE = source;
    status->MPI_TAG = tag;
    status->MPI_ERROR = MPI_SUCCESS;
  }
  return MPI_SUCCESS;
}

int hplsim_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
  if (mode < 0) {
    const char *env = getenv("HPLSIM_BUSY_WAIT");
    mode = !env ? 1 : strcmp(env, "poll") == 0 ? 0 : strcmp(env, "count") == 0 ? 2 : 1;
    const char *probes = getenv("HPLSIM_BUSY_PROBES");
    if (probes && atoi(probes) > 0)
      busy_probes = atoi(probes);
    const char *reports = getenv("HPLSIM_IPROBE_REPORTS");
    if (reports && strcmp(reports, "progressed") != 0 && strcmp(reports, "arrived") != 0)
      hplsim_fatal("HPLSIM_IPROBE_REPORTS must be 'arrived' or 'progressed', got '%s'", reports);
    progressed = reports && strcmp(reports, "progressed") == 0;
  }
  /* The clock has not moved since the last failed probe or hint only if no compute is
   * pending either (it is injected below, or was before the hint). */
  double clock = simgrid_get_clock();
  int idle = !hplsim_has_pending();
  int hinted = hint.set && hint.tag == tag && hint.comm == comm && idle && clock == hint.clock;
  hint.set = 0;
  int same = last.idle_failures > 0 && last.source == source && last.tag == tag && last.comm == comm &&
             idle && clock == last.clock;
  if (mode && same && last.idle_failures >= busy_probes) {
    waits_counted++;
    return report_present(source, tag, flag, status);
  }
  int err;
  if (progressed) {
    err = MPI_Iprobe(source, tag, comm, flag, status);
    hplsim_flush();
  } else {
    hplsim_flush(); /* the rank's pending compute happens before it probes */
    err = MPI_Iprobe(source, tag, comm, flag, status);
  }
  probes_real++;
  if (err != MPI_SUCCESS || *flag) {
    last.idle_failures = 0;
    return err;
  }
  probes_failed++;
  if (mode == 1 && hinted) {
    waits_hinted++;
    return report_present(source, tag, flag, status);
  }
  last.idle_failures = same ? last.idle_failures + 1 : 1;
  last.source = source;
  last.tag = tag;
  last.comm = comm;
  last.clock = simgrid_get_clock();
  return err;
}

void hplsim_probe_report(FILE *out, int rank)
{
  fprintf(out, "HPLSIM_PROBES %d %ld %ld %ld %ld\n", rank, probes_real, probes_failed, waits_hinted, waits_counted);
}
