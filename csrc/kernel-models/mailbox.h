/* What may wait in a rank's mailbox: a count, shared by all ranks, of HPL's messages
 * posted to it and not yet received, so that a probe that cannot find anything need not
 * ask SimGrid (mailbox.c). */
#ifndef HPLSIM_MAILBOX_H
#define HPLSIM_MAILBOX_H

#include <mpi.h>

/* 1 when the counts are kept (HPLSIM_PROBE_COUNTS unset or "on"; "off": every probe asks
 * SimGrid, the reference). Decided once, by the launcher's environment. */
int hplsim_mailbox_on(void);

/* HPL's sends, receives and waits (the patched hpl_pmisc.h maps MPI_Send, MPI_Ssend,
 * MPI_Issend, MPI_Recv, MPI_Irecv and MPI_Wait here): each flushes the rank's pending
 * compute as before, keeps the counts, and makes the MPI call. */
int hplsim_send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int hplsim_ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int hplsim_issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                  MPI_Request *req);
int hplsim_recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Status *status);
int hplsim_irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm, MPI_Request *req);
int hplsim_wait(MPI_Request *req, MPI_Status *status);

/* 0 only if no message from `source` with `tag` in `comm` can be in this rank's mailbox
 * now: then SimGrid's probe would find none. 1: it may (ask SimGrid). */
int hplsim_mailbox_may_hold(int source, int tag, MPI_Comm comm);

#endif
