/* The price of one MPI message on the platform's network model, for the modelled
 * exchanges (exchange.c): the same laws SMPI applies to a real message, read from the
 * simulation's configuration (the platform file's <config> and the command line) and from
 * SimGrid's routing, so that a modelled exchange and a message-level one are priced by
 * one description of the network.
 *
 * What SMPI 3.32 charges a blocking point-to-point message when nothing competes with it:
 * - smpi/os(size), slept by the sender before posting, and smpi/or(size), slept by the
 *   receiver once the data are in, both only for a detached send (size below
 *   smpi/send-is-detached-thresh); a host property of the same name overrides the option;
 * - the transfer of the payload and SMPI's 16-byte envelope (tag, source, communicator):
 *   route latency x smpi/lat-factor(size + 16) + (size + 16) / (rate x
 *   smpi/bw-factor(size + 16)), where the rate is the route's smallest bandwidth bounded by
 *   network/TCP-gamma / (2 x route latency) (CM02's window bound, on the unscaled latency).
 *   The envelope is measured (lab notebook E67): a factor's breakpoint b switches at a
 *   payload of b - 15 bytes, and one-way times grow by 16 bytes over the bandwidth; the
 *   overheads and both thresholds take the payload;
 * - a piecewise law "b0:v;b1:v;..." applies the piece of the largest breakpoint strictly
 *   below the size (SimGrid sorts the pieces; a size at or below the first breakpoint
 *   takes the first piece).
 * Contention with other flows is what this leaves out; the exchanges it prices are a few
 * kB each (docs/predict.md, "Modelled exchanges").
 *
 * Per-route factors: SimGrid 3.32's smpi/lat-factor and smpi/bw-factor are one law for every
 * route. A platform whose root zone has the properties hplsim/lat-factor and
 * hplsim/bw-factor (between two hosts) and hplsim/loopback-lat-factor and
 * hplsim/loopback-bw-factor (within one host) gets both pairs, in the same syntax, through
 * SimGrid's factor callbacks, installed by the first rank before its first message
 * (hplsim_netlaws_install); SimGrid refuses the callbacks beside the smpi/ options. The
 * modelled exchanges read the same laws here.
 *
 * A fat-tree's latencies on a star (lab notebook E90): a root zone property
 * hplsim/fat-tree-latencies, SimGrid's FAT_TREE parameters "levels;down,...;up,...;links,...",
 * makes a star of the same hosts (each host's own link, route latency 2 links) take, on every
 * route, that fat-tree's latency: a route whose lowest common switch is at level l crosses 2l
 * links of the same latency, so its latency factor is multiplied by l. Hosts sit under the
 * switches in the cluster's radical order, as in SimGrid's FAT_TREE. The star's max-min
 * system couples only flows that share a host, which is what makes it cheaper to solve. */
#include <math.h>
#include <simgrid/host.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xbt/config.h>
#include <simgrid/zone.h>
#include <xbt/dynar.h>

#include "fatal.h"
#include "netlaws.h"
#include "simgrid_config.h"

#define MAX_PIECES 32
#define ENVELOPE 16.0 /* bytes SMPI adds to every message's payload on the network */

typedef struct {
  int n;
  double bound[MAX_PIECES];
  double value[MAX_PIECES][2]; /* factor; or intercept and per-byte slope */
} law;

static void parse(const char *what, const char *text, int arity, law *out)
{
  out->n = 0;
  char copy[4096];
  snprintf(copy, sizeof copy, "%s", text);
  char *save = NULL;
  for (char *piece = strtok_r(copy, ";", &save); piece; piece = strtok_r(NULL, ";", &save)) {
    while (*piece == ' ')
      piece++;
    if (!*piece)
      continue;
    if (out->n == MAX_PIECES)
      hplsim_fatal("%s has more than %d pieces", what, MAX_PIECES);
    double v[3] = {0, 0, 0};
    char *end = piece;
    for (int i = 0; i <= arity; i++) {
      v[i] = strtod(end, &end);
      if (i < arity) {
        if (*end != ':')
          hplsim_fatal("cannot read %s: \"%s\"", what, text);
        end++;
      }
    }
    /* SimGrid sorts the pieces by breakpoint: insert in order */
    int k = out->n++;
    while (k > 0 && out->bound[k - 1] > v[0]) {
      out->bound[k] = out->bound[k - 1];
      out->value[k][0] = out->value[k - 1][0];
      out->value[k][1] = out->value[k - 1][1];
      k--;
    }
    out->bound[k] = v[0];
    out->value[k][0] = v[1];
    out->value[k][1] = arity > 1 ? v[2] : 0.0;
  }
}

static double eval(const law *l, double size, double empty)
{
  if (l->n == 0)
    return empty;
  int k = 0;
  for (int i = 1; i < l->n; i++)
    if (size > l->bound[i])
      k = i;
  return l->value[k][0] + l->value[k][1] * size;
}

