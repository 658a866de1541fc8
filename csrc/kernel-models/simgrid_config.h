/* SimGrid's configuration as text (simgrid_config.cpp). */
#ifndef HPLSIM_SIMGRID_CONFIG_H
#define HPLSIM_SIMGRID_CONFIG_H

#ifdef __cplusplus
extern "C" {
#endif

/* Copies the value of SimGrid's option `name` into out (size bytes); -1 if it is unknown or
 * longer than that. */
int hplsim_config_text(const char *name, char *out, unsigned long size);

#ifdef __cplusplus
}
#endif

#endif
