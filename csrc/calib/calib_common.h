/* Helpers shared by the calibration programs: clock, seeded generator, host/rank/core
 * identity, and a CSV splitter that keeps empty fields (strtok would drop them). */
#ifndef HPLSIM_CALIB_COMMON_H
#define HPLSIM_CALIB_COMMON_H

#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* CLOCK_MONOTONIC: the clock hplsim's monitor samples with time.monotonic(), so the
 * start of each call lines up with the frequency/temperature samples of the same host. */
static inline double calib_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* xoshiro256** seeded by splitmix64 from (seed, rank, stream): independent reproducible
 * streams per rank and per purpose (data, offsets). */
typedef struct { uint64_t s[4]; } calib_rng;

static inline uint64_t calib_splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static inline void calib_rng_seed(calib_rng *r, uint64_t seed, uint64_t rank, uint64_t stream) {
  uint64_t x = seed ^ (rank * 0xD1B54A32D192ED03ULL) ^ (stream * 0x8CB92BA72F3D8DD7ULL);
  for (int i = 0; i < 4; i++) r->s[i] = calib_splitmix64(&x);
}

static inline uint64_t calib_rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t calib_rng_next(calib_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = calib_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
  s[2] ^= t; s[3] = calib_rotl(s[3], 45);
  return result;
}

/* The rank given by the launcher (mpirun, srun, PMI), else 0. */
static inline int calib_env_rank(void) {
  const char *names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
  for (int i = 0; names[i]; i++) {
    const char *v = getenv(names[i]);
    if (v && *v) return atoi(v);
  }
  return 0;
}

static inline void calib_hostname(char *buf, size_t len) {
  if (gethostname(buf, len) != 0) snprintf(buf, len, "unknown");
  buf[len - 1] = '\0';
}

/* Socket (physical package) of a logical CPU, cached; -1 when sysfs does not say. */
#define CALIB_MAX_CPUS 8192
static inline int calib_package_of(int cpu) {
  static int cache[CALIB_MAX_CPUS];
  static int filled[CALIB_MAX_CPUS];
  if (cpu < 0 || cpu >= CALIB_MAX_CPUS) return -1;
  if (!filled[cpu]) {
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
    FILE *f = fopen(path, "r");
    int id = -1;
    if (f) {
      if (fscanf(f, "%d", &id) != 1) id = -1;
      fclose(f);
    }
    cache[cpu] = id;
    filled[cpu] = 1;
  }
  return cache[cpu];
}

/* Split `line` in place on commas; empty fields are kept as "". Returns the field count. */
static inline int calib_split(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  line[strcspn(line, "\r\n")] = '\0';
  while (n < max) {
    fields[n++] = p;
    char *comma = strchr(p, ',');
    if (!comma) break;
    *comma = '\0';
    p = comma + 1;
  }
  return n;
}

/* Strict non-negative integer; -1 for empty, -2 for garbage. */
static inline long long calib_parse_int(const char *s) {
  if (!s || !*s) return -1;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < 0) {
    /* "12.0" is what pandas writes for integer columns holding NaN elsewhere */
    double d = strtod(s, &end);
    if (*end || d < 0 || d != (double)(long long)d) return -2;
    return (long long)d;
  }
  return v;
}

#endif
