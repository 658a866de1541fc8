/* Panel buffers for the emulated HPL.
 *
 * HPL mallocs and frees each panel's buffer at every iteration. In emulation the buffer
 * is folded with SMPI_PARTIAL_SHARED_MALLOC (its doubles are never computed on) except a
 * private window holding DPIV and DINFO: HPL stores pivot indices there as doubles and the
 * swaps read them back, so they must stay per rank. Mapping a folded buffer costs mmaps
 * proportional to its size, hence the reuse: a released buffer serves later, smaller
 * requests by placing the returned pointer so that their pivot window lands in its
 * private window.
 *
 * The private window starts exactly at DPIV, never before it. When SMPI 3.32 copies a
 * message from or to a partially shared buffer, it keeps the private blocks that start at
 * or after the message's first byte and drops one that starts before it
 * (shift_and_frame_private_blocks subtracts unsigned offsets): a message that begins
 * inside the private window is not copied at all. The long broadcasts (BCAST 4, 5) send
 * the panel in pieces of len/Q doubles; with a window starting before DPIV, a piece that
 * begins between the window's start and DPIV carried stale pivots (2 x 64, NB 64: the
 * rows then disagreed on the rows to swap, MPI_ERR_TRUNCATE, or a silently wrong time).
 * A piece may also begin inside DPIV itself when the pieces are shorter than it (Q larger
 * than about NB): no private window survives that, so such panels are not folded at all. */
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
  int all_private;              /* not folded: any placement fits */
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

/* Offset at which a request fits in `b` with its DPIV at the window's first byte, or -1.
 * HPL aligns the returned pointer up to `align` itself, so the offset must be a multiple
 * of it: successive panels' DPIV offsets differ by multiples of JB·JB doubles, which keeps
 * the reuse for every panel but a last, narrower one. */
static long fit(const buffer *b, size_t size, size_t align, size_t off, size_t len)
{
  if (b->all_private)
    return size <= b->capacity ? 0 : -1;
  if (b->window_lo < off)
    return -1;
  size_t k = b->window_lo - off;
  if (k % align != 0 || k + off + len > b->window_hi || k + size > b->capacity)
    return -1;
  return (long)k;
}

/* Whether a piece of the long broadcasts may begin inside the pivot window of this
 * panel on some rank (`pieces`: Q for the long broadcasts, 1 for the others, which send
 * the panel whole, so that their panels are folded on any grid). HPL_blong.c cuts the panel's COUNT = ml2·JB + JB² + JB + 1 doubles
 * into `pieces` pieces of count = ⌊COUNT / pieces⌋ doubles starting at j·count, j < pieces
 * (HPL_blonM.c: pieces - 1 of them, so longer ones); the last starts at or before DPIV
 * when count >= JB + 1, the pivot window's length. The test takes the smallest COUNT (ml2
 * = 0) so that every rank of the panel decides alike, whatever its rows: a message between
 * a folded and an unfolded panel would otherwise meet two layouts (a 2 x 72 run failed so). */
static int pieces_may_start_in_window(size_t len, int pieces)
{
  if (pieces <= 1)
    return 0;
  size_t window = len / sizeof(double); /* JB + 1 */
  size_t jb = window - 1;
  return (jb * jb + window) / (size_t)pieces < window;
}

void *hplsim_panel_work(size_t size, size_t align, size_t off, size_t len, int pieces)
{
  if (align == 0)
    align = sizeof(double);
  int all_private = panels_mode() == PRIVATE || pieces_may_start_in_window(len, pieces);
  for (int i = 0; i < npool; i++) {
    if (pool[i].in_use || pool[i].all_private != all_private)
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
  b.window_hi = off + len;
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
  b.all_private = all_private;
  if (all_private)
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
