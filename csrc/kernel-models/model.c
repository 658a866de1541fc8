#define _GNU_SOURCE /* memmem */
#include "model.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_TERMS 64
#define MAX_COMPONENTS 16
#define MAX_PIECES 16
#define MAX_CONDITIONS 8
#define NSLOTS 3
#define TABLE_VERSION 3

enum family { F_NONE = 0, F_NORMAL = 1, F_HALFNORMAL = 2 };

/* Sized to what the table holds: every simulated rank keeps its own copy (privatized
 * globals), so fixed-size arrays would cost megabytes per rank at 1,024 ranks. */
typedef struct {
  unsigned char exps[NSLOTS];
  double coef;
} term;

typedef struct {
  int nterms;
  term *terms;
} poly;

typedef struct {
  int family;
  double weight; /* cumulative, for drawing the component */
  poly mean, sigma;
} component;

/* A condition on the sizes: c·x + c0 >= 0 (kind 0), > 0 (kind 1), or c·x a multiple of c0
 * (kind 2: a row swap's leading dimension at a multiple of the cache's set span). */
enum { C_GE = 0, C_GT = 1, C_MULTIPLE = 2 };
typedef struct {
  double coef[NSLOTS], c0;
  int kind;
} condition;

/* The law of the calls whose sizes meet every condition (none: every call). */
typedef struct {
  int ncond;
  condition *cond;
  int ncomp;
  component *comp;
} piece;

/* A kernel's pieces, in order: the first one that holds draws the duration. */
typedef struct {
  int npieces;
  piece *pieces;
} kmodel;

static kmodel models[K_NKERNELS];
static int has_model[K_NKERNELS];
static int my_cpu;

/* The half-normal family is |Z| scaled and shifted to mean 0 and standard deviation 1. */
static const double HALFNORMAL_MEAN = 0.79788456080286535588; /* sqrt(2/pi) */
static const double HALFNORMAL_SD = 0.60281028144776133;      /* sqrt(1-2/pi) */

static int lookup_kernel(const char *name)
{
  for (int k = 0; k < K_NKERNELS; k++)
    if (strcmp(hplsim_kernels[k].name, name) == 0)
      return k;
  return -1;
}

/* The table is read whole and cut into tokens here: every simulated rank reads it at
 * start-up, and fscanf's per-call overhead made that a quarter of a 1,024-rank run at
 * small N (docs/validation.md E76). strtol and strtod are what fscanf's %ld and %lf call,
 * so the numbers are the same bits. */
typedef struct {
  const char *p, *end;
  char *err;
  size_t errlen;
  int failed;
} reader;

static void fail(reader *r, const char *fmt, ...)
{
  if (r->failed)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->err, r->errlen, fmt, ap);
  va_end(ap);
  r->failed = 1;
}

/* Skips white space; 0 at the end of the table. */
static int next_token(reader *r)
{
  while (r->p < r->end && isspace((unsigned char)*r->p))
    r->p++;
  return r->p < r->end;
}

/* As fscanf's %Ns with N = len - 1: at most that many characters, the rest left for the
 * next read. */
static int read_word(reader *r, char *buf, size_t len)
{
  if (!next_token(r)) {
    fail(r, "model table ends unexpectedly");
    return -1;
  }
  size_t n = 0;
  while (r->p < r->end && !isspace((unsigned char)*r->p) && n < len - 1)
    buf[n++] = *r->p++;
  buf[n] = '\0';
  return 0;
}

/* strtol and strtod stop at the buffer's terminating NUL (read_table adds one). */
static long read_long(reader *r)
{
  char *after = NULL;
  long v = next_token(r) ? strtol(r->p, &after, 10) : 0;
  if (!after || after == r->p) {
    fail(r, "model table: expected an integer");
    return -1;
  }
  r->p = after;
  return v;
}

static double read_double(reader *r)
{
  char *after = NULL;
  double v = next_token(r) ? strtod(r->p, &after) : 0.0;
  if (!after || after == r->p) {
    fail(r, "model table: expected a number");
    return 0.0;
  }
  r->p = after;
  return v;
}

