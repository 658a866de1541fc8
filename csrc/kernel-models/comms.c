/* Ranks of HPL's communicators as world ranks (for the trace's peers and for the probe's
 * per-locality semantics, probe.c), and host locality from the simulation's hostfile.
 * Each table is per simulated rank (SMPI privatizes these statics) and built at first use:
 * one per communicator (HPL has its row, column and world ones), one host map. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comms.h"
#include "fatal.h"

#define MAX_COMMS 16
static struct {
  MPI_Comm comm;
  int size;
  int *world;
} comms[MAX_COMMS];
static int ncomms;

int hplsim_world_rank(MPI_Comm comm, int rank)
{
  if (rank < 0)
    return -1;
  for (int i = 0; i < ncomms; i++)
    if (comms[i].comm == comm)
      return rank < comms[i].size ? comms[i].world[rank] : -1;
  if (ncomms == MAX_COMMS)
    return -1;
  MPI_Group group, world;
  int size;
  MPI_Comm_size(comm, &size);
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  int *from = malloc(2 * (size_t)size * sizeof(int));
  if (!from)
    hplsim_fatal("out of memory (communicator table)");
  for (int i = 0; i < size; i++)
    from[i] = i;
  MPI_Group_translate_ranks(group, size, from, world, from + size);
  memmove(from, from + size, (size_t)size * sizeof(int));
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  comms[ncomms].comm = comm;
  comms[ncomms].size = size;
  comms[ncomms].world = from;
  ncomms++;
  return rank < size ? from[rank] : -1;
}

/* same[w] = 1 if world rank w shares this rank's host; built from the hostfile once. */
static char *same;
static int nsame;

static void read_hosts(void)
{
  const char *path = getenv("HPLSIM_HOSTFILE");
  if (!path || !*path)
    hplsim_fatal("HPLSIM_HOSTFILE is not set: the probe's per-locality semantics needs the hostfile");
  FILE *f = fopen(path, "r");
  if (!f)
    hplsim_fatal("cannot read the hostfile %s", path);
  int me, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char **hosts = calloc((size_t)size, sizeof *hosts);
  same = calloc((size_t)size, 1);
  if (!hosts || !same)
    hplsim_fatal("out of memory (host table)");
  char line[1024];
  int n = 0;
  while (n < size && fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (!*line)
      continue;
    hosts[n] = strdup(line);
    if (!hosts[n])
      hplsim_fatal("out of memory (host table)");
    n++;
  }
  fclose(f);
  if (n == 0)
    hplsim_fatal("the hostfile %s lists no host", path);
  /* smpirun cycles through the hostfile's lines when it has fewer than the ranks */
  const char *mine = hosts[me % n];
  for (int w = 0; w < size; w++)
    same[w] = strcmp(hosts[w % n], mine) == 0;
  for (int i = 0; i < n; i++)
    free(hosts[i]);
  free(hosts);
  nsame = size;
}

int hplsim_same_host(int world)
{
  if (!same)
    read_hosts();
  return world >= 0 && world < nsame && same[world];
}
