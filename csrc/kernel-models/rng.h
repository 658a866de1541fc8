/* Per-rank pseudo-random streams: xoshiro256** seeded by splitmix64 from (seed, rank, stream).
 * Never libc's rand(): all simulated ranks share one process, hence one rand() state. */
#ifndef HPLSIM_RNG_H
#define HPLSIM_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t s[4];
  int has_spare;
  double spare;
} hplsim_rng;

void hplsim_rng_seed(hplsim_rng *r, uint64_t seed, uint64_t rank, uint64_t stream);
uint64_t hplsim_rng_next(hplsim_rng *r);
double hplsim_rng_uniform(hplsim_rng *r);  /* in (0, 1) */
double hplsim_rng_normal(hplsim_rng *r);   /* standard normal */
double hplsim_rng_max_uniform(hplsim_rng *r, int n); /* law of the largest of n uniforms on (0, 1) */

#endif
