/* SimGrid's configuration as text (simgrid_config.cpp). */
#ifndef HPLSIM_SIMGRID_CONFIG_H
#define HPLSIM_SIMGRID_CONFIG_H

#include <simgrid/forward.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Copies the value of SimGrid's option `name` into out (size bytes); -1 if it is unknown or
 * longer than that. */
int hplsim_config_text(const char *name, char *out, unsigned long size);

/* 1 if the simulated ranks run one at a time (SimGrid's default, one thread), so that memory
 * they share needs no lock (mailbox.c, pipid.c); 0 with parallel contexts (contexts/nthreads
 * above 1). */
int hplsim_ranks_take_turns(void);

/* Makes SimGrid's network model take its latency and bandwidth factors from
 * factor(laws, latency?, source host, destination host, bytes) for every transfer; -1 and a
 * message in err if SimGrid refuses (it does beside smpi/lat-factor or smpi/bw-factor).
 * `laws` must outlive the simulation. */
int hplsim_set_factor_callbacks(const void *laws,
                                double (*factor)(const void *laws, int latency, const_sg_host_t src,
                                                 const_sg_host_t dst, double bytes),
                                char *err, unsigned long size);

/* A host's place among the platform's hosts in the order SimGrid created them (a cluster's
 * radical order): 0, 1, ...; -1 for an unknown host. */
long hplsim_host_position(const_sg_host_t host);

#ifdef __cplusplus
}
#endif

#endif
