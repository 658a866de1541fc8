/* HPL_pipid, computed once a panel for all ranks.
 *
 * HPL_pipid turns a panel's pivots into the list of row moves that the swap performs
 * (HPL_pdlaswp*): for each of the panel's jb pivots it searches the list built so far, so
 * up to jb² steps, and every rank of the grid builds the same list from the same pivots,
 * once a panel. At 1,024 ranks and NB = 128 that was 5–7 % of a simulation's wall
 * (docs/validation.md E72). It costs no simulated time (HPL's code between kernels is not
 * charged), and its answer depends on the panel's pivots (DPIV), first row (ia) and width
 * (jb) only. So the first rank to ask computes it with HPL's own function, and the others
 * copy that answer from memory all ranks share, after comparing those inputs entry by
 * entry: a rank whose inputs differ (another panel in the same slot) computes its own.
 * The ranks run one at a time in SimGrid's single thread (as mailbox.c assumes); with
 * parallel contexts every rank computes its own, and with HPLSIM_SHARED_PIPID=off (the
 * reference the tests compare against).
 *
 * Linked in by `-Wl,--wrap=HPL_pipid` (hpl/build.py), so HPL's source is unchanged.
 */
#include <stdlib.h>
#include <string.h>

#include "fatal.h"
#include "hpl.h"
#include "matrix.h"
#include "simgrid_config.h"

void __real_HPL_pipid(HPL_T_panel *PANEL, int *K, int *IPID);

/* Panels in flight at once: the look-ahead's depth plus one, and ranks a few panels
 * behind others; a slot holds the answer for one panel, by its first row. */
#define SLOTS 16
/* Widest panel shared (NB); a wider one is computed by each rank. */
#define MAX_JB 4096

struct answer {
  int ia, jb, k; /* jb = 0: an empty slot (the shared memory starts zeroed) */
  double dpiv[MAX_JB];
  int ipid[4 * MAX_JB]; /* K is at most 4 jb (HPL_pipid's documentation) */
};

static int on = -1;
static int fd = -1;
static struct answer *answers; /* [SLOTS], shared by all ranks */

static int shared(void)
{
  if (on < 0) {
    const char *env = getenv("HPLSIM_SHARED_PIPID");
    if (env && strcmp(env, "on") != 0 && strcmp(env, "off") != 0)
      hplsim_fatal("HPLSIM_SHARED_PIPID must be 'on' or 'off', got '%s'", env);
    on = !(env && strcmp(env, "off") == 0) && hplsim_ranks_take_turns();
    if (on)
      answers = hplsim_map_shared("hplsim-pipid", "HPLSIM_PIPID_FD", &fd, SLOTS * sizeof *answers);
  }
  return on;
}

void __wrap_HPL_pipid(HPL_T_panel *PANEL, int *K, int *IPID)
{
  int jb = PANEL->jb, ia = PANEL->ia;
  if (jb < 1 || jb > MAX_JB || !shared()) {
    __real_HPL_pipid(PANEL, K, IPID);
    return;
  }
  struct answer *a = &answers[(unsigned)(ia / jb) % SLOTS];
  size_t bytes = (size_t)jb * sizeof *PANEL->DPIV;
  if (a->jb == jb && a->ia == ia && memcmp(a->dpiv, PANEL->DPIV, bytes) == 0) {
    *K = a->k;
    memcpy(IPID, a->ipid, (size_t)a->k * sizeof *IPID);
    return;
  }
  __real_HPL_pipid(PANEL, K, IPID);
  a->ia = ia;
  a->jb = jb;
  a->k = *K;
  memcpy(a->dpiv, PANEL->DPIV, bytes);
  memcpy(a->ipid, IPID, (size_t)*K * sizeof *IPID);
}
