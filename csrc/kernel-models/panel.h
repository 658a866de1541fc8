/* Panel buffers and the row-swap scratch buffer, folded and reused (panel.c). */
#ifndef HPLSIM_PANEL_H
#define HPLSIM_PANEL_H

#include <stddef.h>

/* Panel buffers: `size` bytes, returned aligned to `align`, folded except the `private_len`
 * bytes at `private_offset` (HPL's pivot indices); reused across iterations. `pieces`: the
 * number of pieces the long broadcasts cut the panel into (the process columns). */
void *hplsim_panel_work(size_t size, size_t align, size_t private_offset, size_t private_len, int pieces);
void hplsim_panel_release(void *work);

/* A folded scratch buffer of at least `size` bytes, the rank's only one (HPL's row-swap
 * work space W: used within one call, one call at a time). Never freed by the caller. */
void *hplsim_scratch(size_t size);

#endif
