/* The matrix of the emulated HPL: one memory mapping per rank, whatever N.
 *
 * SMPI's shared malloc folds a buffer by mapping one small file block over and over, one
 * memory mapping per block: the matrix alone needed 8·N²/2 MiB mappings (N = 500,000 on
 * 1,024 ranks: about a million, far beyond vm.max_map_count, each costing kernel memory),
 * and its MAP_POPULATE built page tables for all of it.
 *
 * Nothing in the emulated HPL depends on the matrix's values: the kernels are modelled,
 * idamax's answer and the local maximum HPL_dlocmax reads come from the rank's pivot
 * stream (blas.c), dcopy skips rows that go in or out of the matrix, and the panel
 * factorisation's own row swaps (HPL_dlocswp*, patched) write into a sink: the first
 * column of the rank's matrix (hplsim_row_sink). So the matrix is hardly touched, and
 * needs next to no memory: every rank maps one shared memory file, once and lazily (a page
 * exists only once something touches it). What does touch it — the sink, one column, and
 * the final solve's vectors — is the same few pages of the shared file for every rank.
 *
 * Unlike SMPI's shared buffers, SMPI does not know this one: a message from or into the
 * matrix is really copied. In HPL only the solve's short vectors (HPL_pdtrsv) travel so;
 * panels, U and the swap buffers live in the runtime's panel and scratch buffers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <smpi/smpi.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fatal.h"
#include "matrix.h"

/* The file is shared by all simulated ranks of the process, while each rank has its own
 * copy of this library's globals (SMPI's dlopen privatization): the first rank to need it
 * leaves its descriptor in the process environment, tagged with the process id so that a
 * child process never takes a descriptor it does not have. (The kernel's process id: SMPI
 * answers getpid() with the simulated rank's own.) */
#define FD_ENV "HPLSIM_MATRIX_FD"

#define MAX_MATRICES 4

typedef struct {
  char *base;
  size_t size;
  int smpi; /* folded by SMPI's shared malloc instead (HPLSIM_MATRIX=smpi) */
} matrix;

static matrix mats[MAX_MATRICES];
static int nmats;
static int shared_fd = -1;

static long process_id(void)
{
  return syscall(SYS_getpid);
}

/* The file named `name`, shared by all ranks through the environment variable `env`. */
static int shared_file(const char *name, const char *env_name, int *cached)
{
  if (*cached >= 0)
    return *cached;
  const char *env = getenv(env_name);
  long pid, fd;
  if (env && sscanf(env, "%ld:%ld", &pid, &fd) == 2 && pid == process_id()) {
    *cached = (int)fd;
    return *cached;
  }
  int f = memfd_create(name, MFD_CLOEXEC);
  if (f < 0)
    hplsim_fatal("memfd_create for the folded %s failed: %s", name, strerror(errno));
  char buf[64];
  snprintf(buf, sizeof buf, "%ld:%d", process_id(), f);
  setenv(env_name, buf, 1);
  *cached = f;
  return *cached;
}

static int matrix_fd(void)
{
  return shared_file("hplsim-matrix", FD_ENV, &shared_fd);
}

/* The file must cover `size` bytes from offset 0 for every rank that maps it, or a touch
 * beyond its end would be a SIGBUS. Growing a file costs no memory. */
static void cover(int fd, size_t size)
{
  struct stat st;
  if (fstat(fd, &st) != 0)
    hplsim_fatal("fstat of a folded file failed: %s", strerror(errno));
  if ((off_t)size > st.st_size && ftruncate(fd, (off_t)size) != 0)
    hplsim_fatal("sizing a folded file to %zu bytes failed: %s", size, strerror(errno));
}

void *hplsim_map_shared(const char *name, const char *env_name, int *cached_fd, size_t size)
{
  int fd = shared_file(name, env_name, cached_fd);
  cover(fd, size);
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    hplsim_fatal("mapping the shared %s (%zu bytes) failed: %s", name, size, strerror(errno));
  return p;
}

static int buffers_fd = -1;

void hplsim_fold_lazily(void *addr, size_t len)
{
  if (len == 0)
    return;
  int fd = shared_file("hplsim-buffers", "HPLSIM_BUFFERS_FD", &buffers_fd);
  cover(fd, len);
  if (mmap(addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) != addr)
    hplsim_fatal("folding a buffer (%zu bytes) failed: %s", len, strerror(errno));
}

static void *remember(void *p, size_t size, int smpi)
{
  if (nmats == MAX_MATRICES)
    hplsim_fatal("more than %d matrices allocated at once", MAX_MATRICES);
  mats[nmats].base = p;
  mats[nmats].size = size;
  mats[nmats].smpi = smpi;
  nmats++;
  return p;
}

void *hplsim_matrix(size_t size)
{
  if (size == 0)
    return NULL;
  /* SMPI's own folding (one mapping per block), kept as the reference that tests compare
   * this one with: the predictions must be the same to the bit. */
  const char *how = getenv("HPLSIM_MATRIX");
  if (how && strcmp(how, "smpi") == 0) {
    void *p = SMPI_SHARED_MALLOC(size);
    if (!p)
      hplsim_fatal("SMPI's shared malloc of the matrix (%zu bytes) failed", size);
    return remember(p, size, 1);
  }
  int fd = matrix_fd();
  cover(fd, size);
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    hplsim_fatal("mapping the folded matrix (%zu bytes) failed: %s", size, strerror(errno));
  return remember(p, size, 0);
}

void hplsim_matrix_free(void *ptr)
{
  if (!ptr)
    return;
  for (int i = 0; i < nmats; i++) {
    if (mats[i].base == ptr) {
      if (mats[i].smpi)
        SMPI_SHARED_FREE(mats[i].base);
      else
        munmap(mats[i].base, mats[i].size);
      mats[i] = mats[--nmats];
      return;
    }
  }
  hplsim_fatal("freeing a matrix that was not allocated by the runtime");
}

double *hplsim_row_sink(void)
{
  if (nmats == 0)
    hplsim_fatal("a panel's rows were swapped before the matrix was allocated");
  return (double *)mats[0].base;
}

int hplsim_in_matrix(const void *p)
{
  for (int i = 0; i < nmats; i++)
    if ((const char *)p >= mats[i].base && (const char *)p < mats[i].base + mats[i].size)
      return 1;
  return 0;
}
