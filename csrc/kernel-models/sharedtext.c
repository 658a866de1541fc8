/* One copy of the emulated program's code for all ranks.
 *
 * SMPI's dlopen privatization gives every simulated rank its own copy of this program,
 * written to a file of its own: its globals, which HPL's code and this runtime keep per
 * rank, but also its code and constants, 1,024 times over at Dahu's scale. Each rank's
 * code is then cold after every switch between ranks (the caches hold physical pages):
 * two fifths of a 1,024-rank simulation's wall went to the ranks' own code (E72).
 *
 * The read-only parts of the copies are identical byte for byte: position-independent
 * code carries no relocation in its text, and the loader writes only to the writable
 * segment (globals, GOT, relocated pointers). So when a copy is loaded, this constructor
 * maps each of its read-only segments again, at the same address, from the program
 * SimGrid copied (HPLSIM_PROGRAM, set by the Python side), after comparing the bytes: all
 * ranks then run the same physical pages and the globals stay per rank. The code that
 * runs is the same code at the same addresses, so nothing the simulation computes can
 * change; HPLSIM_SHARED_TEXT=off keeps each copy's own pages (the reference the tests
 * compare against).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fatal.h"

struct self {
  uintptr_t probe; /* an address in this object's code */
  struct dl_phdr_info info;
  int found;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  struct self *s = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && s->probe >= lo && s->probe < lo + ph->p_memsz) {
      s->info = *info;
      s->found = 1;
      return 1;
    }
  }
  return 0;
}

/* Whether the page range [lo, hi) of the object touches memory the loader may write. */
static int touches_writable(const struct dl_phdr_info *info, uintptr_t lo, uintptr_t hi, uintptr_t page)
{
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    int writable = (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) || ph->p_type == PT_GNU_RELRO;
    if (!writable)
      continue;
    uintptr_t a = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
    uintptr_t b = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);
    if (a < hi && lo < b)
      return 1;
  }
  return 0;
}

/* Maps one read-only segment from the original program if its bytes are this copy's. */
static void share_segment(const struct dl_phdr_info *info, const ElfW(Phdr) *ph, int fd, off_t file_size,
                          uintptr_t page)
{
  uintptr_t lo = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);
  uintptr_t hi = (info->dlpi_addr + ph->p_vaddr + ph->p_filesz + page - 1) & ~(page - 1);
  off_t off = (off_t)(ph->p_offset & ~(page - 1));
  size_t len = hi - lo;
  /* Only what the file holds entirely (no .bss-like tail), away from any writable page. */
  if (ph->p_memsz != ph->p_filesz || off + (off_t)len > ((file_size + (off_t)page - 1) & ~((off_t)page - 1)) ||
      touches_writable(info, lo, hi, page))
    return;
  size_t in_file = (size_t)(file_size - off) < len ? (size_t)(file_size - off) : len;
  char *orig = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, off);
  if (orig == MAP_FAILED)
    return;
  /* The page tail beyond the file reads as zeros in both mappings. */
  int same = memcmp(orig, (const void *)lo, in_file) == 0;
  munmap(orig, len);
  if (!same)
    return;
  int prot = ((ph->p_flags & PF_R) ? PROT_READ : 0) | ((ph->p_flags & PF_X) ? PROT_EXEC : 0);
  /* The same bytes at the same addresses: the instructions after this call, in the very
   * segment being replaced, read what they read before. */
  if (mmap((void *)lo, len, prot, MAP_PRIVATE | MAP_FIXED, fd, off) == MAP_FAILED)
    hplsim_fatal("could not map the program's code again at %p (%zu bytes)", (void *)lo, len);
}

__attribute__((constructor)) static void share_text(void)
{
  const char *program = getenv("HPLSIM_PROGRAM");
  const char *how = getenv("HPLSIM_SHARED_TEXT");
  if (how && strcmp(how, "on") != 0 && strcmp(how, "off") != 0)
    hplsim_fatal("HPLSIM_SHARED_TEXT must be 'on' or 'off', got '%s'", how);
  if (!program || !*program || (how && strcmp(how, "off") == 0))
    return;
  struct self s = {.probe = (uintptr_t)&share_text};
  dl_iterate_phdr(find_self, &s);
  if (!s.found)
    return;
  int fd = open(program, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return;
  struct stat st;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  if (fstat(fd, &st) == 0)
    for (int i = 0; i < s.info.dlpi_phnum; i++) {
      const ElfW(Phdr) *ph = &s.info.dlpi_phdr[i];
      if (ph->p_type == PT_LOAD && !(ph->p_flags & PF_W))
        share_segment(&s.info, ph, fd, st.st_size, page);
    }
  close(fd); /* the mappings keep the file */
}
