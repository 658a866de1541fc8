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
 * A busy-wait is recognised only where HPL's own code says it is one: the patch calls
 * hplsim_busy_wait(tag, comm) in every loop of HPL that does nothing but probe for a panel
 * (the `do HPL_bcast while` loops of HPL_pdgesv0/K1/K2 and HPL_pdupdate*, and the update
 * loop of HPL_pdupdate* once its columns are done). A probe that fails right after that
 * hint, with nothing in between (no compute pending, no MPI call, the clock unmoved), is
 * the real loop's first failed probe: the message is reported present at once, and HPL's
 * MPI_Recv then blocks until it really arrives, when the real loop would have seen it.
 * Every other probe is simulated as it is. (Counting idle probes in a row, as before, also
 * caught runs of single probes at different call sites — a spread-roll swap's steps with
 * nothing to send — and blocking there deadlocked 8×8 runs: E26.)
 * HPLSIM_BUSY_WAIT=poll keeps every probe real (exact, slow).
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
 * order. "progressed-between-nodes" is Open MPI's cm over PSM2 (Omni-Path, E39): PSM2's
 * adapter path leaves a message from another node in the hardware queue at its first
 * sighting, its shared-memory path does not, so a probe is "progressed" when its source
 * runs on another host (from the hostfile, comms.c) and "arrived" when on this one.
 */
#include <mpi.h>
#include <simgrid/engine.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "fatal.h"
#include "probe.h"
#include "runtime.h"

/* 1: hinted busy-waits become receives; 0: every probe is real (HPLSIM_BUSY_WAIT=poll) */
static int mode = -1;

/* What the probes did, for the run's report: real MPI_Iprobe calls, how many failed, and
 * busy-waits ended by a hint. */
static long probes_real, probes_failed, waits_hinted;

/* The last hplsim_busy_wait: the message the loop polls for, and when. */
static struct {
  int set, tag;
  MPI_Comm comm;
  double clock;
  unsigned long calls;
} hint;

/* What a probe reports (HPLSIM_IPROBE_REPORTS, the platform's names): any message already
 * sent (arrived, SMPI's); only messages that had arrived by the rank's previous MPI call
 * (progressed); progressed for a source on another host and arrived for one on this host. */
enum { ARRIVED, PROGRESSED, PROGRESSED_BETWEEN_NODES };
static int reports_mode = -1;

void hplsim_busy_wait(int tag, MPI_Comm comm)
{
  hplsim_flush();
  hint.set = 1;
  hint.tag = tag;
  hint.comm = comm;
  hint.clock = simgrid_get_clock();
  hint.calls = hplsim_mpi_calls();
}

static int report_present(int source, int tag, int *flag, MPI_Status *status)
{
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
    if (env && strcmp(env, "poll") != 0 && strcmp(env, "hint") != 0)
      hplsim_fatal("HPLSIM_BUSY_WAIT must be 'hint' or 'poll', got '%s'", env);
    mode = !(env && strcmp(env, "poll") == 0);
    const char *reports = getenv("HPLSIM_IPROBE_REPORTS");
    if (!reports || strcmp(reports, "arrived") == 0)
      reports_mode = ARRIVED;
    else if (strcmp(reports, "progressed") == 0)
      reports_mode = PROGRESSED;
    else if (strcmp(reports, "progressed-between-nodes") == 0)
      reports_mode = PROGRESSED_BETWEEN_NODES;
    else
      hplsim_fatal("HPLSIM_IPROBE_REPORTS must be 'arrived', 'progressed' or 'progressed-between-nodes', "
                   "got '%s'", reports);
  }
  /* The loop only polled since the hint if no compute is pending (it is injected below, or
   * was before the hint), the clock has not moved and the rank made no MPI call. */
  int hinted = hint.set && hint.tag == tag && hint.comm == comm && !hplsim_has_pending() &&
               simgrid_get_clock() == hint.clock && hplsim_mpi_calls() == hint.calls;
  hint.set = 0;
  int err;
  int progressed = reports_mode == PROGRESSED ||
                   (reports_mode == PROGRESSED_BETWEEN_NODES && !hplsim_same_host(hplsim_world_rank(comm, source)));
  if (progressed) {
    err = MPI_Iprobe(source, tag, comm, flag, status);
    hplsim_flush();
  } else {
    hplsim_flush(); /* the rank's pending compute happens before it probes */
    err = MPI_Iprobe(source, tag, comm, flag, status);
  }
  probes_real++;
  if (err != MPI_SUCCESS || *flag)
    return err;
  probes_failed++;
  if (mode && hinted) {
    waits_hinted++;
    return report_present(source, tag, flag, status);
  }
  return err;
}

void hplsim_probe_report(FILE *out, int rank)
{
  fprintf(out, "HPLSIM_PROBES %d %ld %ld %ld\n", rank, probes_real, probes_failed, waits_hinted);
}
