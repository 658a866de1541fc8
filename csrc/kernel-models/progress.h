/* Progress for the parent process (progress.c). */
#ifndef HPLSIM_PROGRESS_H
#define HPLSIM_PROGRESS_H

/* Set up from HPLSIM_PROGRESS_FD on rank 0. */
void hplsim_progress_init(int rank);
/* Called by HPL_pdpanel_init with the panel's first global column. */
void hplsim_progress(int ja);

#endif