/* Moves the reader to the next keyword `word` (a whole token) and returns 0, or -1 if
 * there is none. Used to pass over other hosts' blocks without parsing them: every
 * simulated rank loads the table, and at 1,024 ranks parsing all 32 hosts' records in
 * each rank was a tenth of a small run's wall (docs/validation.md E77). Only the
 * keywords can be these tokens inside a block (kernel names are HPL's, the rest are
 * numbers and the tags `piece` and `comp`), so a match is the keyword. */
static int skip_to(reader *r, const char *word)
{
  size_t len = strlen(word);
  const char *q = r->p;
  while (q < r->end && (q = memmem(q, (size_t)(r->end - q), word, len)) != NULL) {
    int starts = q == r->p || isspace((unsigned char)q[-1]);
    int ends = q + len == r->end || isspace((unsigned char)q[len]);
    if (starts && ends) {
      r->p = q;
      return 0;
    }
    q += 1;
  }
  return -1;
}

/* The whole file, NUL-terminated; NULL if it cannot be read. */
static char *read_table(const char *path, size_t *size)
{
  FILE *f = fopen(path, "rb");
  struct stat st;
  if (!f)
    return NULL;
  char *buf = fstat(fileno(f), &st) == 0 ? malloc((size_t)st.st_size + 1) : NULL;
  size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
  fclose(f);
  if (buf && n != (size_t)st.st_size) {
    free(buf);
    buf = NULL;
  }
  if (buf) {
    buf[n] = '\0';
    *size = n;
  }
  return buf;
}

static void read_poly(reader *r, poly *p)
{
  long n = read_long(r);
  p->nterms = 0;
  p->terms = NULL;
  if (n < 0 || n > MAX_TERMS) {
    fail(r, "model table: %ld polynomial terms (at most %d)", n, MAX_TERMS);
    return;
  }
  if (n == 0)
    return;
  p->terms = malloc((size_t)n * sizeof(term));
  if (!p->terms) {
    fail(r, "out of memory reading the model table");
    return;
  }
  p->nterms = (int)n;
  for (int i = 0; i < n && !r->failed; i++) {
    for (int s = 0; s < NSLOTS; s++) {
      long e = read_long(r);
      if (e < 0 || e > 8)
        fail(r, "model table: exponent %ld out of range", e);
      p->terms[i].exps[s] = (unsigned char)e;
    }
    p->terms[i].coef = read_double(r);
  }
}

static void free_model(kmodel *m)
{
  for (int p = 0; p < m->npieces; p++) {
    piece *pc = &m->pieces[p];
    for (int c = 0; c < pc->ncomp; c++) {
      free(pc->comp[c].mean.terms);
      free(pc->comp[c].sigma.terms);
    }
    free(pc->comp);
    free(pc->cond);
  }
  free(m->pieces);
  m->pieces = NULL;
  m->npieces = 0;
}