static void read_law(const char *name, int arity, law *out)
{
  char text[4096];
  if (hplsim_config_text(name, text, sizeof text) != 0)
    hplsim_fatal("cannot read SimGrid's option %s", name);
  parse(name, text, arity, out);
}

/* The per-route laws: [0] between two hosts, [1] within one (the loopback); and the
 * fat-tree whose latencies a star takes (levels 0: none), by its down counts. */
#define MAX_LEVELS 8
typedef struct {
  law lat[2], bw[2];
  int levels;
  long down[MAX_LEVELS];
} route_laws;

#define FAT_TREE_LATENCIES "hplsim/fat-tree-latencies"

static void parse_fat_tree(const char *text, route_laws *out)
{
  char *end;
  long levels = strtol(text, &end, 10);
  if (end == text || *end != ';' || levels < 1 || levels > MAX_LEVELS)
    hplsim_fatal("cannot read %s \"%s\": expected SimGrid's FAT_TREE \"levels;down,...;up,...;links,...\" with "
                 "at most %d levels", FAT_TREE_LATENCIES, text, MAX_LEVELS);
  for (long i = 0; i < levels; i++) {
    const char *start = end + 1;
    out->down[i] = strtol(start, &end, 10);
    if (end == start || out->down[i] < 1 || *end != (i + 1 < levels ? ',' : ';'))
      hplsim_fatal("cannot read %s \"%s\": expected %ld positive down counts", FAT_TREE_LATENCIES, text, levels);
  }
  out->levels = (int)levels;
}

/* The level of the lowest switch above both hosts (1: the same leaf switch), or 1 for the
 * loopback and without a fat-tree. */
static double route_level(const route_laws *l, const_sg_host_t src, const_sg_host_t dst)
{
  if (l->levels == 0 || src == dst)
    return 1.0;
  long a = hplsim_host_position(src), b = hplsim_host_position(dst);
  if (a < 0 || b < 0)
    hplsim_fatal("%s: a host of the route is not among the platform's hosts", FAT_TREE_LATENCIES);
  long group = 1;
  for (int level = 1; level <= l->levels; level++) {
    group *= l->down[level - 1];
    if (a / group == b / group)
      return level;
  }
  hplsim_fatal("%s: hosts %ld and %ld are not under one switch of the fat-tree (%ld hosts)", FAT_TREE_LATENCIES, a,
               b, group);
  return 0;
}

static const char *const ROUTE_LAW_NAMES[2][2] = {{"hplsim/lat-factor", "hplsim/bw-factor"},
                                                  {"hplsim/loopback-lat-factor", "hplsim/loopback-bw-factor"}};

/* 1 and `out` filled if the platform's root zone declares per-route factors, 0 if it
 * declares none of the four; a part of them is fatal. */
static int read_route_laws(route_laws *out)
{
  sg_netzone_t root = sg_zone_get_root();
  int found = 0;
  for (int route = 0; route < 2; route++)
    for (int which = 0; which < 2; which++)
      found += sg_zone_get_property_value(root, ROUTE_LAW_NAMES[route][which]) != NULL;
  const char *tree = sg_zone_get_property_value(root, FAT_TREE_LATENCIES);
  if (found == 0 && tree)
    hplsim_fatal("the platform's zone sets %s without the 4 per-route factors (hplsim/lat-factor, hplsim/bw-factor, "
                 "hplsim/loopback-lat-factor, hplsim/loopback-bw-factor) through which it acts", FAT_TREE_LATENCIES);
  if (found == 0)
    return 0;
  if (found != 4)
    hplsim_fatal("the platform's zone sets %d of the 4 per-route factors (hplsim/lat-factor, hplsim/bw-factor, "
                 "hplsim/loopback-lat-factor, hplsim/loopback-bw-factor): give all four or none", found);
  for (int route = 0; route < 2; route++)
    for (int which = 0; which < 2; which++) {
      const char *name = ROUTE_LAW_NAMES[route][which];
      parse(name, sg_zone_get_property_value(root, name), 1, which == 0 ? &out->lat[route] : &out->bw[route]);
    }
  out->levels = 0;
  if (tree)
    parse_fat_tree(tree, out);
  return 1;
}

static double law_factor(const route_laws *l, int latency, int loopback, double size)
{
  return eval(latency ? &l->lat[loopback != 0] : &l->bw[loopback != 0], size, 1.0);
}

/* SimGrid's callbacks evaluate this: it reads only `laws`, which outlives every rank. */
static double route_factor(const void *laws, int latency, const_sg_host_t src, const_sg_host_t dst, double size)
{
  const route_laws *l = laws;
  double f = law_factor(l, latency, src == dst, size);
  return latency ? f * route_level(l, src, dst) : f;
}

