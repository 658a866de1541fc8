/* Panel buffers for the emulated HPL.
 *
 * HPL mallocs and frees each panel's buffer at every iteration. In emulation the buffer
 * is folded with SMPI_PARTIAL_SHARED_MALLOC (its doubles are never computed on) except a
 * private window holding DPIV and DINFO: HPL stores pivot indices there as doubles and the
 * swaps read them back, so they must stay per rank. Mapping a folded buffer costs mmaps
 * proportional to its size, hence the reuse: a released buffer serves later, smaller
 * requests by placing the returned pointer so that their pivot window lands in its
 * private window. */
#include <smpi/smpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fatal.h"
#include "matrix.h"
#include "panel.h"

#define MAX_BUFFERS 64

typedef struct {
  char *base;
  size_t capacity;
  size_t window_lo, window_hi; /* the private byte range */
  int in_use;
} buffer;

static buffer pool[MAX_BUFFERS];
static int npool;

/* SMPI's shared malloc maps a folded range one block at a time (2 MiB with huge pages):
 * a panel of 8·NB·(N/P + N/Q) bytes is that many mappings (hundreds per rank for
 * Stampede's NB = 1024). Its whole 2 MiB-aligned interior becomes one mapping instead. */
/* HPLSIM_PANELS: unset, the panels are folded as below; `smpi`, SMPI's own folding is kept
 * (the reference the tests compare with, same predictions to the bit); `private`, no
 * folding at all (a diagnostic: 8·NB·(N/P + N/Q) bytes per rank). */
enum { FOLDED, SMPI_ONLY, PRIVATE };

static int panels_mode(void)
{
  static int mode = -1;
  if (mode < 0) {
    const char *how = getenv("HPLSIM_PANELS");
    mode = !how ? FOLDED : strcmp(how, "smpi") == 0 ? SMPI_ONLY : strcmp(how, "private") == 0 ? PRIVATE : FOLDED;
  }
  return mode;
}

static void refold(char *base, size_t lo, size_t hi)
{
  if (panels_mode() == SMPI_ONLY)
    return;
  const uintptr_t huge = (uintptr_t)2 << 20;
  uintptr_t a = ((uintptr_t)base + lo + huge - 1) & ~(huge - 1);
  uintptr_t z = ((uintptr_t)base + hi) & ~(huge - 1);
  if (z > a)
    hplsim_fold_lazily((void *)a, z - a);
}

/* Offset at which a request fits in `b`, or -1. */
static long fit(const buffer *b, size_t size, size_t align, size_t off, size_t len)
{
  if (b->window_hi < off + len)
    return -1;
  size_t k = (b->window_hi - len - off) / align * align;
  if (k + off < b->window_lo || k + size > b->capacity)
    return -1;
  return (long)k;
}

void *hplsim_panel_work(size_t size, size_t align, size_t off, size_t len)
{
  if (align == 0)
    align = sizeof(double);
  for (int i = 0; i < npool; i++) {
    if (pool[i].in_use)
      continue;
    long k = fit(&pool[i], size, align, off, len);
    if (k >= 0) {
      pool[i].in_use = 1;
      return pool[i].base + k;
    }
  }
  /* Nothing fits: the idle buffers are of an older, differently shaped problem. */
  int kept = 0;
  for (int i = 0; i < npool; i++) {
    if (pool[i].in_use)
      pool[kept++] = pool[i];
    else
      SMPI_SHARED_FREE(pool[i].base);
  }
  npool = kept;
  if (npool == MAX_BUFFERS)
    hplsim_fatal("more than %d panel buffers in use", MAX_BUFFERS);

  buffer b;
  b.capacity = size + align;
  b.window_lo = off;
  b.window_hi = off + len + align;
  if (b.window_hi > b.capacity)
    b.window_hi = b.capacity;
  size_t offsets[4];
  int nblocks = 0;
  if (b.window_lo > 0) {
    offsets[2 * nblocks] = 0;
    offsets[2 * nblocks + 1] = b.window_lo;
    nblocks++;
  }
  if (b.window_hi < b.capacity) {
    offsets[2 * nblocks] = b.window_hi;
    offsets[2 * nblocks + 1] = b.capacity;
    nblocks++;
  }
  if (panels_mode() == PRIVATE)
    nblocks = 0;
  b.base = nblocks ? SMPI_PARTIAL_SHARED_MALLOC(b.capacity, offsets, nblocks) : malloc(b.capacity);
  if (!b.base)
    return NULL;
  for (int i = 0; i < nblocks; i++)
    refold(b.base, offsets[2 * i], offsets[2 * i + 1]);
  b.in_use = 1;
  pool[npool++] = b;
  long k = fit(&b, size, align, off, len);
  if (k < 0)
    hplsim_fatal("panel buffer layout error (size %zu, offset %zu)", size, off);
  return b.base + k;
}

void hplsim_panel_release(void *work)
{
  for (int i = 0; i < npool; i++) {
    if ((char *)work >= pool[i].base && (char *)work < pool[i].base + pool[i].capacity) {
      pool[i].in_use = 0;
      return;
    }
  }
  hplsim_fatal("releasing a panel buffer that was not allocated by the runtime");
}

static char *scratch;
static size_t scratch_size;

void *hplsim_scratch(size_t size)
{
  if (size > scratch_size) {
    /* The first swap of a run is the largest (the trailing matrix only shrinks). */
    if (scratch)
      SMPI_SHARED_FREE(scratch);
    scratch = SMPI_SHARED_MALLOC(size);
    scratch_size = scratch ? size : 0;
    if (scratch)
      refold(scratch, 0, size);
  }
  return scratch;
}
