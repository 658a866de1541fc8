/* The pivot search's exchange within a process column (HPL_pdmxswp), modelled or
 * message by message (exchange.c). */
#ifndef HPLSIM_EXCHANGE_H
#define HPLSIM_EXCHANGE_H

#include <stdint.h>
#include <stdio.h>

/* Called by the patched HPL_pdmxswp once the rank's candidate is in WORK[0..3], with the
 * column's geometry and the current row's owner (icurrow) and the panel width n0. Returns
 * 1 when the exchange was modelled: WORK[0..3] then holds the column's winner and the
 * rank's clock has advanced by what HPL's exchange would have cost it. Returns 0 when HPL
 * must exchange its messages itself (HPLSIM_EXCHANGES=messages or checked). */
int hplsim_mxswp_begin(double *work, int nprow, int myrow, int icurrow, int mycol, int npcol, int n0);

/* Called after HPL's own message exchange: under HPLSIM_EXCHANGES=checked, compares the
 * winner and the rank's finishing time with what the model gives for the same entries. */
void hplsim_mxswp_end(const double *work);

/* Observer of each modelled exchange, NULL unless a trace is recorded (trace.c installs
 * it): the rank's entry time and the bytes its messages would have carried, called when
 * the exchange ends for the rank. */
extern void (*hplsim_on_exchange)(double t0, int64_t bytes);

/* The rank's line of what its exchanges did (and, checked, how far the model landed). */
void hplsim_exchange_report(FILE *out, int rank);

#endif
