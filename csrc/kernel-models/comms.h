/* Ranks of HPL's communicators as MPI_COMM_WORLD ranks, and which share the rank's host. */
#ifndef HPLSIM_COMMS_H
#define HPLSIM_COMMS_H

#include <mpi.h>

/* The world rank of `rank` in `comm` (-1 for a negative rank or past the table's limit). */
int hplsim_world_rank(MPI_Comm comm, int rank);

/* 1 if world rank `world` runs on this rank's host, from the hostfile the simulation was
 * started with (HPLSIM_HOSTFILE: line i is rank i's host, as smpirun reads it). */
int hplsim_same_host(int world);

#endif
