/* The runtime's one way to fail. */
#ifndef HPLSIM_FATAL_H
#define HPLSIM_FATAL_H

/* Fatal error with a one-line message on stderr (the Python side reports it); ends the
 * whole simulation, all ranks at once. */
void hplsim_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));

#endif
