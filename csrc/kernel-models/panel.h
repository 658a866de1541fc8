/* Panel buffers and the row-swap scratch buffer, folded and reused (panel.c). */
#ifndef HPLSIM_PANEL_H
#define HPLSIM_PANEL_H

#include <stddef.h>

/* Panel buffers: `size` bytes, returned aligned to `align`, folded except the `private_len`
 * bytes at `private_offset` (HPL's pivot indices); reused across iterations. */
void *hplsim_panel_work(size_t size, size_t align, size_t private_offset, size_t private_len);
void hplsim_panel_release(void *work);

/* The pivots (DPIV and DINFO, `count` = JB + 1 doubles) of the long broadcasts' panel with
 * broadcast tag `tag` (PANEL->msgid; block size `nb`): its roots publish them when the
 * broadcast starts (HPL_binit), every rank of the row fetches them when it ends
 * (HPL_bwait). */
void hplsim_pivots_publish(int tag, int nb, const double *dpiv, int count);
void hplsim_pivots_fetch(int tag, int nb, double *dpiv, int count);

/* A folded scratch buffer of at least `size` bytes, the rank's only one (HPL's row-swap
 * work space W: used within one call, one call at a time). Never freed by the caller. */
void *hplsim_scratch(size_t size);

#endif