static void read_piece(reader *r, const char *name, piece *pc)
{
  char tag[16];
  read_word(r, tag, sizeof tag);
  if (!r->failed && strcmp(tag, "piece") != 0) {
    fail(r, "model table: expected 'piece', found %s", tag);
    return;
  }
  long ncond = read_long(r);
  if (r->failed)
    return;
  if (ncond < 0 || ncond > MAX_CONDITIONS) {
    fail(r, "model table: %s has a piece with %ld conditions (at most %d)", name, ncond, MAX_CONDITIONS);
    return;
  }
  if (ncond > 0 && !(pc->cond = calloc((size_t)ncond, sizeof(condition)))) {
    fail(r, "out of memory reading the model table");
    return;
  }
  pc->ncond = (int)ncond;
  for (int i = 0; i < ncond && !r->failed; i++) {
    for (int s = 0; s < NSLOTS; s++)
      pc->cond[i].coef[s] = read_double(r);
    pc->cond[i].c0 = read_double(r);
    pc->cond[i].kind = (int)read_long(r);
    if (!r->failed && (pc->cond[i].kind < C_GE || pc->cond[i].kind > C_MULTIPLE ||
                       (pc->cond[i].kind == C_MULTIPLE && !(pc->cond[i].c0 >= 2.0))))
      fail(r, "model table: %s has a malformed condition (kind %d)", name, pc->cond[i].kind);
  }
  long ncomp = read_long(r);
  if (r->failed)
    return;
  if (ncomp < 1 || ncomp > MAX_COMPONENTS) {
    fail(r, "model table: %s has %ld components (1 to %d)", name, ncomp, MAX_COMPONENTS);
    return;
  }
  if (!(pc->comp = calloc((size_t)ncomp, sizeof(component)))) {
    fail(r, "out of memory reading the model table");
    return;
  }
  pc->ncomp = (int)ncomp;
  double cumulative = 0.0;
  for (int c = 0; c < ncomp && !r->failed; c++) {
    read_word(r, tag, sizeof tag);
    if (strcmp(tag, "comp") != 0) {
      fail(r, "model table: expected 'comp', found %s", tag);
      break;
    }
    pc->comp[c].family = (int)read_long(r);
    cumulative += read_double(r);
    pc->comp[c].weight = cumulative;
    read_poly(r, &pc->comp[c].mean);
    read_poly(r, &pc->comp[c].sigma);
  }
}

/* Parse one "kernel" record; store it only when `keep`. */
static void read_kernel(reader *r, int keep, kmodel *store, int *has)
{
  char name[64];
  read_word(r, name, sizeof name);
  long npieces = read_long(r);
  if (r->failed)
    return;
  int k = lookup_kernel(name);
  if (k < 0) {
    fail(r, "model table: unknown kernel %s", name);
    return;
  }
  if (npieces < 1 || npieces > MAX_PIECES) {
    fail(r, "model table: %s has %ld pieces (1 to %d)", name, npieces, MAX_PIECES);
    return;
  }
  kmodel m;
  m.npieces = (int)npieces;
  m.pieces = calloc((size_t)npieces, sizeof(piece));
  if (!m.pieces) {
    fail(r, "out of memory reading the model table");
    return;
  }
  for (int p = 0; p < npieces && !r->failed; p++)
    read_piece(r, name, &m.pieces[p]);
  if (!r->failed && m.pieces[npieces - 1].ncond != 0)
    fail(r, "model table: the last piece of %s has conditions (it must take every call left)", name);
  if (keep && !r->failed) {
    free_model(&store[k]);
    store[k] = m;
    has[k] = 1;
  } else {
    free_model(&m);
  }
}

int hplsim_model_load(const char *path, const char *host, int local_rank, char *err, size_t errlen)
{
  size_t size = 0;
  char *text = read_table(path, &size);
  if (!text) {
    snprintf(err, errlen, "cannot open model table %s", path);
    return -1;
  }
  reader r = {text, text + size, err, errlen, 0};
  kmodel fallback[K_NKERNELS] = {{0}};
  int has_fallback[K_NKERNELS] = {0};
  int found_host = 0, found_fallback = 0, cpu_host = 0, cpu_fallback = 0;
  char word[256];
  read_word(&r, word, sizeof word);
  if (!r.failed && strcmp(word, "hplsim-runtime-model") != 0)
    fail(&r, "%s is not an hplsim runtime model table", path);
  long version = read_long(&r);
  if (!r.failed && version != TABLE_VERSION)
    fail(&r, "model table %s has version %ld, this runtime reads %d", path, version, TABLE_VERSION);
  int in_block = 0; /* 1: my host, 2: fallback, 0: another host (or none yet) */
  int my_index = 0;
  while (!r.failed) {
    /* Another host's records: on to the next host, or to the table's end. */
    if (in_block == 0 && skip_to(&r, "host") != 0 && skip_to(&r, "end") != 0) {
      fail(&r, "model table ends unexpectedly");
      break;
    }
    if (read_word(&r, word, sizeof word) < 0)
      break;
    if (strcmp(word, "end") == 0)
      break;
    if (strcmp(word, "host") == 0) {
      read_word(&r, word, sizeof word);
      long ncpus = read_long(&r);
      if (ncpus < 1) {
        fail(&r, "model table: host %s has %ld CPUs", word, ncpus);
        break;
      }
      if (strcmp(word, host) == 0) {
        in_block = 1;
        found_host = 1;
        cpu_host = local_rank % (int)ncpus;
      } else if (strcmp(word, "*") == 0) {
        in_block = 2;
        found_fallback = 1;
        cpu_fallback = local_rank % (int)ncpus;
      } else {
        in_block = 0;
      }
      continue;
    }
    if (strcmp(word, "kernel") == 0) {
      long cpu = read_long(&r);
      int keep = (in_block == 1 && cpu == cpu_host) || (in_block == 2 && cpu == cpu_fallback);
      read_kernel(&r, keep, in_block == 1 ? models : fallback, in_block == 1 ? has_model : has_fallback);
      continue;
    }
    fail(&r, "model table: unexpected word %s", word);
  }
  free(text);
  if (r.failed) {
    for (int k = 0; k < K_NKERNELS; k++)
      free_model(&fallback[k]);
    return -1;
  }
  if (!found_host) {
    if (!found_fallback) {
      snprintf(err, errlen, "host %s is not in the model, which has no default entry", host);
      return -1;
    }
    memcpy(models, fallback, sizeof models);
    memcpy(has_model, has_fallback, sizeof has_model);
    my_index = cpu_fallback;
  } else {
    for (int k = 0; k < K_NKERNELS; k++)
      free_model(&fallback[k]);
    my_index = cpu_host;
  }
  my_cpu = my_index;
  return 0;
}

