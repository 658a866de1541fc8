/* Lab notebook E20: time every MPI call HPL makes (PMPI, LD_PRELOAD), per rank, so that the
 * time of a traced run outside the kernels splits into MPI and HPL's own code.
 * Writes $E21_DIR/mpi-<rank>.csv: name,start,duration (CLOCK_MONOTONIC seconds).
 *   mpicc -O2 -shared -fPIC e20_pmpi_time.c -o libpmpi_time.so
 *   mpirun -np 2 --bind-to core -x LD_PRELOAD=$PWD/libpmpi_time.so -x E21_DIR=$PWD \
 *          -x HPLSIM_TRACE_DIR=$PWD/trace ~/.cache/hplsim/builds/hpl-real-traced-HASH/xhpl
 * (pass LD_PRELOAD with -x only: preloaded into mpirun itself, the traced binary wrote no trace) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
typedef struct { const char *name; double start, dur; } rec;
static rec *recs; static size_t nrec, cap;
static void add(const char *n, double s, double e){ if(nrec==cap){cap=cap?2*cap:1<<16; recs=realloc(recs,cap*sizeof *recs);} recs[nrec++]=(rec){n,s,e-s}; }
#define WRAP(ret, name, params, args) ret name params { double s=now(); ret r=P##name args; add(#name,s,now()); return r; }
WRAP(int, MPI_Send, (const void*b,int c,MPI_Datatype t,int d,int g,MPI_Comm m), (b,c,t,d,g,m))
WRAP(int, MPI_Ssend, (const void*b,int c,MPI_Datatype t,int d,int g,MPI_Comm m), (b,c,t,d,g,m))
WRAP(int, MPI_Recv, (void*b,int c,MPI_Datatype t,int s_,int g,MPI_Comm m,MPI_Status*st), (b,c,t,s_,g,m,st))
WRAP(int, MPI_Isend, (const void*b,int c,MPI_Datatype t,int d,int g,MPI_Comm m,MPI_Request*q), (b,c,t,d,g,m,q))
WRAP(int, MPI_Irecv, (void*b,int c,MPI_Datatype t,int s_,int g,MPI_Comm m,MPI_Request*q), (b,c,t,s_,g,m,q))
WRAP(int, MPI_Wait, (MPI_Request*q,MPI_Status*st), (q,st))
WRAP(int, MPI_Waitall, (int n,MPI_Request*q,MPI_Status*st), (n,q,st))
WRAP(int, MPI_Iprobe, (int s_,int g,MPI_Comm m,int*f,MPI_Status*st), (s_,g,m,f,st))
WRAP(int, MPI_Probe, (int s_,int g,MPI_Comm m,MPI_Status*st), (s_,g,m,st))
WRAP(int, MPI_Test, (MPI_Request*q,int*f,MPI_Status*st), (q,f,st))
WRAP(int, MPI_Sendrecv, (const void*sb,int sc,MPI_Datatype st_,int d,int sg,void*rb,int rc,MPI_Datatype rt,int s_,int rg,MPI_Comm m,MPI_Status*st), (sb,sc,st_,d,sg,rb,rc,rt,s_,rg,m,st))
WRAP(int, MPI_Allreduce, (const void*sb,void*rb,int c,MPI_Datatype t,MPI_Op o,MPI_Comm m), (sb,rb,c,t,o,m))
WRAP(int, MPI_Reduce, (const void*sb,void*rb,int c,MPI_Datatype t,MPI_Op o,int r_,MPI_Comm m), (sb,rb,c,t,o,r_,m))
WRAP(int, MPI_Bcast, (void*b,int c,MPI_Datatype t,int r_,MPI_Comm m), (b,c,t,r_,m))
WRAP(int, MPI_Barrier, (MPI_Comm m), (m))
WRAP(int, MPI_Type_vector, (int c,int l,int s_,MPI_Datatype o,MPI_Datatype*n), (c,l,s_,o,n))
WRAP(int, MPI_Type_commit, (MPI_Datatype*t), (t))
WRAP(int, MPI_Type_free, (MPI_Datatype*t), (t))
int MPI_Finalize(void){
  int rank; PMPI_Comm_rank(MPI_COMM_WORLD,&rank);
  const char *dir=getenv("E21_DIR"); char path[4096]; snprintf(path,sizeof path,"%s/mpi-%d.csv",dir?dir:".",rank);
  FILE *f=fopen(path,"w"); fprintf(f,"name,start,duration\n");
  for(size_t i=0;i<nrec;i++) fprintf(f,"%s,%.9f,%.9e\n",recs[i].name,recs[i].start,recs[i].dur);
  fclose(f); return PMPI_Finalize();
}
