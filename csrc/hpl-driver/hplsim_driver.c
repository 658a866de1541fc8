/* main() for HPL 2.0 as shipped in hpcc, where HPL_pddriver.c defines HPL_main().
 *
 * Real build: plain MPI program reading HPL.dat from the current directory.
 * Emulated build (HPLSIM_EMULATION): `xhpl MODEL_TABLE SEED [KERNEL_REPORT]`; every rank
 * loads its kernel models before HPL starts, and optionally appends its modelled kernel
 * time to KERNEL_REPORT at the end. */
#include "hpl.h"

#ifdef HPLSIM_EMULATION
#include <stdio.h>
#include <stdlib.h>

#include "hplsim_runtime.h"
#endif

int HPL_main(int ARGC, char **ARGV, HPL_RuntimeData *rdata, int *failure);

int main(int argc, char **argv)
{
  HPL_RuntimeData rdata;
  int failure = 0;
  MPI_Init(&argc, &argv);
#ifdef HPLSIM_EMULATION
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL_TABLE SEED [KERNEL_REPORT]\n", argv[0]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  hplsim_runtime_init(argv[1], strtoull(argv[2], NULL, 10));
#endif
  rdata.Gflops = 0.0;
  HPL_main(argc, argv, &rdata, &failure);
#ifdef HPLSIM_EMULATION
  hplsim_flush();
  if (argc > 3) {
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* Ranks write one after the other: the simulation runs them in one thread. */
    FILE *out = fopen(argv[3], "a");
    if (out) {
      hplsim_runtime_report(out, rank);
      hplsim_probe_report(out, rank);
      hplsim_exchange_report(out, rank);
      fclose(out);
    }
  }
#endif
  MPI_Finalize();
  return failure;
}
