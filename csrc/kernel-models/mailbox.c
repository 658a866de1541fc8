/* What may wait in a rank's mailbox, counted in memory all ranks share.
 *
 * HPL polls for a panel with MPI_Iprobe between pieces of its update (probe.c), and most
 * probes find nothing. SMPI's probe is several simulation events (its own request, a
 * look into each of the rank's two mailboxes, each a context switch to SimGrid's
 * maestro), and at N = 500,000 on 1,024 ranks there are about a hundred a rank a panel
 * (docs/validation.md E67, E70). A probe can be answered without SimGrid when nothing can
 * be there: every message HPL sends is counted here, per destination, source and tag,
 * when the sender calls MPI (before SMPI puts it in the destination's mailbox, which
 * happens then or after the sender's overhead), and uncounted when the destination's
 * receive of it has completed (after SMPI took it out of the mailbox). So the count is
 * never below what the mailbox holds: a count of 0 proves SimGrid's probe would find
 * nothing at that moment; any other count asks SimGrid. The ranks run one at a time in
 * SimGrid's single thread, in the order of simulated time, so the count a probe reads is
 * the one of its own moment. Counts share slots by a hash of (source, tag): a collision
 * only makes a count larger (ask SimGrid), never wrong.
 *
 * Only HPL's own messages are counted (the patch maps its point-to-point calls here); a
 * probe only ever looks for HPL's panels, which only HPL's code sends. SMPI's collectives
 * use their own tags and are never counted nor probed for. With SimGrid's parallel
 * contexts (contexts/nthreads > 1) ranks would run at once: the counts are then off.
 */
#include <mpi.h>
#include <simgrid/engine.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "fatal.h"
#include "mailbox.h"
#include "matrix.h"
#include "runtime.h"
#include "simgrid_config.h"

#define SLOT_BITS 6
#define SLOTS (1 << SLOT_BITS)

static int on = -1;
static int me = -1, world_size;
static int mailbox_fd = -1;
static int *counts; /* [world_size][SLOTS], shared by all ranks */

int hplsim_mailbox_on(void)
{
  if (on < 0) {
    const char *env = getenv("HPLSIM_PROBE_COUNTS");
    if (env && strcmp(env, "on") != 0 && strcmp(env, "off") != 0)
      hplsim_fatal("HPLSIM_PROBE_COUNTS must be 'on' or 'off', got '%s'", env);
    on = !(env && strcmp(env, "off") == 0);
    if (on && !hplsim_ranks_take_turns())
      on = 0; /* ranks running at once would race on the counts (above) */
    if (on) {
      MPI_Comm_rank(MPI_COMM_WORLD, &me);
      MPI_Comm_size(MPI_COMM_WORLD, &world_size);
      counts = hplsim_map_shared("hplsim-mailbox", "HPLSIM_MAILBOX_FD", &mailbox_fd,
                                 (size_t)world_size * SLOTS * sizeof *counts);
    }
  }
  return on;
}

static int *slot(int dest_world, int source_world, int tag)
{
  unsigned h = ((unsigned)source_world * 0x9E3779B1u) ^ ((unsigned)tag * 0x85EBCA77u);
  return counts + (size_t)dest_world * SLOTS + (h >> (32 - SLOT_BITS));
}

static void posted(int dest, int tag, MPI_Comm comm)
{
  if (!hplsim_mailbox_on())
    return;
  int world = hplsim_world_rank(comm, dest);
  if (world >= 0)
    (*slot(world, me, tag))++;
}

static void received(MPI_Comm comm, const MPI_Status *status)
{
  int world = hplsim_world_rank(comm, status->MPI_SOURCE);
  if (world < 0)
    return;
  int *c = slot(me, world, status->MPI_TAG);
  if (*c <= 0)
    hplsim_fatal("a message from rank %d (tag %d) was received that nobody was counted sending", world,
                 status->MPI_TAG);
  (*c)--;
}

int hplsim_mailbox_may_hold(int source, int tag, MPI_Comm comm)
{
  if (!hplsim_mailbox_on() || source == MPI_ANY_SOURCE || tag == MPI_ANY_TAG)
    return 1;
  int world = hplsim_world_rank(comm, source);
  return world < 0 || *slot(me, world, tag) > 0;
}

/* HPL's calls, in the order the patch had them: flush the pending compute, then MPI. The
 * count goes up after the flush, when the simulated clock is that of the send. */
int hplsim_send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  hplsim_flush_send();
  posted(dest, tag, comm);
  return MPI_Send(buf, count, type, dest, tag, comm);
}

int hplsim_ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
  hplsim_flush_send();
  posted(dest, tag, comm);
  return MPI_Ssend(buf, count, type, dest, tag, comm);
}

int hplsim_issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  MPI_Request *req)
{
  hplsim_flush_send();
  posted(dest, tag, comm);
  return MPI_Issend(buf, count, type, dest, tag, comm, req);
}

int hplsim_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
  hplsim_flush();
  if (!hplsim_mailbox_on())
    return MPI_Recv(buf, count, type, source, tag, comm, status);
  MPI_Status own;
  MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
  int err = MPI_Recv(buf, count, type, source, tag, comm, st);
  if (err == MPI_SUCCESS)
    received(comm, st);
  return err;
}

/* Receives posted and not yet waited for: HPL has one at a time. */
#define MAX_PENDING 16
static struct {
  MPI_Request req;
  MPI_Comm comm;
} pending_recvs[MAX_PENDING];
static int npending;

int hplsim_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
  hplsim_flush();
  int err = MPI_Irecv(buf, count, type, source, tag, comm, req);
  if (err == MPI_SUCCESS && hplsim_mailbox_on()) {
    if (npending == MAX_PENDING) /* the message would stay counted: probes ask SimGrid, never wrong */
      hplsim_fatal("more than %d receives posted at once", MAX_PENDING);
    pending_recvs[npending].req = *req;
    pending_recvs[npending].comm = comm;
    npending++;
  }
  return err;
}

int hplsim_wait(MPI_Request *req, MPI_Status *status)
{
  hplsim_flush();
  int i = npending - 1;
  while (i >= 0 && pending_recvs[i].req != *req)
    i--;
  if (i < 0)
    return MPI_Wait(req, status);
  MPI_Comm comm = pending_recvs[i].comm;
  memmove(pending_recvs + i, pending_recvs + i + 1, (size_t)(--npending - i) * sizeof pending_recvs[0]);
  MPI_Status own;
  MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
  int err = MPI_Wait(req, st);
  if (err == MPI_SUCCESS)
    received(comm, st);
  return err;
}
