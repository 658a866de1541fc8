/* E21: is the wide update's slowdown the TLB? The same dgemm C -= A·B with every operand in
 * 4 kB pages or in 2 MB pages (madvise MADV_HUGEPAGE; THP is in madvise mode here), alternating. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
static double *buf(size_t n, int huge){
  size_t bytes=(n*8+(2<<20)-1)/(2<<20)*(2<<20);
  void *p=mmap(0,bytes,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);
  if(p==MAP_FAILED){perror("mmap");exit(1);}
  madvise(p,bytes,huge?MADV_HUGEPAGE:MADV_NOHUGEPAGE);
  double *d=p; for(size_t i=0;i<n;i++)d[i]=1e-3*(i%97); return d;
}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int m=atoi(argv[1]), n=atoi(argv[2]), k=atoi(argv[3]), ld=atoi(argv[4]), reps=atoi(argv[5]);
  double *A[2],*B[2],*C[2], t[2][400];
  for(int h=0;h<2;h++){A[h]=buf((size_t)ld*k,h);B[h]=buf((size_t)ld*n,h);C[h]=buf((size_t)ld*n,h);}
  for(int r=0;r<reps;r++) for(int h=0;h<2;h++){
    double s=now(); cblas_dgemm(CblasColMajor,CblasNoTrans,CblasNoTrans,m,n,k,-1.0,A[h],ld,B[h],ld,1.0,C[h],ld);
    t[h][r]=now()-s;
  }
  double f=2.0*m*n*k/1e9;
  for(int h=0;h<2;h++) qsort(t[h],reps,sizeof(double),cmp);
  printf("m=%d n=%d k=%d ld=%d: 4k pages %.2f Gflops, 2M pages %.2f Gflops (medians of %d)\n",m,n,k,ld,f/t[0][reps/2],f/t[1][reps/2],reps);
  return 0;
}
