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
 *
 * Most probes find nothing, and SMPI's probe is several simulation events. When the
 * shared message counts (mailbox.c) prove the mailbox holds nothing the probe could
 * match, the probe fails without asking SimGrid, at the moment SimGrid would have looked.
 * Its own cost (smpi/iprobe, which SMPI charges inside MPI_Iprobe before it looks) is
 * then charged here for every probe: the first rank reads it and sets SMPI's to 0 (the
 * configuration is the simulation's, one for all ranks), and each probe charges it where
 * SMPI did — a sleep, merged with the rank's pending compute, for a rank with a core of
 * its own; SMPI's bounded execution for one that shares its cores. A run follows the same
 * course; its time moves only by where SimGrid ends a sleep against an execution of the
 * same length (within its timing precision), which a look-ahead schedule may carry a
 * little further (docs/validation.md E70).
 * HPLSIM_PROBE_COUNTS=off asks SimGrid every time and leaves SMPI its charge (the
 * reference).
 */
#include <mpi.h>
#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xbt/config.h>

#include "comms.h"
#include "fatal.h"
#include "mailbox.h"
#include "matrix.h"
#include "probe.h"
#include "runtime.h"

/* 1: hinted busy-waits become receives; 0: every probe is real (HPLSIM_BUSY_WAIT=poll) */
static int mode = -1;

/* What the probes did, for the run's report: HPL's MPI_Iprobe calls, how many failed,
 * busy-waits ended by a hint, and failed probes answered from the counts. */
static long probes_real, probes_failed, waits_hinted, probes_counted;

void (*hplsim_on_probe)(double t0, int peer, int tag, int found);

/* SMPI's charge for a probe, taken over from it once for the whole simulation (in memory
 * all ranks share: SimGrid's configuration is one, the ranks' statics are not). */
static struct probe_cost {
  int taken;
  double seconds, cpu_usage;
} *cost;
static int cost_fd = -1;

static void take_cost(void)
{
  if (cost)
    return;
  cost = hplsim_map_shared("hplsim-probe-cost", "HPLSIM_PROBE_COST_FD", &cost_fd, sizeof *cost);
  if (!cost->taken) {
    cost->seconds = sg_cfg_get_double("smpi/iprobe");
    cost->cpu_usage = sg_cfg_get_double("smpi/iprobe-cpu-usage");
    sg_cfg_set_double("smpi/iprobe", 0.0);
    cost->taken = 1;
  }
}

/* What SMPI's MPI_Iprobe did before looking: an execution of smpi/iprobe seconds at most
 * smpi/iprobe-cpu-usage of the host's speed. On a core of its own the rank's execution
 * lasts exactly that, as a sleep does, which does not re-solve the host's CPU sharing
 * (E67): then it is one sleep with the compute pending before it (`with_pending`).
 * Returns when the charge began (after that compute), where the probe's record starts. */
static double charge(int with_pending)
{
  if (hplsim_owns_core()) {
    if (with_pending) {
      hplsim_flush_then_sleep(cost->seconds);
      return simgrid_get_clock() - cost->seconds;
    }
    double t0 = simgrid_get_clock();
    if (cost->seconds > 0.0)
      sg_actor_sleep_for(cost->seconds);
    return t0;
  }
  if (with_pending)
    hplsim_flush();
  double t0 = simgrid_get_clock();
  if (cost->seconds > 0.0) {
    double speed = sg_host_get_speed(sg_host_self());
    sg_exec_t exec = sg_actor_exec_init(cost->seconds * speed * cost->cpu_usage);
    sg_exec_set_bound(exec, cost->cpu_usage * speed);
    sg_exec_start(exec);
    sg_exec_wait(exec);
  }
  return t0;
}

/* The look itself: SimGrid's (its charge now 0), unless the counts prove it would fail. */
static int look(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
  if (hplsim_mailbox_may_hold(source, tag, comm))
    return MPI_Iprobe(source, tag, comm, flag, status);
  *flag = 0;
  probes_counted++;
  return MPI_SUCCESS;
}

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
  double t0;
  if (!hplsim_mailbox_on()) {
    if (!progressed)
      hplsim_flush(); /* the rank's pending compute happens before it probes */
    t0 = simgrid_get_clock();
    err = MPI_Iprobe(source, tag, comm, flag, status);
  } else {
    take_cost();
    t0 = charge(!progressed);
    err = look(source, tag, comm, flag, status);
  }
  if (hplsim_on_probe) /* what SimGrid or the counts said, before a hint turns it around */
    hplsim_on_probe(t0, hplsim_world_rank(comm, source), tag, err == MPI_SUCCESS && *flag);
  if (progressed)
    hplsim_flush(); /* the compute pending since the rank's last MPI call comes after */
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
  fprintf(out, "HPLSIM_PROBES %d %ld %ld %ld %ld\n", rank, probes_real, probes_failed, waits_hinted, probes_counted);
}