int hplsim_model_has(enum hplsim_kernel kernel) { return has_model[kernel]; }

const char *hplsim_kernel_name(enum hplsim_kernel kernel) { return hplsim_kernels[kernel].name; }

int hplsim_model_cpu(void) { return my_cpu; }

static double eval(const poly *p, const double x[NSLOTS])
{
  double total = 0.0;
  for (int i = 0; i < p->nterms; i++) {
    double value = p->terms[i].coef;
    for (int s = 0; s < NSLOTS; s++)
      for (int e = 0; e < p->terms[i].exps[s]; e++)
        value *= x[s];
    total += value;
  }
  return total;
}

static int holds(const piece *pc, const double x[NSLOTS])
{
  for (int i = 0; i < pc->ncond; i++) {
    const condition *c = &pc->cond[i];
    double v = 0.0;
    for (int s = 0; s < NSLOTS; s++)
      v += c->coef[s] * x[s];
    if (c->kind == C_MULTIPLE) {
      if (fmod(v, c->c0) != 0.0)
        return 0;
    } else if (c->kind == C_GT ? !(v + c->c0 > 0.0) : !(v + c->c0 >= 0.0))
      return 0;
  }
  return 1;
}

double hplsim_model_draw(enum hplsim_kernel kernel, double x0, double x1, double x2, hplsim_rng *noise)
{
  if (!has_model[kernel])
    return 0.0;
  const kmodel *m = &models[kernel];
  const double x[NSLOTS] = {x0, x1, x2};
  const piece *pc = &m->pieces[m->npieces - 1];
  for (int p = 0; p < m->npieces - 1; p++)
    if (holds(&m->pieces[p], x)) {
      pc = &m->pieces[p];
      break;
    }
  const component *c = &pc->comp[0];
  if (pc->ncomp > 1) {
    double u = hplsim_rng_uniform(noise) * pc->comp[pc->ncomp - 1].weight;
    int i = 0;
    while (i < pc->ncomp - 1 && u >= pc->comp[i].weight)
      i++;
    c = &pc->comp[i];
  }
  double d = eval(&c->mean, x);
  if (c->family != F_NONE) {
    double sigma = eval(&c->sigma, x);
    if (sigma > 0.0) {
      double z = hplsim_rng_normal(noise);
      if (c->family == F_HALFNORMAL)
        z = (fabs(z) - HALFNORMAL_MEAN) / HALFNORMAL_SD;
      d += sigma * z;
    }
  }
  return d > 0.0 ? d : 0.0;
}
