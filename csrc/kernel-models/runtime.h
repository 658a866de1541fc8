/* Per-rank set-up, the accounting of modelled kernel time and its injection into the
 * simulation (runtime.c). */
#ifndef HPLSIM_RUNTIME_MODULE_H
#define HPLSIM_RUNTIME_MODULE_H

#include <stdio.h>

#include "kernels.h"

/* Called by the driver on every rank right after MPI_Init: loads the model table,
 * finds this rank's host and CPU, seeds the rank's generators. */
void hplsim_runtime_init(const char *model_table, unsigned long long seed);

/* Account the modelled duration of one call of `kernel` with sizes x0, x1, x2. */
void hplsim_kernel(enum hplsim_kernel kernel, double x0, double x1, double x2);

/* Inject the time accounted since the rank's last MPI call (called before each MPI call). */
void hplsim_flush(void);

/* hplsim_flush, then `extra` seconds more of the rank's own time on a core of its own (a
 * probe's charge, probe.c): one sleep for both when the rank sleeps its compute. */
void hplsim_flush_then_sleep(double extra);

/* 1 if no more ranks run on this rank's host than it has cores (from the hostfile). */
int hplsim_owns_core(void);

/* As hplsim_flush, but the modelled time is returned instead of injected: the caller
 * accounts for it itself (the modelled exchange starts that much later, exchange.c). */
double hplsim_take_pending(void);

/* hplsim_flush before one of HPL's sends, counted (the patched hpl_pmisc.h calls it). */
void hplsim_flush_send(void);

/* How many point-to-point messages the rank sent through the simulated network. */
unsigned long hplsim_sends(void);

/* How many MPI calls the rank has made (each is preceded by hplsim_flush). */
unsigned long hplsim_mpi_calls(void);

/* Whether modelled time is waiting for the rank's next MPI call. */
int hplsim_has_pending(void);

/* Uniform integer in [0, n) from the rank's pivot stream (n > 0). */
int hplsim_random_index(int n);

/* From the pivot stream: a value distributed as the largest of n uniforms on (0, 1). */
double hplsim_pivot_magnitude(int n);

/* The rank's line of modelled compute time, calls and seconds per kernel. */
void hplsim_runtime_report(FILE *out, int rank);

/* Observers of the modelled time, NULL unless a trace is recorded (trace.c installs them,
 * so that the runtime does not depend on the tracer): each modelled call with its
 * duration, and the moment the pending sum is injected (before the injection). */
extern void (*hplsim_on_kernel)(enum hplsim_kernel kernel, double seconds, double x0, double x1, double x2);
extern void (*hplsim_on_flush)(void);

#endif
