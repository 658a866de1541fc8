/* hplsim's kernel-model runtime: linked into the emulated HPL instead of a BLAS.
 *
 * Compute kernels (cblas_* and HPL's own copy/swap kernels) do not compute: they draw a
 * duration from the run's model table and inject it with smpi_execute_benched(). The
 * per-rank state lives in ordinary globals, which SMPI's dlopen privatization gives
 * every simulated rank its own copy of. */
#ifndef HPLSIM_RUNTIME_H
#define HPLSIM_RUNTIME_H

#include <stddef.h>
#include <smpi/smpi.h>

/* Kernels the model table can describe; the order is irrelevant outside the runtime. */
enum hplsim_kernel {
  K_DGEMM, K_DTRSM, K_DGEMV, K_DGER, K_DTRSV, K_DAXPY, K_DSCAL, K_DSWAP, K_IDAMAX,
  K_DLACPY, K_DLATCPY,
  K_DLASWP00N, K_DLASWP10N, K_DLASWP01N, K_DLASWP01T, K_DLASWP02N, K_DLASWP03N,
  K_DLASWP03T, K_DLASWP04N, K_DLASWP04T, K_DLASWP05N, K_DLASWP05T, K_DLASWP06N,
  K_DLASWP06T,
  K_NKERNELS
};

/* Called by the driver on every rank right after MPI_Init: loads the model table,
 * finds this rank's host and CPU, seeds the rank's generators. */
void hplsim_runtime_init(const char *model_table, unsigned long long seed);

/* Account the modelled duration of one call of `kernel` with sizes x0, x1, x2. */
void hplsim_kernel(enum hplsim_kernel kernel, double x0, double x1, double x2);

/* Inject the time accounted since the rank's last MPI call (called before each MPI call). */
void hplsim_flush(void);

/* How many MPI calls the rank has made (each is preceded by hplsim_flush). */
unsigned long hplsim_mpi_calls(void);

/* Whether modelled time is waiting for the rank's next MPI call. */
int hplsim_has_pending(void);

/* Uniform integer in [0, n) from the rank's pivot stream (n > 0). */
int hplsim_random_index(int n);

/* From the pivot stream: a value distributed as the largest of n uniforms on (0, 1). */
double hplsim_pivot_magnitude(int n);

/* Panel buffers: `size` bytes, returned aligned to `align`, folded except the `private_len`
 * bytes at `private_offset` (HPL's pivot indices); reused across iterations. */
void *hplsim_panel_work(size_t size, size_t align, size_t private_offset, size_t private_len);
void hplsim_panel_release(void *work);

/* A folded scratch buffer of at least `size` bytes, the rank's only one (HPL's row-swap
 * work space W: used within one call, one call at a time). Never freed by the caller. */
void *hplsim_scratch(size_t size);

/* The matrix: one lazily mapped memory file shared by all ranks, one mapping per rank,
 * never read for its values (matrix.c). */
void *hplsim_matrix(size_t size);
void hplsim_matrix_free(void *ptr);
/* Where the panel factorisation's row swaps write instead of the matrix (HPL_dlocswp*):
 * one column, the first of the rank's matrix, used with a leading dimension of 0. */
double *hplsim_row_sink(void);
/* Whether `p` lies in one of this rank's matrices. */
int hplsim_in_matrix(const void *p);

/* Maps `len` bytes at `addr` (page-aligned, inside a buffer that SMPI's shared malloc
 * folded) to one lazily mapped file shared by all ranks, in place of SMPI's one mapping
 * per block; SMPI's record of the buffer (which bytes it never copies) is unchanged. */
void hplsim_fold_lazily(void *addr, size_t len);

/* The local maximum that idamax drew for the entry it returned (HPL_dlocmax). */
double hplsim_pivot_value(const double *entry);

/* Progress for the parent (progress.c): set up from HPLSIM_PROGRESS_FD on rank 0, and
 * called by HPL_pdpanel_init with the panel's first global column. */
void hplsim_progress_init(int rank);
void hplsim_progress(int ja);

/* Traces (trace.c): set when the run records one (HPLSIM_TRACE_DIR); the hooks record a
 * kernel's modelled duration and give the pending ones their times when injected. */
extern int hplsim_trace_on;
void hplsim_trace_kernel(int kernel, double seconds, double x0, double x1, double x2);
void hplsim_trace_flush(void);

/* Fatal error with a one-line message on stderr (the Python side reports it). */
void hplsim_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#endif
