/* MPI_Iprobe for HPL's panel broadcasts (probe.c). */
#ifndef HPLSIM_PROBE_H
#define HPLSIM_PROBE_H

#include <mpi.h>
#include <stdio.h>

/* HPL's loops that only poll for a panel say so right before their probe. */
void hplsim_busy_wait(int tag, MPI_Comm comm);

/* HPL's MPI_Iprobe (the patched hpl_pmisc.h maps it here). */
int hplsim_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);

/* The rank's line of what its probes did. */
void hplsim_probe_report(FILE *out, int rank);

#endif
