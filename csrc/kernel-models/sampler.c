/* Test tool (no SMPI): draws durations from a model table, as one emulated rank would.
 * usage: hplsim-model-sampler TABLE HOST LOCAL_RANK SEED RANK KERNEL X0 X1 X2 COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "rng.h"

int main(int argc, char **argv)
{
  if (argc != 11) {
    fprintf(stderr, "usage: %s TABLE HOST LOCAL_RANK SEED RANK KERNEL X0 X1 X2 COUNT\n", argv[0]);
    return 2;
  }
  char err[512];
  if (hplsim_model_load(argv[1], argv[2], atoi(argv[3]), err, sizeof err) != 0) {
    fprintf(stderr, "error: %s\n", err);
    return 1;
  }
  if (strcmp(argv[6], "pivot") == 0) { /* the pivot stream's local maxima over X0 rows */
    hplsim_rng rng;
    hplsim_rng_seed(&rng, strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10), 2);
    printf("cpu %d\n", hplsim_model_cpu());
    for (long i = 0; i < atol(argv[10]); i++)
      printf("%.17g\n", hplsim_rng_max_uniform(&rng, atoi(argv[7])));
    return 0;
  }
  int kernel = -1;
  for (int k = 0; k < K_NKERNELS; k++)
    if (strcmp(hplsim_kernel_name((enum hplsim_kernel)k), argv[6]) == 0)
      kernel = k;
  if (kernel < 0) {
    fprintf(stderr, "error: kernel %s not supported by the sampler\n", argv[6]);
    return 2;
  }
  hplsim_rng rng;
  hplsim_rng_seed(&rng, strtoull(argv[4], NULL, 10), strtoull(argv[5], NULL, 10), 1);
  long count = atol(argv[10]);
  printf("cpu %d\n", hplsim_model_cpu());
  for (long i = 0; i < count; i++)
    printf("%.17g\n", hplsim_model_draw((enum hplsim_kernel)kernel, atof(argv[7]), atof(argv[8]), atof(argv[9]), &rng));
  return 0;
}
