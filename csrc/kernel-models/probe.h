/* MPI_Iprobe for HPL's panel broadcasts (probe.c). */
#ifndef HPLSIM_PROBE_H
#define HPLSIM_PROBE_H

#include <mpi.h>
#include <stdio.h>

/* HPL's loops that only poll for a panel say so right before their probe. */
void hplsim_busy_wait(int tag, MPI_Comm comm);

/* HPL's MPI_Iprobe (the patched hpl_pmisc.h maps it here). */
int hplsim_iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);

/* Observer of HPL's probes, NULL unless a trace is recorded (trace.c installs it): each
 * probe from the start of its charge (smpi/iprobe), with what it found. */
extern void (*hplsim_on_probe)(double t0, int peer, int tag, int found);

/* The rank's line of what its probes did. */
void hplsim_probe_report(FILE *out, int rank);

#endif
