/* hplsim's kernel-model runtime: linked into the emulated HPL instead of a BLAS.
 *
 * Compute kernels (cblas_* and HPL's own copy/swap kernels) do not compute: they draw a
 * duration from the run's model table and inject it with smpi_execute_benched(). The
 * per-rank state lives in ordinary globals, which SMPI's dlopen privatization gives
 * every simulated rank its own copy of.
 *
 * This header gathers the runtime's module headers for HPL's patched sources and the
 * driver; the runtime's own files include the module headers they use, so that their
 * dependencies stay one way (tests/test_architecture.py, docs/architecture.md). */
#ifndef HPLSIM_RUNTIME_H
#define HPLSIM_RUNTIME_H

#include <stddef.h>
#include <smpi/smpi.h>

#include "blas.h"
#include "exchange.h"
#include "fatal.h"
#include "kernels.h"
#include "matrix.h"
#include "panel.h"
#include "probe.h"
#include "progress.h"
#include "runtime.h"

#endif
