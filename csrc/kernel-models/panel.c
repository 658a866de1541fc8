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
 * A piece may still begin inside DPIV itself when the pieces are shorter than it (Q larger
 * than about NB), and no private window survives that: the pivots of the long broadcasts'
 * panels also travel beside the messages (hplsim_pivots_publish/fetch), so that every
 * panel is folded on every grid (lab notebook E45). */
#include <smpi/smpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <errno.h>
#include <unistd.h>

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

/* SMPI 3.32 maps a buffer's last shared range, when it ends the buffer, onto its shared
 * file from the start of the buffer's last (partial) block to its end
 * (smpi_shared_malloc_partial: the high pages run from `stop_block_offset` to `size`), so a
 * private window in that block - every window of a panel under one block (2 MiB with huge
 * pages), and of a panel whose U part is shorter than its last block - is shared with every
 * other rank's buffers at the same offsets: one rank's panel factorisation then writes into
 * another's pivots (lab notebook E45). The window's pages are mapped privately again. */
static void privatize_window(char *base, size_t lo, size_t hi)
{
  const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  uintptr_t a = ((uintptr_t)base + lo) & ~(page - 1);
  uintptr_t z = ((uintptr_t)base + hi + page - 1) & ~(page - 1);
  if (mmap((void *)a, z - a, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != (void *)a)
    hplsim_fatal("mapping a panel's pivot window privately failed: %s", strerror(errno));
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

void *hplsim_panel_work(size_t size, size_t align, size_t off, size_t len)
{
  if (align == 0)
    align = sizeof(double);
  int all_private = panels_mode() == PRIVATE;
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
  if (nblocks && b.window_hi > b.window_lo)
    privatize_window(b.base, b.window_lo, b.window_hi);
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

/* The long broadcasts' pivots, one slot of NB + 1 doubles per panel, keyed by the
 * panel's broadcast tag (the same on every rank, unlike JA, which HPL_pdfact advances on
 * the ranks that call it, and unique among the panels in flight), in a memory file shared
 * by all ranks (the runtime's globals are per rank). Every rank of the grid holds the same
 * DPIV and DINFO for a panel (global row indices, from the column's all-reduced pivot
 * search); HPL reads them only after HPL_bwait, which a receiver reaches after the roots'
 * HPL_binit (their first message comes after it): a slot is written before it is read,
 * whatever SMPI copied into the window. Every root writes the same values. */
static int pivots_fd = -1;
static double *pivots;
static size_t pivots_bytes;

static double *pivot_slot(int tag, int nb, int count)
{
  if (nb <= 0 || tag < 0 || count < 1 || count > nb + 1)
    hplsim_fatal("pivots of a panel out of range (tag %d, nb %d, count %d)", tag, nb, count);
  size_t first = (size_t)tag * (size_t)(nb + 1);
  size_t need = (first + (size_t)count) * sizeof(double);
  if (need > pivots_bytes) {
    /* Panels come in order: doubling keeps the remappings few. */
    size_t size = pivots_bytes ? pivots_bytes : (size_t)1 << 20;
    while (size < need)
      size *= 2;
    if (pivots)
      munmap(pivots, pivots_bytes);
    pivots = hplsim_map_shared("hplsim-pivots", "HPLSIM_PIVOTS_FD", &pivots_fd, size);
    pivots_bytes = size;
  }
  return pivots + first;
}

void hplsim_pivots_publish(int tag, int nb, const double *dpiv, int count)
{
  memcpy(pivot_slot(tag, nb, count), dpiv, (size_t)count * sizeof(double));
}

void hplsim_pivots_fetch(int tag, int nb, double *dpiv, int count)
{
  memcpy(dpiv, pivot_slot(tag, nb, count), (size_t)count * sizeof(double));
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
