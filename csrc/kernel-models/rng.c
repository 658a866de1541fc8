#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void hplsim_rng_seed(hplsim_rng *r, uint64_t seed, uint64_t rank, uint64_t stream)
{
  /* Mix the three inputs through splitmix64 so that neighbouring ranks get unrelated states. */
  uint64_t x = seed;
  uint64_t a = splitmix64(&x);
  x = a ^ (rank * 0xd1b54a32d192ed03ULL);
  uint64_t b = splitmix64(&x);
  x = b ^ (stream * 0x8cb92ba72f3d8dd7ULL);
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
  r->has_spare = 0;
  r->spare = 0.0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t hplsim_rng_next(hplsim_rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double hplsim_rng_uniform(hplsim_rng *r)
{
  /* 53 random bits, shifted by half a step so that 0 is never returned (log(0) below). */
  return ((double)(hplsim_rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

double hplsim_rng_normal(hplsim_rng *r)
{
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  double u1 = hplsim_rng_uniform(r), u2 = hplsim_rng_uniform(r);
  double radius = sqrt(-2.0 * log(u1));
  double angle = 2.0 * M_PI * u2;
  r->spare = radius * sin(angle);
  r->has_spare = 1;
  return radius * cos(angle);
}

double hplsim_rng_max_uniform(hplsim_rng *r, int n)
{
  /* If U is uniform, U^(1/n) has the law of the maximum of n independent uniforms. */
  return pow(hplsim_rng_uniform(r), 1.0 / (double)n);
}