#define INSTALLED "hplsim/factor-callbacks-installed"

void hplsim_netlaws_install(void)
{
  sg_netzone_t root = sg_zone_get_root();
  if (sg_zone_get_property_value(root, INSTALLED))
    return;
  route_laws *laws = malloc(sizeof *laws); /* kept for the whole simulation */
  if (!laws)
    hplsim_fatal("out of memory for the per-route factors");
  if (!read_route_laws(laws)) {
    free(laws);
    sg_zone_set_property_value(root, INSTALLED, "no");
    return;
  }
  char err[512];
  if (hplsim_set_factor_callbacks(laws, route_factor, err, sizeof err) != 0)
    hplsim_fatal("cannot use the platform's per-route factors: %s", err);
  sg_zone_set_property_value(root, INSTALLED, "yes");
}

static struct {
  int ready;
  law os, or_;
  int per_route;
  route_laws routes; /* without per-route factors, smpi/lat-factor and smpi/bw-factor on both */
  double gamma;
  int detached, async;
  int host_laws; /* some host has its own smpi/os or smpi/or */
} net;

/* The laws at the few sizes an exchange uses, evaluated once (without host overrides). */
#define CACHED 8
static struct {
  double bytes, os, or_, lat, bw;
  int loopback;
} cache[CACHED];
static int ncached;

static void load(void)
{
  if (net.ready)
    return;
  read_law("smpi/os", 2, &net.os);
  read_law("smpi/or", 2, &net.or_);
  net.per_route = read_route_laws(&net.routes);
  if (!net.per_route) {
    read_law("smpi/lat-factor", 1, &net.routes.lat[0]);
    read_law("smpi/bw-factor", 1, &net.routes.bw[0]);
    net.routes.lat[1] = net.routes.lat[0];
    net.routes.bw[1] = net.routes.bw[0];
    net.routes.levels = 0;
  }
  net.gamma = sg_cfg_get_double("network/TCP-gamma");
  net.detached = sg_cfg_get_int("smpi/send-is-detached-thresh");
  net.async = sg_cfg_get_int("smpi/async-small-thresh");
  size_t n = sg_host_count();
  sg_host_t *hosts = sg_host_list();
  for (size_t i = 0; i < n && !net.host_laws; i++)
    net.host_laws = sg_host_get_property_value(hosts[i], "smpi/os") || sg_host_get_property_value(hosts[i], "smpi/or");
  free(hosts);
  net.ready = 1;
}

/* A host's own smpi/os or smpi/or (a host property) overrides the option. */
static double overhead(sg_host_t host, const char *name, const law *global, double size)
{
  const char *own = sg_host_get_property_value(host, name);
  if (!own)
    return eval(global, size, 0.0);
  law l;
  parse(name, own, 2, &l);
  return eval(&l, size, 0.0);
}

void hplsim_route(sg_host_t src, sg_host_t dst, double *latency, double *bandwidth)
{
  *latency = sg_host_get_route_latency(src, dst);
  *bandwidth = sg_host_get_route_bandwidth(src, dst);
}

void hplsim_message_price(sg_host_t src, sg_host_t dst, double bytes, double route_latency,
                          double route_bandwidth, hplsim_message_cost *cost)
{
  load();
  int loopback = net.per_route && src == dst; /* one cache entry a size when both routes share laws */
  int k = 0;
  while (k < ncached && (cache[k].bytes != bytes || cache[k].loopback != loopback))
    k++;
  if (k == ncached) {
    k = ncached < CACHED ? ncached++ : CACHED - 1;
    cache[k].bytes = bytes;
    cache[k].loopback = loopback;
    cache[k].os = eval(&net.os, bytes, 0.0);
    cache[k].or_ = eval(&net.or_, bytes, 0.0);
    cache[k].lat = law_factor(&net.routes, 1, loopback, bytes + ENVELOPE);
    cache[k].bw = law_factor(&net.routes, 0, loopback, bytes + ENVELOPE);
  }
  cost->detached = bytes < net.detached;
  cost->eager = bytes < net.async;
  cost->send_overhead = !cost->detached ? 0.0 : net.host_laws ? overhead(src, "smpi/os", &net.os, bytes) : cache[k].os;
  cost->recv_overhead = !cost->detached ? 0.0 : net.host_laws ? overhead(dst, "smpi/or", &net.or_, bytes) : cache[k].or_;
  double rate = route_bandwidth;
  if (net.gamma > 0 && route_latency > 0 && net.gamma / (2.0 * route_latency) < rate)
    rate = net.gamma / (2.0 * route_latency);
  double lat = cache[k].lat * route_level(&net.routes, src, dst);
  cost->transfer = route_latency * lat + (bytes + ENVELOPE) / (rate * cache[k].bw);
}
