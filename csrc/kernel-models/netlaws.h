/* What one MPI message costs on the platform's network model when nothing competes with
 * it, read from the simulation's own configuration and routes (netlaws.c). */
#ifndef HPLSIM_NETLAWS_H
#define HPLSIM_NETLAWS_H

#include <simgrid/host.h>

/* One message of `bytes` from `src` to `dst`, priced as SMPI 3.32 prices it:
 * - send_overhead: the sender's smpi/os sleep before posting (0 unless detached);
 * - recv_overhead: the receiver's smpi/or sleep after the data are in (0 unless detached);
 * - transfer: the network action alone, latency x smpi/lat-factor plus bytes over the route's
 *   bandwidth (bounded by TCP-gamma / 2 latency) x smpi/bw-factor;
 * - detached: the blocking send returns after its overhead (bytes < send-is-detached-thresh);
 * - eager: the transfer starts when posted, before the receive (bytes < async-small-thresh). */
typedef struct {
  double send_overhead, recv_overhead, transfer;
  int detached, eager;
} hplsim_message_cost;

void hplsim_message_price(sg_host_t src, sg_host_t dst, double bytes, double route_latency,
                          double route_bandwidth, hplsim_message_cost *cost);

/* The route's summed latency and smallest bandwidth (SimGrid's own routing). */
void hplsim_route(sg_host_t src, sg_host_t dst, double *latency, double *bandwidth);

/* Installs the platform's per-route factors (root zone properties hplsim/lat-factor,
 * hplsim/bw-factor, hplsim/loopback-lat-factor, hplsim/loopback-bw-factor) as SimGrid's
 * factor callbacks, once for the whole simulation; nothing if the platform has none. Each
 * rank calls it before its first message. */
void hplsim_netlaws_install(void);

#endif
